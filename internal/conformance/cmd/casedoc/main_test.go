package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// repoRoot is the repository's root, seen from this package's folder.
const repoRoot = "../../../.."

// TestAppendixUpToDate fails when docs/compatibility-cases.md is not what
// the generator writes from the corpus and docs/compatibility.md now.
func TestAppendixUpToDate(t *testing.T) {
	want, err := render(filepath.Join(repoRoot, corpusPath), filepath.Join(repoRoot, compatPath))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(repoRoot, appendixPath))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		line := 0
		for line < len(gl) && line < len(wl) && gl[line] == wl[line] {
			line++
		}
		g, w := "(end of file)", "(end of file)"
		if line < len(gl) {
			g = gl[line]
		}
		if line < len(wl) {
			w = wl[line]
		}
		t.Errorf("%s is out of date: run `go run ./internal/conformance/cmd/casedoc` from the repository root\nline %d is\n  %s\nwant\n  %s",
			appendixPath, line+1, g, w)
	}
}

// writeCase writes a minimal case file under dir/folder/suite.
func writeCase(t *testing.T, dir, folder, suite, name, sql, quirk string) {
	t.Helper()
	p := filepath.Join(dir, folder, suite, name+".json")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	body := `{"suite": "` + suite + `", "name": "` + name + `", "rule": {"sql": "` + sql + `"}, "quirk": "` + quirk + `", "notes": "note of ` + name + `"}`
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestRender(t *testing.T) {
	dir := t.TempDir()
	corpus := filepath.Join(dir, "corpus")
	writeCase(t, corpus, "cases", "gen_a", "first", "SELECT a | b AS x FROM s", "eKuiper wraps")
	writeCase(t, corpus, "cases", "gen_a", "second", "SELECT `a` FROM s", "")
	writeCase(t, corpus, "differential", "diff_b", "kept", "SELECT 1 FROM s", "eKuiper keeps this")
	writeCase(t, corpus, "differential", "diff_b", "plain", "SELECT 2 FROM s", "")
	doc := "# Notes\n\nIntro names `gen_a/first` before any section.\n\n" +
		"## Numbers\n\n- wraps: `gen_a/second` and `gen_a/first`.\n\n" +
		"```sh\n## not a heading\n```\n\n" +
		"## Numbers\n\nAgain `gen_a/first`; and `diff_b/plain`.\n"
	compat := filepath.Join(dir, "notes.md")
	if err := os.WriteFile(compat, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := render(corpus, compat)
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	for _, want := range []string{
		"| `cases` | taken from eKuiper's rule tests (suites `Test…`) and authored for rekuiper (`gen_…`) | 2 | 1 | 0 |",
		"| `differential` | written for the differences differential testing found (`diff_…`) | 2 | 1 | 0 |",
		"| all | | 4 | 2 | 0 |",
		// Listed under the first section that names them, in its order;
		// a repeated heading's anchor is numbered.
		"### [Numbers](notes.md#numbers)\n\n| case | rule | recorded |\n|---|---|---|\n" +
			"| `gen_a/second` | `` SELECT `a` FROM s `` | note of second |\n" +
			"| `gen_a/first` | `SELECT a \\| b AS x FROM s` | eKuiper wraps |\n\n",
		"### [Numbers](notes.md#numbers-1)\n\n| case | rule | recorded |\n|---|---|---|\n" +
			"| `diff_b/plain` | `SELECT 2 FROM s` | note of plain |\n\n",
		"## eKuiper quirks rekuiper keeps",
		"| `diff_b/kept` | `SELECT 1 FROM s` | eKuiper keeps this |",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the appendix lacks\n%s\nappendix:\n%s", want, s)
		}
	}
	if strings.Contains(s, "not a heading") {
		t.Errorf("a line of a fenced block was taken for a heading:\n%s", s)
	}
	if strings.Count(s, "`gen_a/first`") != 1 {
		t.Errorf("gen_a/first is listed %d times, want once:\n%s", strings.Count(s, "`gen_a/first`"), s)
	}
}

func TestAnchor(t *testing.T) {
	seen := map[string]int{}
	for _, tc := range []struct{ title, want string }{
		{"Rows that stopped or hung eKuiper's rule", "rows-that-stopped-or-hung-ekuipers-rule"},
		{"`LIMIT`, OFFSET & more_things", "limit-offset--more_things"},
		{"Numbers", "numbers"},
		{"Numbers", "numbers-1"},
		{"Numbers", "numbers-2"},
	} {
		if got := anchor(tc.title, seen); got != tc.want {
			t.Errorf("anchor(%q) = %q, want %q", tc.title, got, tc.want)
		}
	}
}
