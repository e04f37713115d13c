package parser

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"testing"
)

// corpusCase is the part of a conformance case the parser reads.
type corpusCase struct {
	Streams []string `json:"streams"`
	Rule    struct {
		SQL string `json:"sql"`
	} `json:"rule"`
	Skip any `json:"skip"`
}

// corpusDir locates the conformance cases: $REKUIPER_CONFORMANCE or the
// repository's corpus in internal/conformance/testdata/cases.
func corpusDir() string {
	if d := os.Getenv("REKUIPER_CONFORMANCE"); d != "" {
		return d
	}
	return filepath.Join("..", "..", "conformance", "testdata", "cases")
}

// corpusSQL returns every SQL text of the corpus keyed by "file#n" (n = 0 for
// the rule, n > 0 for stream definitions).
func corpusSQL(tb testing.TB) map[string]string {
	tb.Helper()
	dir := corpusDir()
	if _, err := os.Stat(dir); err != nil {
		tb.Fatalf("conformance corpus: %v", err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*", "*.json"))
	if err != nil {
		tb.Fatalf("list corpus: %v", err)
	}
	out := make(map[string]string)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			tb.Fatalf("read case: %v", err)
		}
		var c corpusCase
		if err := json.Unmarshal(data, &c); err != nil {
			tb.Fatalf("decode case %s: %v", f, err)
		}
		rel, _ := filepath.Rel(dir, f)
		out[rel+"#0"] = c.Rule.SQL
		for i, s := range c.Streams {
			out[rel+"#"+strconv.Itoa(i+1)] = s
		}
	}
	return out
}

func TestCorpusRoundTrip(t *testing.T) {
	all := corpusSQL(t)
	if len(all) == 0 {
		t.Fatalf("no cases in the conformance corpus at %s", corpusDir())
	}
	keys := make([]string, 0, len(all))
	for k := range all {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		src := all[k]
		t.Run(k, func(t *testing.T) {
			stmt, err := ParseStatement(src)
			if err != nil {
				t.Fatalf("parse %q: %v", src, err)
			}
			if p := invalidPos(reflect.ValueOf(stmt), "stmt"); p != "" {
				t.Errorf("position not set at %s in %q", p, src)
			}
			checkRoundTrip(t, src, stmt)
		})
	}
}
