package differential

import (
	"os"
	"strings"
	"testing"

	"github.com/rekuiper/rekuiper/internal/conformance"
	"github.com/rekuiper/rekuiper/internal/function"
)

// TestQuirkRulesNameDocumentedEntries: every quirk rule names an entry
// that docs/compatibility.md still has in back-quotes, and names are
// unique.
func TestQuirkRulesNameDocumentedEntries(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/compatibility.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []string{bigintEntry, nullArrayEntry, droppedEntry, groupOrderEntry, eventTimeEndEntry, hopLostEntry, sessionLostEntry} {
		if !strings.Contains(string(doc), "`"+e+"`") {
			t.Errorf("docs/compatibility.md does not name %q in back-quotes", e)
		}
	}
	for _, q := range valueQuirks {
		if !strings.Contains(string(doc), "`"+q.entry+"`") {
			t.Errorf("value quirk %s names %q, which docs/compatibility.md does not have in back-quotes", q.name, q.entry)
		}
	}
	for _, q := range rowQuirks {
		if !strings.Contains(string(doc), "`"+q.entry+"`") {
			t.Errorf("row quirk %s names %q, which docs/compatibility.md does not have in back-quotes", q.name, q.entry)
		}
	}
	seen := map[string]bool{}
	for _, r := range append(refusalRules, quirkRules...) {
		if r.name == "" || r.name == Variance || r.name == Unexplained || seen[r.name] {
			t.Errorf("quirk rule %q: empty, reserved or duplicate name", r.name)
		}
		seen[r.name] = true
		if !strings.Contains(string(doc), "`"+r.entry+"`") {
			t.Errorf("quirk rule %s names %q, which docs/compatibility.md does not have in back-quotes", r.name, r.entry)
		}
	}
}

func outcome(kind Kind, sql string, opts map[string]any, want, got [][]map[string]any) Outcome {
	c := &conformance.Case{Suite: "t", Name: "c", Expected: want}
	c.Rule.SQL = sql
	c.Rule.Options = opts
	return Outcome{Case: c, Kind: kind, Actual: got}
}

type rows = []map[string]any

func TestClassify(t *testing.T) {
	quiet := map[string]any{"sendError": false}
	loud := map[string]any{"sendError": true}
	tests := []struct {
		name   string
		o      Outcome
		varied bool
		want   string
	}{
		{"acc zero and the alias reused", outcome(Differs, "SELECT v, acc_max(v) AS a0, a0 + 1 AS r FROM fx", loud,
			[][]map[string]any{{{"v": int64(1), "a0": 0.0, "r": 1.0}}}, [][]map[string]any{{{"v": int64(1)}}}), false, "acc-functions"},
		{"a value no quirk explains", outcome(Differs, "SELECT v + 1 AS x FROM fx", loud,
			[][]map[string]any{{{"x": int64(2)}}}, [][]map[string]any{{{"x": int64(3)}}}), false, Unexplained},
		{"acc beside a value no quirk explains", outcome(Differs, "SELECT v + 1 AS x, acc_max(v) AS a0 FROM fx", loud,
			[][]map[string]any{{{"x": int64(2), "a0": 0.0}}}, [][]map[string]any{{{"x": int64(3)}}}), false, Unexplained},
		{"groups in another order", outcome(Differs, "SELECT k, count(*) AS c FROM fx GROUP BY k, TUMBLINGWINDOW(ss, 1)", loud,
			[][]map[string]any{rows{{"k": "a", "c": int64(1)}, {"k": "b", "c": int64(2)}}},
			[][]map[string]any{rows{{"k": "b", "c": int64(2)}, {"k": "a", "c": int64(1)}}}), false, "group-order"},
		{"ordered groups in another order", outcome(Differs, "SELECT k, count(*) AS c FROM fx GROUP BY k, TUMBLINGWINDOW(ss, 1) ORDER BY k", loud,
			[][]map[string]any{rows{{"k": "a", "c": int64(1)}, {"k": "b", "c": int64(2)}}},
			[][]map[string]any{rows{{"k": "b", "c": int64(2)}, {"k": "a", "c": int64(1)}}}), false, Unexplained},
		{"integer avg and a window eKuiper lost", outcome(Differs, "SELECT avg(v) AS g FROM fx GROUP BY COUNTWINDOW(2)", quiet,
			[][]map[string]any{{{"g": int64(1)}}}, [][]map[string]any{{{"g": 1.5}}, {{"g": 2.25}}}), false, "avg-integer+ekuiper-dropped"},
		{"a window lost while errors are sent", outcome(Differs, "SELECT avg(v) AS g FROM fx GROUP BY COUNTWINDOW(2)", loud,
			[][]map[string]any{{{"g": int64(1)}}}, [][]map[string]any{{{"g": 1.5}}, {{"g": 2.25}}}), false, Unexplained},
		{"a last event-time window", func() Outcome {
			o := outcome(Differs, "SELECT count(*) AS c FROM fx GROUP BY TUMBLINGWINDOW(ss, 1)", loud,
				[][]map[string]any{{{"c": int64(1)}}}, [][]map[string]any{{{"c": int64(1)}}, {{"c": int64(2)}}})
			o.Case.Clock = "event"
			return o
		}(), false, "eventtime-end"},
		{"a last processing-time window", outcome(Differs, "SELECT count(*) AS c FROM fx GROUP BY TUMBLINGWINDOW(ss, 1)", loud,
			[][]map[string]any{{{"c": int64(1)}}}, [][]map[string]any{{{"c": int64(1)}}, {{"c": int64(2)}}}), false, Unexplained},
		{"NaN against nil", outcome(Differs, "SELECT stddevs(v) AS g FROM fx GROUP BY COUNTWINDOW(1)", loud,
			[][]map[string]any{{{"g": "NaN"}}}, [][]map[string]any{{{}}}), false, "nan-infinity"},
		{"unary minus", Outcome{Kind: EKuiperRefused, Case: &conformance.Case{Suite: "t", Name: "c",
			OracleError: `plan: Parse SQL SELECT -v FROM fx error: found "-", expected expression..`}}, false, "unary-minus"},
		{"trunc rounds", outcome(Differs, "SELECT trunc(w, 0) AS t FROM fx", loud,
			[][]map[string]any{{{"t": -9.0}}}, [][]map[string]any{{{"t": -8.0}}}), false, "trunc-rounds"},
		{"a float number of digits", outcome(Differs, "SELECT trunc(w, d) AS t FROM fx", loud,
			[][]map[string]any{{{"error": "run Select error: alias: t expr: Call:{ name:trunc, args:[fx.w, fx.d] } meet error, err:call func trunc error: The 2nd parameter must be int value."}}},
			[][]map[string]any{{{"t": 2.5}}}), false, "trunc-float-digits"},
		{"another function's error beside trunc", outcome(Differs, "SELECT trunc(w, d) AS t, abs(s) AS a FROM fx", loud,
			[][]map[string]any{{{"error": "run Select error: alias: a expr: Call:{ name:abs, args:[fx.s] } meet error, err:call func abs error: bad"}}},
			[][]map[string]any{{{"t": 2.5}}}), false, Unexplained},
		{"format of a bool", outcome(Differs, "SELECT format(b, 0) AS f FROM fx", loud,
			[][]map[string]any{{{"f": "0"}}}, [][]map[string]any{{{"error": "run Select error: alias: f expr: cannot convert bool(true) to float64"}}}), false, "format-not-number"},
		{"format of a bool, not 0", outcome(Differs, "SELECT format(b, 0) AS f FROM fx", loud,
			[][]map[string]any{{{"f": "1"}}}, [][]map[string]any{{{"error": "run Select error: alias: f expr: cannot convert bool(true) to float64"}}}), false, Unexplained},
		{"format_time digits", outcome(Differs, `SELECT format_time(t, "2023-11-14") AS f FROM fx`, loud,
			[][]map[string]any{{{"f": "141410-1111-1113"}}}, [][]map[string]any{{{"f": "2023-11-14"}}}), false, "format-time-digits"},
		{"format_time other text", outcome(Differs, `SELECT format_time(t, "2023-11-14") AS f FROM fx`, loud,
			[][]map[string]any{{{"f": "141410/1111/1113"}}}, [][]map[string]any{{{"f": "2023-11-14"}}}), false, Unexplained},
		{"regexp_matches of an object", outcome(Differs, "SELECT regexp_matches(o, o) AS f FROM fx", loud,
			[][]map[string]any{{{"f": false}}}, [][]map[string]any{{{"f": true}}}), false, "go-syntax"},
		{"eKuiper stops at an object", outcome(Differs, "SELECT array_contains(arr, o) AS c FROM fx", loud,
			[][]map[string]any{{{"c": true}}}, [][]map[string]any{{{"c": true}}, {{"c": false}}}), false, "composite-element-panic"},
		{"eKuiper stops, with another first answer", outcome(Differs, "SELECT array_contains(arr, o) AS c FROM fx", loud,
			[][]map[string]any{{{"c": false}}}, [][]map[string]any{{{"c": true}}, {{"c": false}}}), false, Unexplained},
		{"an empty event-time hopping window", func() Outcome {
			o := outcome(Differs, "SELECT collect(v) AS c FROM fx GROUP BY HOPPINGWINDOW(ss, 2, 1)", loud,
				[][]map[string]any{{{"c": []any{int64(1)}}}, {{"c": nil}}}, [][]map[string]any{{{"c": []any{int64(1)}}}, {{"c": []any{int64(2)}}}})
			o.Case.Clock = "event"
			return o
		}(), false, "hopping-empty-window"},
		{"an empty processing-time hopping window", outcome(Differs, "SELECT collect(v) AS c FROM fx GROUP BY HOPPINGWINDOW(ss, 2, 1)", loud,
			[][]map[string]any{{{"c": []any{int64(1)}}}, {{"c": nil}}}, [][]map[string]any{{{"c": []any{int64(1)}}}, {{"c": []any{int64(2)}}}}), false, Unexplained},
		{"array_sort by text", outcome(Differs, "SELECT array_sort(arr) AS s FROM fx", loud,
			[][]map[string]any{{{"s": []any{int64(10), int64(9)}}}}, [][]map[string]any{{{"s": []any{int64(9), int64(10)}}}}), false, "array-sort-text"},
		{"array_sort of other elements", outcome(Differs, "SELECT array_sort(arr) AS s FROM fx", loud,
			[][]map[string]any{{{"s": []any{int64(10), int64(9)}}}}, [][]map[string]any{{{"s": []any{int64(9), int64(1)}}}}), false, Unexplained},
		{"eKuiper varies", outcome(Differs, "SELECT v + 1 AS x FROM fx", loud,
			[][]map[string]any{{{"x": int64(2)}}}, [][]map[string]any{{{"x": int64(3)}}}), true, Variance},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.o.Case.Rule.SQL == "" {
				tt.o.Case.Rule.SQL = "SELECT 1 FROM fx"
			}
			if got := Classify(tt.o, tt.varied, nil); got != tt.want {
				t.Fatalf("class %q, want %q", got, tt.want)
			}
		})
	}
}

// TestClassifyBigintTruncation: a fraction in a BIGINT column, which
// rekuiper refuses and eKuiper cuts off, explains the difference when
// rekuiper, given the cut value, emits what eKuiper did.
func TestClassifyBigintTruncation(t *testing.T) {
	funcs := function.Builtins()
	mk := func(want [][]map[string]any) Outcome {
		c := &conformance.Case{Suite: "t", Name: "c", Clock: "processing", StartTime: 1_700_000_000_000,
			Streams:     []string{`CREATE STREAM fx (v BIGINT, w FLOAT) WITH (DATASOURCE="fx", TYPE="mock", FORMAT="json", STRICT_VALIDATION="true");`},
			StreamNames: []string{"fx"},
			Inputs:      map[string][]conformance.Event{"fx": {{TS: 1_700_000_000_100, Data: map[string]any{"v": 2.5, "w": 1.0}}}},
			Timeline:    []conformance.Step{{At: 1_700_000_000_100, Stream: "fx", Index: 0}},
			EndTime:     1_700_000_000_100, Expected: want}
		c.Rule.SQL = "SELECT v, w FROM fx"
		c.Rule.Options = map[string]any{"sendError": false}
		return Check(c, funcs)
	}
	o := mk([][]map[string]any{{{"v": int64(2), "w": 1.0}}})
	if o.Kind != Differs {
		t.Fatalf("rekuiper should refuse the fraction: %s %s", o.Kind, o.Detail)
	}
	if got := Classify(o, false, funcs); got != "bigint-fraction" {
		t.Fatalf("class %q, want bigint-fraction", got)
	}
	if got := Classify(mk([][]map[string]any{{{"v": int64(3), "w": 1.0}}}), false, funcs); got != Unexplained {
		t.Fatalf("a value the truncation does not give: class %q, want %s", got, Unexplained)
	}
}

// TestClassifyBigintTruncationQuirk: a fraction eKuiper cuts off to a
// negative padding length stops its output (negative-padding); one cut
// off to a positive length explains nothing.
func TestClassifyBigintTruncationQuirk(t *testing.T) {
	funcs := function.Builtins()
	mk := func(v float64) Outcome {
		c := &conformance.Case{Suite: "t", Name: "c", Clock: "processing", StartTime: 1_700_000_000_000,
			Streams:     []string{`CREATE STREAM fx (v BIGINT, s STRING) WITH (DATASOURCE="fx", TYPE="mock", FORMAT="json", STRICT_VALIDATION="true");`},
			StreamNames: []string{"fx"},
			Inputs: map[string][]conformance.Event{"fx": {
				{TS: 1_700_000_000_100, Data: map[string]any{"v": v, "s": "x"}},
				{TS: 1_700_000_000_200, Data: map[string]any{"v": 2.0, "s": "y"}}}},
			Timeline: []conformance.Step{{At: 1_700_000_000_100, Stream: "fx", Index: 0}, {At: 1_700_000_000_200, Stream: "fx", Index: 1}},
			EndTime:  1_700_000_000_200, Expected: [][]map[string]any{}}
		c.Rule.SQL = "SELECT lpad(s, v) AS f FROM fx"
		c.Rule.Options = map[string]any{"sendError": true}
		return Check(c, funcs)
	}
	o := mk(-1.25)
	if o.Kind != Differs {
		t.Fatalf("rekuiper should refuse the fraction: %s %s", o.Kind, o.Detail)
	}
	if got := Classify(o, false, funcs); got != "bigint-fraction+negative-padding" {
		t.Fatalf("class %q, want bigint-fraction+negative-padding", got)
	}
	if got := Classify(mk(1.25), false, funcs); got != Unexplained {
		t.Fatalf("a positive length: class %q, want %s", got, Unexplained)
	}
}

func TestEKuiperGroupedSQL(t *testing.T) {
	tests := []struct{ sql, want string }{
		{"SELECT *, o->c * arr[1:3] AS x FROM fx", "SELECT *, (o->c * arr)[1:3] AS x FROM fx"},
		{"SELECT v * o->c AS a FROM fx", "SELECT (v * o)->c AS a FROM fx"},
		{"SELECT v % arr[0]->c AS a FROM fx WHERE w / arr[1] > 2", "SELECT (v % arr)[0]->c AS a FROM fx WHERE (w / arr)[1] > 2"},
		{"SELECT a * b * c[0] AS x FROM fx", "SELECT (a * b * c)[0] AS x FROM fx"},
		{"SELECT abs(v & arr[2]) AS x FROM fx", "SELECT abs((v & arr)[2]) AS x FROM fx"},
		// + and - bind looser than [] in eKuiper too; o.c is one name.
		{"SELECT v + arr[0] AS a, v - arr[1:2] AS b, v * o.c AS c, arr[0] * v AS d FROM fx", ""},
	}
	for _, tt := range tests {
		got, changed := ekuiperGroupedSQL(tt.sql)
		if changed != (tt.want != "") || got != tt.want {
			t.Errorf("%s: got %q (changed %v), want %q", tt.sql, got, changed, tt.want)
		}
	}
}

// TestClassifyGroupedAsEKuiper: o->c * arr[1:3] with o->c null and arr
// too short is null in eKuiper, which reads (o->c * arr)[1:3]; rekuiper
// fails on the slice. The replay with eKuiper's grouping explains it, and
// only it.
func TestClassifyGroupedAsEKuiper(t *testing.T) {
	funcs := function.Builtins()
	mk := func(sql string, want [][]map[string]any) Outcome {
		c := &conformance.Case{Suite: "t", Name: "c", Clock: "processing", StartTime: 1_700_000_000_000,
			Streams:     []string{`CREATE STREAM fx () WITH (DATASOURCE="fx", TYPE="mock", FORMAT="json");`},
			StreamNames: []string{"fx"},
			Inputs:      map[string][]conformance.Event{"fx": {{TS: 1_700_000_000_100, Data: map[string]any{"o": map[string]any{"c": nil}, "arr": []any{int64(1)}}}}},
			Timeline:    []conformance.Step{{At: 1_700_000_000_100, Stream: "fx", Index: 0}},
			EndTime:     1_700_000_000_100, Expected: want}
		c.Rule.SQL = sql
		c.Rule.Options = map[string]any{"sendError": true}
		return Check(c, funcs)
	}
	row := map[string]any{"o": map[string]any{"c": nil}, "arr": []any{int64(1)}}
	o := mk("SELECT *, o->c * arr[1:3] AS x FROM fx", [][]map[string]any{{row}})
	if o.Kind != Differs {
		t.Fatalf("rekuiper should fail on the slice: %s %s", o.Kind, o.Detail)
	}
	if got := Classify(o, false, funcs); got != "operator-precedence" {
		t.Fatalf("class %q, want operator-precedence", got)
	}
	withX := map[string]any{"o": map[string]any{"c": nil}, "arr": []any{int64(1)}, "x": int64(1)}
	if got := Classify(mk("SELECT *, o->c * arr[1:3] AS x FROM fx", [][]map[string]any{{withX}}), false, funcs); got != Unexplained {
		t.Fatalf("an output the grouping does not give: class %q, want %s", got, Unexplained)
	}
	if got := Classify(mk("SELECT *, arr[1:3] AS x FROM fx", [][]map[string]any{{row}}), false, funcs); got != Unexplained {
		t.Fatalf("a rule without the grouping: class %q, want %s", got, Unexplained)
	}
}

func TestClassifyRulesOfThisRound(t *testing.T) {
	loud := map[string]any{"sendError": true}
	strict := func(ddl string, want, got [][]map[string]any) Outcome {
		o := outcome(Differs, "SELECT bypass(arr) AS b, coalesce(arr, 5) AS c, v AS w FROM fx", loud, want, got)
		o.Case.Streams = []string{ddl}
		return o
	}
	const strictDDL = `CREATE STREAM fx (v BIGINT, arr ARRAY(BIGINT)) WITH (DATASOURCE="fx", TYPE="mock", FORMAT="json", STRICT_VALIDATION="true");`
	const typedDDL = `CREATE STREAM fx (v BIGINT, arr ARRAY(BIGINT)) WITH (DATASOURCE="fx", TYPE="mock", FORMAT="json");`
	const structDDL = `CREATE STREAM fx (v BIGINT, arr ARRAY(BIGINT), o STRUCT(a BIGINT)) WITH (DATASOURCE="fx", TYPE="mock", FORMAT="json", STRICT_VALIDATION="true");`
	passed := [][]map[string]any{{{"b": nil, "c": nil}}}
	left := [][]map[string]any{{{"c": int64(5)}}}
	tests := []struct {
		name string
		o    Outcome
		want string
	}{
		{"a null array passed on, strict", strict(strictDDL, passed, left), "strict-null-array"},
		{"a null array passed on, not strict", strict(typedDDL, passed, left), Unexplained},
		{"a null struct passed on, strict", func() Outcome {
			o := outcome(Differs, `SELECT CASE WHEN v > 1 THEN o ELSE o END AS e, array_create(0, arr, o) AS f FROM fx`, loud,
				[][]map[string]any{{{"e": nil, "f": []any{int64(0), nil, nil}}}}, [][]map[string]any{{{"f": []any{int64(0)}}}})
			o.Case.Streams = []string{structDDL}
			return o
		}(), "strict-null-array"},
		{"array_create with another element", func() Outcome {
			o := outcome(Differs, `SELECT array_create(0, arr) AS f FROM fx`, loud,
				[][]map[string]any{{{"f": []any{int64(0), nil, int64(1)}}}}, [][]map[string]any{{{"f": []any{int64(0)}}}})
			o.Case.Streams = []string{structDDL}
			return o
		}(), Unexplained},
		{"a null struct passed on, not strict", func() Outcome {
			o := outcome(Differs, `SELECT o AS e FROM fx`, loud,
				[][]map[string]any{{{"e": nil}}}, [][]map[string]any{{{}}})
			o.Case.Streams = []string{strings.Replace(structDDL, `, STRICT_VALIDATION="true"`, "", 1)}
			return o
		}(), Unexplained},
		{"a null of another column", strict(strictDDL, [][]map[string]any{{{"w": nil, "c": int64(5)}}}, left), Unexplained},
		{"array_join of an array", outcome(Differs, `SELECT array_join(arr, ",") AS j FROM fx`, loud,
			[][]map[string]any{{{"j": "1,[]"}}},
			[][]map[string]any{{{"error": "run Select error: alias: j expr: array elements should be string, number or bool, got []interface {}([])"}}}), "array-join-composite"},
		{"an operator after the upper bound", outcome(Differs, "SELECT v BETWEEN 1 AND 2 + 3 AS a FROM fx", loud,
			[][]map[string]any{{{"error": "run Select error: alias: a expr: binaryExpr:{ fx.v BETWEEN binaryExpr:{ betweenExpr:{ 1, 2 } + 3 } } meet error, err:+ is an invalid operation for []interface {}"}}},
			[][]map[string]any{{{"a": false}}}), "between-high-bound"},
		{"an operator after the lower bound", Outcome{Kind: EKuiperRefused, Case: &conformance.Case{Suite: "t", Name: "c",
			OracleError: "plan: Parse SQL SELECT v BETWEEN w + 1 AND 3 AS a FROM fx error: expect AND expression after between but found +."}}, "between-low-bound"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.o.Case.Rule.SQL == "" {
				tt.o.Case.Rule.SQL = "SELECT 1 FROM fx"
			}
			if got := Classify(tt.o, false, nil); got != tt.want {
				t.Fatalf("class %q, want %q", got, tt.want)
			}
		})
	}
}

// TestGroupOrderPairsEqualRowsFirst: in a window without ORDER BY the
// groups pair up with the equal rows, although a quirk (an event-time
// hopping window's empty row) would accept a null group in another's
// place; rows no pairing explains stay unexplained.
func TestGroupOrderPairsEqualRowsFirst(t *testing.T) {
	sql := "SELECT k, merge_agg(s) AS g0 FROM fx GROUP BY k, HOPPINGWINDOW(ss, 4, 1)"
	loud := map[string]any{"sendError": true}
	for _, tc := range []struct {
		name      string
		want, got rows
		class     string
	}{
		{"reordered", rows{{"k": "b"}, {"k": nil}, {"k": "c"}}, rows{{"k": "c"}, {"k": "b"}, {"k": nil}}, "group-order"},
		{"another group", rows{{"k": "b"}, {"k": nil}, {"k": "c"}}, rows{{"k": "a"}, {"k": "b"}, {"k": nil}}, Unexplained},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := outcome(Differs, sql, loud, [][]map[string]any{tc.want}, [][]map[string]any{tc.got})
			o.Case.Clock = "event"
			if got := Classify(o, false, nil); got != tc.class {
				t.Errorf("class %q, want %q", got, tc.class)
			}
		})
	}
}
