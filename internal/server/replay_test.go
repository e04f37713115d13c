package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

// replayAnswer is the shape of a POST /rules/replay answer.
type replayAnswer struct {
	Passed *bool
	Runs   []struct {
		Options   map[string]any
		Passed    *bool
		Mismatch  string
		Emissions []struct {
			Index            int
			Expected, Actual *string
			Match            *bool
			Reason           string
		}
	}
}

func (s *testServer) replay(body string) replayAnswer {
	s.t.Helper()
	code, b := s.do("POST", "/rules/replay", body)
	if code != 200 {
		s.t.Fatalf("POST /rules/replay: %d %s", code, b)
	}
	var a replayAnswer
	if err := json.Unmarshal([]byte(b), &a); err != nil {
		s.t.Fatalf("decode %s: %v", b, err)
	}
	return a
}

// exampleCase is the rule test file of docs/kuiper-test.md.
func exampleCase(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile("../../examples/rule-tests/high_temperature.json")
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

func marshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestReplayRoute(t *testing.T) {
	s := newServer(t, t.TempDir())
	raw, err := os.ReadFile("../../examples/rule-tests/high_temperature.json")
	if err != nil {
		t.Fatal(err)
	}

	t.Run("the example passes in every variant", func(t *testing.T) {
		a := s.replay(string(raw))
		if a.Passed == nil || !*a.Passed || len(a.Runs) != 2 {
			t.Fatalf("answer %+v, want 2 passing runs", a)
		}
		for _, run := range a.Runs {
			if len(run.Emissions) != 2 {
				t.Fatalf("run %v: %d emissions, want 2", run.Options, len(run.Emissions))
			}
			for _, e := range run.Emissions {
				if e.Match == nil || !*e.Match || *e.Expected != *e.Actual {
					t.Errorf("emission %d: %+v, want a match with equal texts", e.Index, e)
				}
			}
		}
		// The float keeps its fraction: an integer 31 would not match.
		if got := *a.Runs[0].Emissions[0].Actual; !strings.Contains(got, `"peak": 31.0`) {
			t.Errorf("actual %s, want peak as the float 31.0", got)
		}
	})

	t.Run("a wrong expectation is marked at its emission", func(t *testing.T) {
		// The float literal must stay a float, so edit the text.
		body := strings.Replace(string(raw), `"peak": 35.5`, `"peak": 99.5`, 1)
		if body == string(raw) {
			t.Fatal("the example changed: no peak 35.5 to edit")
		}
		a := s.replay(body)
		if a.Passed == nil || *a.Passed {
			t.Fatalf("passed = %v, want false", a.Passed)
		}
		run := a.Runs[0]
		if run.Passed == nil || *run.Passed || run.Mismatch != "emission 1: row 0 differs" {
			t.Errorf("run passed %v mismatch %q", run.Passed, run.Mismatch)
		}
		first, second := run.Emissions[0], run.Emissions[1]
		if !*first.Match || *second.Match || second.Reason != "row 0 differs" {
			t.Errorf("emissions %+v / %+v: want the first matching, the second differing", first, second)
		}
		if !strings.Contains(*second.Expected, "99.5") || !strings.Contains(*second.Actual, "35.5") {
			t.Errorf("second emission: expected %s, actual %s", *second.Expected, *second.Actual)
		}
	})

	t.Run("without expectation the actual output alone", func(t *testing.T) {
		c := exampleCase(t)
		delete(c, "expected")
		delete(c, "option_variants")
		a := s.replay(marshal(t, c))
		if a.Passed != nil || len(a.Runs) != 1 || a.Runs[0].Passed != nil {
			t.Fatalf("answer %+v: want one run and no verdict", a)
		}
		for _, e := range a.Runs[0].Emissions {
			if e.Match != nil || e.Expected != nil || e.Actual == nil {
				t.Errorf("emission %+v: want the actual text only", e)
			}
		}
		if len(a.Runs[0].Emissions) != 2 {
			t.Errorf("%d emissions, want 2", len(a.Runs[0].Emissions))
		}
	})

	t.Run("an emission missing and one too many", func(t *testing.T) {
		c := exampleCase(t)
		exp := c["expected"].([]any)
		c["expected"] = append(exp, []any{map[string]any{"hot": 9}})
		a := s.replay(marshal(t, c))
		last := a.Runs[0].Emissions[2]
		if *a.Passed || last.Actual != nil || *last.Match || last.Reason != "not emitted" {
			t.Errorf("third emission %+v, want one not emitted", last)
		}
		c["expected"] = exp[:1]
		a = s.replay(marshal(t, c))
		last = a.Runs[0].Emissions[1]
		if *a.Passed || last.Expected != nil || *last.Match || last.Reason != "not expected" {
			t.Errorf("second emission %+v, want one not expected", last)
		}
	})

	storm := func(span int64) string {
		return fmt.Sprintf(`{"streams":["CREATE STREAM s (v BIGINT) WITH (DATASOURCE=\"s\");"],
 "inputs":{"s":[{"data":{"v":1}},{"data":{"v":2}}]},"start_time":0,
 "timeline":[{"at":0,"stream":"s","index":0},{"at":%d,"stream":"s","index":1}],
 "rule":{"sql":"SELECT count(*) AS n FROM s GROUP BY TUMBLINGWINDOW(ms, 1)"}}`, span)
	}
	many := `{"rule":{"sql":"SELECT v FROM s"},"inputs":{"s":[` + strings.Repeat(`{"data":{}},`, 10000) + `{"data":{}}]}}`
	s.run([]step{
		{"a year of millisecond windows", "POST", "/rules/replay", storm(365 * 86400 * 1000), 400, "emitted more than 10000 times"},
		{"body over the bound", "POST", "/rules/replay", `{"notes":"` + strings.Repeat("x", 1<<20) + `"}`, 400, "case larger than 1048576 bytes"},
		{"too many records", "POST", "/rules/replay", many, 400, "10001 input records"},
		{"time going back", "POST", "/rules/replay", strings.Replace(storm(5), `"at":0`, `"at":10`, 1), 400, "timeline[1]: at 5 is before 10"},
		{"a step without its record", "POST", "/rules/replay", strings.Replace(storm(5), `"index":1`, `"index":7`, 1), 400, "timeline[1]: inputs.s has no record 7"},
		{"unknown field", "POST", "/rules/replay", `{"rule":{"sql":"SELECT 1"},"inptus":{}}`, 400, "inptus"},
		{"no sql", "POST", "/rules/replay", `{"streams":[]}`, 400, "rule.sql is empty"},
		{"bad stream statement", "POST", "/rules/replay", `{"rule":{"sql":"SELECT v FROM s"},"streams":["CREATE STREAM s (v BIGINT) WITH (DATASOURCE=\"s\");","CREATE STREAM t (v NOTATYPE)"]}`, 422, "streams[1]"},
		{"bad sql at its position", "POST", "/rules/replay", strings.Replace(storm(5), "count(*) AS n", "nope AS n", 1), 422, "1:8: "},
		{"bytes where a record goes", "POST", "/rules/replay", strings.Replace(storm(5), `{"v":1}`, `{"$bytes":"AAAA"}`, 1), 400, "inputs.s[0].data is not an object"},
	})
}

// FuzzReplay sends fuzzed cases to POST /rules/replay: none may panic,
// answer 500 or outlive the route's own time bound.
func FuzzReplay(f *testing.F) {
	raw, err := os.ReadFile("../../examples/rule-tests/high_temperature.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(raw)
	f.Add([]byte(`{"streams":["CREATE STREAM s (v BIGINT, b BYTEA) WITH (DATASOURCE=\"s\");","CREATE TABLE t (v BIGINT) WITH (DATASOURCE=\"t\", TYPE=\"memory\", KIND=\"lookup\", KEY=\"v\");"],
 "inputs":{"s":[{"data":{"v":1,"b":{"$bytes":"AAE="}}},{"data":{"v":2.5}}]},"tables":{"t":[{"v":1}]},"start_time":0,
 "timeline":[{"at":0,"stream":"s","index":0},{"at":1500,"stream":"s","index":1}],
 "rule":{"sql":"SELECT s.v, count(*) AS n FROM s GROUP BY SLIDINGWINDOW(ss, 1)","options":{"isEventTime":false,"sendError":true}},
 "option_variants":[{},{"qos":1,"checkpointInterval":"1s"}],"expected":[[{"v":1,"n":1}],[{"error":"x"}]]}`))
	h := newFuzzServer(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest("POST", "http://kuiperd/rules/replay", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code >= 500 {
			t.Fatalf("%q: %d %s", body, w.Code, w.Body.String())
		}
	})
}
