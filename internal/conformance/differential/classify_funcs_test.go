package differential

import (
	"testing"

	"github.com/rekuiper/rekuiper/internal/conformance"
)

// withInputs gives the outcome's case one stream fx of these records.
func withInputs(o Outcome, records ...map[string]any) Outcome {
	evs := make([]conformance.Event, len(records))
	for i, r := range records {
		evs[i].Data = r
	}
	o.Case.Inputs = map[string][]conformance.Event{"fx": evs}
	return o
}

func TestClassifyFunctionQuirks(t *testing.T) {
	loud := map[string]any{"sendError": true}
	timeout := func(sql string, records ...map[string]any) Outcome {
		o := outcome(EKuiperRefused, sql, loud, nil, [][]map[string]any{{{"f": 2.5}}})
		o.Case.OracleError = "timeout: the rule did not finish"
		return withInputs(o, records...)
	}
	huge := map[string]any{"v": int64(9007199254740993), "o": int64(9007199254740993)}
	padErr := func(n string) map[string]any {
		return map[string]any{"error": "run Select error: alias: f expr: rpad: padding length " + n + " exceeds the limit of 1000000"}
	}
	repErr := func(n string) map[string]any {
		return map[string]any{"error": "run Select error: alias: f expr: repeat: second argument should be between 0 and 1000000, got " + n}
	}
	ok := map[string]any{"f": "a "}
	pairs := func(keys ...string) []any {
		out := []any{}
		for i, k := range keys {
			out = append(out, []any{k, int64(i)})
		}
		return out
	}
	sorted := []any{[]any{"a", int64(1)}, []any{"b", int64(2)}, []any{"c", int64(3)}}
	rotated := []any{[]any{"b", int64(2)}, []any{"c", int64(3)}, []any{"a", int64(1)}}
	tests := []struct {
		name string
		o    Outcome
		want string
	}{
		{"round to a huge number of digits", timeout("SELECT round(2.5, v) AS f FROM fx", huge), "round-huge-digits"},
		{"round of an object column to huge digits", timeout("SELECT round(1, o) AS f FROM fx", huge), "round-huge-digits"},
		{"round with a parenthesised number", timeout("SELECT round((-0.5), v) AS f FROM fx", huge), "round-huge-digits"},
		{"round to few digits times out", timeout("SELECT round(2.5, v) AS f FROM fx", map[string]any{"v": int64(400)}), Unexplained},
		{"round to huge negative digits", timeout("SELECT round(2.5, v) AS f FROM fx", map[string]any{"v": int64(-9007199254740993)}), Unexplained},
		{"round of a huge column to literal digits", timeout("SELECT round(v, 2) AS f FROM fx", huge), Unexplained},
		{"a timeout without round", timeout("SELECT abs(v) AS f FROM fx", huge), Unexplained},
		{"eKuiper refused otherwise", func() Outcome {
			o := timeout("SELECT round(2.5, v) AS f FROM fx", huge)
			o.Case.OracleError = "plan: something else"
			return o
		}(), Unexplained},
		{"padding Go cannot allocate", outcome(Differs, "SELECT rpad(s, v) AS f FROM fx", loud,
			[][]map[string]any{{ok}}, [][]map[string]any{{ok}, {padErr("9007199254740993")}, {ok}}), "huge-padding"},
		{"padding Go cannot allocate, the row before lost", outcome(Differs, "SELECT lpad(s, v) AS f FROM fx", loud,
			[][]map[string]any{}, [][]map[string]any{{ok}, {padErr("281474976710656")}}), "huge-padding"},
		{"padding Go can allocate", outcome(Differs, "SELECT rpad(s, v) AS f FROM fx", loud,
			[][]map[string]any{{ok}}, [][]map[string]any{{ok}, {padErr("2000000")}, {ok}}), Unexplained},
		{"huge padding but eKuiper went on", outcome(Differs, "SELECT rpad(s, v) AS f FROM fx", loud,
			[][]map[string]any{{ok}, {{"f": "b"}}}, [][]map[string]any{{ok}, {padErr("9007199254740993")}}), Unexplained},
		{"items in another order", outcome(Differs, "SELECT items(o) AS f FROM fx", loud,
			[][]map[string]any{{{"f": rotated}}}, [][]map[string]any{{{"f": sorted}}}), "items-map-order"},
		{"keys in another order", outcome(Differs, "SELECT keys(o) AS f FROM fx", loud,
			[][]map[string]any{{{"f": []any{"c", "a", "b"}}}}, [][]map[string]any{{{"f": []any{"a", "b", "c"}}}}), "items-map-order"},
		{"values in another order", outcome(Differs, "SELECT values(o) AS f FROM fx", loud,
			[][]map[string]any{{{"f": []any{2.0, "x"}}}}, [][]map[string]any{{{"f": []any{"x", 2.0}}}}), "items-map-order"},
		{"keys with other members", outcome(Differs, "SELECT keys(o) AS f FROM fx", loud,
			[][]map[string]any{{{"f": []any{"c", "a"}}}}, [][]map[string]any{{{"f": []any{"a", "b"}}}}), Unexplained},
		{"from_days past a Duration", outcome(Differs, "SELECT from_days(s) AS f FROM fx", loud,
			[][]map[string]any{{{"f": "1970-01-01"}}}, [][]map[string]any{{{"f": "109603886205-02-05"}}}), "from-days-overflow"},
		{"from_days within a Duration", outcome(Differs, "SELECT from_days(s) AS f FROM fx", loud,
			[][]map[string]any{{{"f": "1970-01-01"}}}, [][]map[string]any{{{"f": "2200-02-05"}}}), Unexplained},
		{"another function past a Duration", outcome(Differs, "SELECT concat(s) AS f FROM fx", loud,
			[][]map[string]any{{{"f": "1970-01-01"}}}, [][]map[string]any{{{"f": "109603886205-02-05"}}}), Unexplained},
		{"repeat Go cannot allocate", outcome(Differs, "SELECT repeat(0.5, w) AS f FROM fx", loud,
			[][]map[string]any{}, [][]map[string]any{{repErr("9007199254740993")}, {ok}}), "huge-repeat"},
		{"repeat Go can allocate", outcome(Differs, "SELECT repeat(0.5, w) AS f FROM fx", loud,
			[][]map[string]any{}, [][]map[string]any{{repErr("2000000")}, {ok}}), Unexplained},
		{"huge repeat but eKuiper went on", outcome(Differs, "SELECT repeat(0.5, w) AS f FROM fx", loud,
			[][]map[string]any{{{"f": "b"}}}, [][]map[string]any{{repErr("9007199254740993")}, {ok}}), Unexplained},
		{"padding Go cannot allocate, an object hashed before", outcome(Differs, "SELECT sha1(o) AS h, rpad(s, v) AS f FROM fx", loud,
			[][]map[string]any{{{"h": "e40baae6a8b2a21e6e8abaaefb42a3e2eedd291c"}}},
			[][]map[string]any{{{"h": "3783151a8b203cfe6f80cb17d5069532fd41158c"}}, {padErr("9007199254740993")}}), "huge-padding"},
		{"padding Go cannot allocate, another value before", outcome(Differs, "SELECT abs(v) AS h, rpad(s, v) AS f FROM fx", loud,
			[][]map[string]any{{{"h": int64(1)}}},
			[][]map[string]any{{{"h": int64(2)}}, {padErr("9007199254740993")}}), Unexplained},
		{"an array as a pattern", outcome(Differs, "SELECT regexp_substr(v, arr) AS f FROM fx", loud,
			[][]map[string]any{{{"error": "run Select error: alias: f expr: Call:{ name:regexp_substr, args:[fx.v, fx.arr] } meet error, err:call func regexp_substr error: error parsing regexp: missing closing ]: `[]`"}}},
			[][]map[string]any{{{"f": ""}}}), "go-syntax-pattern"},
		{"a string as a pattern", outcome(Differs, "SELECT regexp_substr(v, s) AS f FROM fx", loud,
			[][]map[string]any{{{"error": "run Select error: alias: f expr: Call:{ name:regexp_substr, args:[fx.v, fx.s] } meet error, err:call func regexp_substr error: error parsing regexp: missing closing ]: `[]`"}}},
			[][]map[string]any{{{"f": ""}}}), Unexplained},
		{"items with other members", outcome(Differs, "SELECT items(o) AS f FROM fx", loud,
			[][]map[string]any{{{"f": pairs("b", "a")}}}, [][]map[string]any{{{"f": pairs("a", "b")}}}), Unexplained},
		{"another array in another order", outcome(Differs, "SELECT array_concat(arr) AS f FROM fx", loud,
			[][]map[string]any{{{"f": rotated}}}, [][]map[string]any{{{"f": sorted}}}), Unexplained},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Classify(tt.o, false, nil); got != tt.want {
				t.Errorf("Classify = %q, want %q", got, tt.want)
			}
		})
	}
}
