package differential

import (
	"bytes"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rekuiper/rekuiper/internal/conformance"
)

func TestGeneratorIsDeterministic(t *testing.T) {
	a, b, other := NewGenerator(5), NewGenerator(5), NewGenerator(6)
	differs := 0
	for i := range 300 {
		ca, cb, co := a.Case(), b.Case(), other.Case()
		ea, err := EncodeCase(ca)
		if err != nil {
			t.Fatal(err)
		}
		eb, _ := EncodeCase(cb)
		if !bytes.Equal(ea, eb) {
			t.Fatalf("case %d differs between two generators of one seed:\n%s\n%s", i, ea, eb)
		}
		if ca.Rule.SQL != co.Rule.SQL {
			differs++
		}
	}
	if differs < 250 {
		t.Fatalf("seeds 5 and 6 gave the same SQL in %d of 300 cases", 300-differs)
	}
}

// TestGeneratedCasesCoverTheDialect checks that a run covers every
// category, both clocks, typed and strict streams, every window kind and
// every scalar function the registry has.
func TestGeneratedCasesCoverTheDialect(t *testing.T) {
	g := NewGenerator(1)
	seen := map[string]bool{}
	var sqls strings.Builder
	for range 3000 {
		c := g.Case()
		seen[c.Suite] = true
		seen["clock "+c.Clock] = true
		for _, s := range c.Streams {
			if strings.Contains(s, "BIGINT") {
				seen["typed"] = true
			}
			if strings.Contains(s, "STRICT_VALIDATION") {
				seen["strict"] = true
			}
			if strings.HasPrefix(s, "CREATE TABLE") {
				seen["table"] = true
			}
		}
		sqls.WriteString(c.Rule.SQL + "\n")
	}
	all := sqls.String()
	for _, want := range []string{"rand_func", "rand_expr", "rand_analytic", "rand_window", "rand_join", "clock processing", "clock event", "typed", "strict", "table"} {
		if !seen[want] {
			t.Errorf("3000 cases have no %s", want)
		}
	}
	for _, want := range []string{"TUMBLINGWINDOW", "HOPPINGWINDOW", "SLIDINGWINDOW", "SESSIONWINDOW", "COUNTWINDOW", "PARTITION BY", "OVER (WHEN", "LEFT JOIN", "FULL JOIN", "CROSS JOIN", "HAVING", "ORDER BY"} {
		if !strings.Contains(all, want) {
			t.Errorf("3000 cases have no %s", want)
		}
	}
	for _, d := range g.scalars {
		if !strings.Contains(all, d.Name+"(") {
			t.Errorf("3000 cases never call %s", d.Name)
		}
	}
}

func TestEncodeCaseRoundTrip(t *testing.T) {
	g := NewGenerator(9)
	dir := t.TempDir()
	var cases []*conformance.Case
	for range 50 {
		cases = append(cases, g.Case())
	}
	if err := WriteCases(dir, cases); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		back, err := conformance.Load(filepath.Join(dir, c.Suite+"."+c.Name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back.Inputs, c.Inputs) || back.Rule.SQL != c.Rule.SQL || !reflect.DeepEqual(back.Timeline, c.Timeline) ||
			!reflect.DeepEqual(back.Rule.Options, c.Rule.Options) || back.EndTime != c.EndTime {
			t.Fatalf("%s changed through a file:\n%v\n%v", c.ID(), c.Inputs, back.Inputs)
		}
	}
}

func TestShrinkCandidates(t *testing.T) {
	if got := selectFields(`SELECT a, f(b, "x,y") AS c, arr[1:2], g((1, 2)) FROM s WHERE x, y`); !reflect.DeepEqual(got,
		[]string{"a", `f(b, "x,y") AS c`, "arr[1:2]", "g((1, 2))"}) {
		t.Fatalf("select fields: %q", got)
	}
	c := &conformance.Case{Rule: conformance.RuleSpec{SQL: "SELECT a, b FROM s"},
		Inputs:   map[string][]conformance.Event{"s": {{TS: 1}, {TS: 2}}, "t": {{TS: 3}}},
		Timeline: []conformance.Step{{At: 1, Stream: "s", Index: 0}, {At: 3, Stream: "t", Index: 0}, {At: 5, Stream: "s", Index: 1}}}
	cands := candidates(c)
	if len(cands) != 2+3 {
		t.Fatalf("%d candidates, want 5", len(cands))
	}
	if cands[0].Rule.SQL != "SELECT b FROM s" || cands[1].Rule.SQL != "SELECT a FROM s" {
		t.Fatalf("field candidates: %q, %q", cands[0].Rule.SQL, cands[1].Rule.SQL)
	}
	d := cands[2] // without the first record of s
	if len(d.Inputs["s"]) != 1 || d.Inputs["s"][0].TS != 2 || d.Timeline[1] != (conformance.Step{At: 5, Stream: "s", Index: 0}) || d.EndTime != 5 {
		t.Fatalf("without step 0: %+v %+v", d.Inputs, d.Timeline)
	}
	if len(c.Inputs["s"]) != 2 || c.Timeline[2].Index != 1 {
		t.Fatal("candidates changed the original case")
	}
	if last := cands[4]; last.EndTime != 3 || len(last.Timeline) != 2 {
		t.Fatalf("without the last step: end %d, %d steps", last.EndTime, len(last.Timeline))
	}
}
