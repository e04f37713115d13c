package function

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/sql/ast"
)

// analyticFx is the `fx` fixture of the gen_analytic suite.
func analyticFx() []map[string]any {
	return []map[string]any{
		{"k": "x", "v": int64(1), "w": int64(10)},
		{"k": "y", "v": int64(2)},
		{"k": "x", "v": nil, "w": int64(30)},
		{"k": "y", "v": int64(4), "w": int64(40)},
		{"k": "x", "v": int64(5), "w": int64(50)},
		{"k": "x", "v": int64(5), "w": int64(60)},
		{"k": "y", "v": 1.5, "w": int64(60)},
	}
}

// analyticDemo is the `demo` fixture of the upstream TestSingleSQL and
// TestAccAggSQL suites.
func analyticDemo() []map[string]any {
	return []map[string]any{
		{"color": "red", "size": int64(3)},
		{"color": "blue", "size": int64(6)},
		{"color": "blue", "size": int64(2)},
		{"color": "yellow", "size": int64(4)},
		{"color": "red", "size": int64(1)},
	}
}

// analyticStep is one row fed to an analytic function.
type analyticStep struct {
	args      []any
	partition string // OVER (PARTITION BY) key; "" for none
	invalid   bool   // OVER (WHEN) is false
}

// analyticRun feeds steps to fn, keeping one State per partition like the
// evaluator, and returns the answers. It fails the test on an error unless
// errs is non-nil, in which case the error text is recorded there.
func analyticRun(t *testing.T, fn string, steps []analyticStep, errs []string) []any {
	t.Helper()
	d, ok := Builtins().Lookup(fn)
	if !ok {
		t.Fatalf("function %s not registered", fn)
	}
	if d.Kind != Analytic || d.Analytic == nil {
		t.Fatalf("%s: kind %v, want analytic", fn, d.Kind)
	}
	states := map[string]State{}
	out := make([]any, len(steps))
	for i, s := range steps {
		st, ok := states[s.partition]
		if !ok {
			st = State{}
			states[s.partition] = st
		}
		got, err := d.Analytic(aggTestEnv{}, st, !s.invalid, s.args)
		switch {
		case err != nil && errs != nil:
			errs[i] = err.Error()
		case err != nil:
			t.Fatalf("%s step %d: unexpected error %v", fn, i, err)
		}
		out[i] = got
	}
	for p, st := range states {
		for k, v := range st {
			if !analyticIsValueModel(v) {
				t.Errorf("%s: state[%q][%q] = %T, not a value-model value", fn, p, k, v)
			}
		}
	}
	return out
}

// analyticIsValueModel reports whether v is made only of value-model types.
func analyticIsValueModel(v any) bool {
	switch x := v.(type) {
	case nil, int64, float64, string, bool, []byte, time.Time:
		return true
	case []any:
		for _, e := range x {
			if !analyticIsValueModel(e) {
				return false
			}
		}
		return true
	case map[string]any:
		for _, e := range x {
			if !analyticIsValueModel(e) {
				return false
			}
		}
		return true
	}
	return false
}

// analyticSteps builds one step per row from an argument builder.
func analyticSteps(rows []map[string]any, args func(r map[string]any) []any) []analyticStep {
	out := make([]analyticStep, len(rows))
	for i, r := range rows {
		out[i] = analyticStep{args: args(r)}
	}
	return out
}

// analyticWith sets partition keys and validity on steps.
func analyticWith(steps []analyticStep, part func(i int) string, valid func(i int) bool) []analyticStep {
	for i := range steps {
		if part != nil {
			steps[i].partition = part(i)
		}
		if valid != nil {
			steps[i].invalid = !valid(i)
		}
	}
	return steps
}

func TestAnalyticCorpus(t *testing.T) {
	fx, demo := analyticFx(), analyticDemo()
	fxKey := func(i int) string { return fx[i]["k"].(string) }
	demoColor := func(i int) string { return demo[i]["color"].(string) }
	demoRed := func(i int) bool { return demo[i]["color"] == "red" }
	gt := func(field string, n float64) func(i int) bool {
		return func(i int) bool {
			switch x := fx[i][field].(type) {
			case int64:
				return float64(x) > n
			case float64:
				return x > n
			}
			return false
		}
	}
	arg := func(fields ...any) func(r map[string]any) []any {
		return func(r map[string]any) []any {
			out := make([]any, len(fields))
			for i, f := range fields {
				if name, ok := f.(string); ok && strings.HasPrefix(name, "$") {
					out[i] = r[name[1:]]
				} else {
					out[i] = f
				}
			}
			return out
		}
	}
	size := arg("$size")
	tests := []struct {
		name  string
		fn    string
		steps []analyticStep
		want  []any
	}{
		{"acc_int_values/sum", "acc_sum", analyticSteps(fx, arg("$w")),
			[]any{10.0, 10.0, 40.0, 80.0, 130.0, 190.0, 250.0}},
		// quirk acc_int_values: eKuiper fails acc_avg on the nil of row 2.
		{"acc_int_values/avg", "acc_avg", analyticSteps(fx, arg("$w")),
			[]any{10.0, 10.0, 20.0, 26.666666666666668, 32.5, 38.0, 41.666666666666664}},
		{"acc_partition/sum", "acc_sum", analyticWith(analyticSteps(fx, arg("$w")), fxKey, nil),
			[]any{10.0, 0.0, 40.0, 40.0, 90.0, 150.0, 100.0}},
		{"acc_partition/count", "acc_count", analyticWith(analyticSteps(fx, arg("$w")), fxKey, nil),
			[]any{int64(1), int64(0), int64(2), int64(1), int64(3), int64(4), int64(2)}},
		{"acc_start_reset/sum", "acc_sum", analyticSteps(fx, func(r map[string]any) []any {
			return []any{r["w"], analyticGt(r["v"], 1), r["v"] == int64(5)}
		}), []any{0.0, 0.0, 30.0, 70.0, 120.0, 60.0, 60.0}},
		{"acc_start_reset/count", "acc_count", analyticSteps(fx, func(r map[string]any) []any {
			return []any{r["w"], analyticGt(r["v"], 1), r["v"] == int64(5)}
		}), []any{int64(0), int64(0), int64(1), int64(2), int64(3), int64(1), int64(1)}},
		{"had_changed/hv", "had_changed", analyticSteps(fx, arg(true, "$v")),
			[]any{true, true, false, true, true, false, true}},
		{"had_changed/hvn", "had_changed", analyticSteps(fx, arg(false, "$v")),
			[]any{true, true, true, true, true, false, true}},
		{"had_changed/hvw", "had_changed", analyticSteps(fx, arg(true, "$v", "$w")),
			[]any{true, true, true, true, true, true, true}},
		{"had_changed_partition", "had_changed", analyticWith(analyticSteps(fx, arg(true, "$v")), fxKey, nil),
			[]any{true, true, false, true, true, false, true}},
		{"lag_ignore_null_false/l", "lag", analyticSteps(fx, arg("$v", int64(1), int64(0), false)),
			[]any{int64(0), int64(1), int64(2), nil, int64(4), int64(5), int64(5)}},
		{"lag_ignore_null_false/lt", "lag", analyticSteps(fx, arg("$v", int64(1), int64(0), true)),
			[]any{int64(0), int64(1), int64(2), int64(2), int64(4), int64(5), int64(5)}},
		{"lag_partition_when", "lag", analyticWith(analyticSteps(fx, arg("$w")), fxKey, gt("v", 1)),
			[]any{nil, nil, nil, nil, nil, int64(50), int64(40)}},
		{"lag_when", "lag", analyticWith(analyticSteps(fx, arg("$v")), nil, gt("w", 20)),
			[]any{nil, nil, nil, nil, int64(4), int64(5), int64(5)}},
		{"latest/lv", "latest", analyticSteps(fx, arg("$v")),
			[]any{int64(1), int64(2), int64(2), int64(4), int64(5), int64(5), 1.5}},
		{"latest/lw", "latest", analyticSteps(fx, arg("$w", int64(0))),
			[]any{int64(10), int64(10), int64(30), int64(40), int64(50), int64(60), int64(60)}},
		{"TestLagPartition", "lag", analyticWith(analyticSteps(demo, size), demoColor, nil),
			[]any{nil, nil, int64(6), nil, int64(3)}},
		{"TestAnalyzeFuncAlias2", "lag", analyticSteps(demo, arg("$size", int64(1), int64(0))),
			[]any{int64(0), int64(3), int64(6), int64(2), int64(4)}},
		{"TestAccAggSql1", "acc_sum", analyticWith(analyticSteps(demo, size), demoColor, nil),
			[]any{3.0, 6.0, 8.0, 4.0, 4.0}},
		{"TestAccAggSql2", "acc_sum", analyticWith(analyticSteps(demo, size), nil, demoRed),
			[]any{3.0, 3.0, 3.0, 3.0, 4.0}},
		{"TestAccAggSql3", "acc_min", analyticWith(analyticSteps(demo, size), nil, demoRed),
			[]any{3.0, 3.0, 3.0, 3.0, 1.0}},
		{"TestAccAggSql4", "acc_max", analyticWith(analyticSteps(demo, size), nil, demoRed),
			[]any{3.0, 3.0, 3.0, 3.0, 3.0}},
		{"TestAccAggSql5", "acc_count", analyticWith(analyticSteps(demo, size), nil, demoRed),
			[]any{int64(1), int64(1), int64(1), int64(1), int64(2)}},
		{"TestAccAggSql6", "acc_avg", analyticWith(analyticSteps(demo, size), nil, demoRed),
			[]any{3.0, 3.0, 3.0, 3.0, 2.0}},
		{"lag_event_time", "lag", analyticSteps([]map[string]any{
			{"id": int64(1)}, {"id": int64(3)}, {"id": int64(2)}, {"id": int64(5)},
			{"id": int64(4)}, {"id": int64(6)}, {"id": int64(8)},
		}, arg("$id")), []any{nil, int64(1), int64(3), int64(2), int64(5), int64(4), int64(6)}},
		{"lag/offset2", "lag", analyticSteps(demo, arg("$size", int64(2), int64(-1))),
			[]any{int64(-1), int64(-1), int64(3), int64(6), int64(2)}},
		{"changed_col/docs", "changed_col", analyticSteps([]map[string]any{
			{"t": int64(23)}, {"t": int64(23)}, {"t": nil}, {"t": int64(25)}, {"t": int64(25)},
		}, arg(true, "$t")), []any{int64(23), nil, nil, int64(25), nil}},
		{"changed_col/not_ignore_null", "changed_col", analyticSteps([]map[string]any{
			{"t": int64(23)}, {"t": nil}, {"t": int64(23)},
		}, arg(false, "$t")), []any{int64(23), nil, int64(23)}},
		{"acc_min/none_yet", "acc_min", analyticWith(analyticSteps(demo, size), nil, func(i int) bool { return i > 0 }),
			[]any{nil, 6.0, 2.0, 2.0, 1.0}},
		{"inc_count_direct", "inc_count", analyticSteps([]map[string]any{{"v": int64(1)}, {"v": int64(5)}, {"v": int64(2)}},
			func(r map[string]any) []any { return []any{r} }), []any{int64(1), int64(2), int64(3)}},
		{"inc_max_min_direct/max", "inc_max", analyticSteps([]map[string]any{{"v": int64(3)}, {"v": int64(5)}, {"v": int64(2)}},
			arg("$v")), []any{int64(3), int64(5), int64(5)}},
		{"inc_max_min_direct/min", "inc_min", analyticSteps([]map[string]any{{"v": int64(3)}, {"v": int64(5)}, {"v": int64(2)}},
			arg("$v")), []any{int64(3), int64(3), int64(2)}},
		{"inc_collect_merge_direct/collect", "inc_collect", analyticSteps([]map[string]any{{"v": int64(1)}, {"v": int64(5)}, {"v": int64(2)}},
			arg("$v")), []any{[]any{int64(1)}, []any{int64(1), int64(5)}, []any{int64(1), int64(5), int64(2)}}},
		{"inc_sum_avg/sum", "inc_sum", analyticSteps(fx, arg("$w")),
			[]any{10.0, nil, 40.0, 80.0, 130.0, 190.0, 250.0}}, // nil w: nil, sum kept
		{"inc_sum_avg/avg", "inc_avg", analyticWith(analyticSteps(fx, arg("$v")), nil, func(i int) bool { return i != 1 }),
			[]any{1.0, 1.0, nil, 2.5, 10.0 / 3, 3.75, 3.3}}, // nil v: nil, state kept
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := analyticRun(t, tt.fn, tt.steps, nil)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("%s answers\n got %#v\nwant %#v", tt.fn, got, tt.want)
			}
		})
	}
}

// analyticGt is `a > n` with eKuiper's nil semantics (nil compares false).
func analyticGt(a any, n float64) bool {
	switch x := a.(type) {
	case int64:
		return float64(x) > n
	case float64:
		return x > n
	}
	return false
}

// TestAnalyticIncMergeSnapshots checks inc_merge_agg and inc_collect answer
// fresh values that later rows do not mutate (quirk inc_collect_merge_direct).
func TestAnalyticIncMergeSnapshots(t *testing.T) {
	objs := []map[string]any{{"o": map[string]any{"a": int64(1)}}, {"o": map[string]any{"b": int64(2)}}, {"o": map[string]any{"a": int64(3)}}}
	steps := analyticSteps(objs, func(r map[string]any) []any { return []any{r["o"]} })
	got := analyticRun(t, "inc_merge_agg", steps, nil)
	want := []any{
		map[string]any{"a": int64(1)},
		map[string]any{"a": int64(1), "b": int64(2)},
		map[string]any{"a": int64(3), "b": int64(2)},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("inc_merge_agg answers %#v, want %#v", got, want)
	}
}

func TestAnalyticChangedCols(t *testing.T) {
	names := []any{"color", "size"}
	cols := func(rows []map[string]any, prefix string, ignoreNull bool) []analyticStep {
		return analyticSteps(rows, func(r map[string]any) []any {
			return []any{prefix, ignoreNull, r["color"], r["size"], names}
		})
	}
	tests := []struct {
		name  string
		steps []analyticStep
		want  []any
	}{
		{"TestChanged13", cols(analyticDemo(), "tt_", true), []any{
			map[string]any{"tt_color": "red", "tt_size": int64(3)},
			map[string]any{"tt_color": "blue", "tt_size": int64(6)},
			map[string]any{"tt_size": int64(2)},
			map[string]any{"tt_color": "yellow", "tt_size": int64(4)},
			map[string]any{"tt_color": "red", "tt_size": int64(1)},
		}},
		{"TestChanged_event_time", cols([]map[string]any{
			{"color": "red", "size": int64(3)}, {"color": "blue", "size": int64(2)},
			{"color": "yellow", "size": int64(4)}, {"color": "red", "size": int64(1)},
		}, "tt_", true), []any{
			map[string]any{"tt_color": "red", "tt_size": int64(3)},
			map[string]any{"tt_color": "blue", "tt_size": int64(2)},
			map[string]any{"tt_color": "yellow", "tt_size": int64(4)},
			map[string]any{"tt_color": "red", "tt_size": int64(1)},
		}},
		{"ignore_null", cols([]map[string]any{
			{"color": "red", "size": int64(3)}, {"color": nil, "size": int64(3)}, {"color": "red", "size": int64(4)},
		}, "", true), []any{
			map[string]any{"color": "red", "size": int64(3)},
			nil, // nothing changed
			map[string]any{"size": int64(4)},
		}},
		{"keep_null", cols([]map[string]any{
			{"color": "red", "size": int64(3)}, {"color": nil, "size": int64(3)}, {"color": "red", "size": int64(3)},
		}, "c_", false), []any{
			map[string]any{"c_color": "red", "c_size": int64(3)},
			map[string]any{"c_color": nil},
			map[string]any{"c_color": "red"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := analyticRun(t, "changed_cols", tt.steps, nil)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("changed_cols answers\n got %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

func TestAnalyticErrors(t *testing.T) {
	tests := []struct {
		name    string
		fn      string
		steps   []analyticStep
		want    []any
		wantErr []string
	}{
		{"inc_last_value_direct", "inc_last_value", []analyticStep{
			{args: []any{int64(1), int64(1)}}, {args: []any{nil, int64(1)}}, {args: []any{int64(2), int64(1)}},
		}, []any{nil, nil, nil}, []string{"second argument is not a bool", "", "second argument is not a bool"}},
		{"acc_sum_string", "acc_sum", []analyticStep{
			{args: []any{int64(1)}}, {args: []any{"x"}}, {args: []any{int64(2)}},
		}, []any{1.0, nil, 3.0}, []string{"", "the value should be number", ""}},
		{"acc_count_bad_condition", "acc_count", []analyticStep{
			{args: []any{int64(1), "yes", false}},
		}, []any{nil}, []string{"start condition should be a bool"}},
		{"lag_bad_offset", "lag", []analyticStep{
			{args: []any{int64(1), "x"}},
		}, []any{nil}, []string{"offset should be a positive integer"}},
		{"had_changed_not_bool", "had_changed", []analyticStep{
			{args: []any{int64(1), int64(1)}},
		}, []any{nil}, []string{"ignoreNull argument should be a bool"}},
		{"changed_cols_no_names", "changed_cols", []analyticStep{
			{args: []any{"p", true, int64(1), []any{"a", "b"}}},
		}, []any{nil}, []string{"expects 1 column names"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := make([]string, len(tt.steps))
			got := analyticRun(t, tt.fn, tt.steps, errs)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("%s answers %#v, want %#v", tt.fn, got, tt.want)
			}
			for i, e := range tt.wantErr {
				if (e == "") != (errs[i] == "") || !strings.Contains(errs[i], e) {
					t.Errorf("%s step %d: error %q, want %q", tt.fn, i, errs[i], e)
				}
			}
		})
	}
}

func TestAnalyticValidate(t *testing.T) {
	field := &ast.FieldRef{Name: "x"}
	tests := []validateCase{
		{"lag_ok", "lag", []ast.Expr{field, &ast.IntegerLit{Val: 2}, field, &ast.BoolLit{Val: true}}, false},
		{"lag_zero_offset", "lag", []ast.Expr{field, &ast.IntegerLit{Val: 0}}, true},
		{"lag_float_offset", "lag", []ast.Expr{field, &ast.NumberLit{Val: 1.5}}, true},
		{"lag_ignore_null_string", "lag", []ast.Expr{field, &ast.IntegerLit{Val: 1}, field, &ast.StringLit{Val: "t"}}, true},
		{"changed_col_ok", "changed_col", []ast.Expr{&ast.BoolLit{Val: true}, field}, false},
		{"changed_col_int", "changed_col", []ast.Expr{&ast.IntegerLit{Val: 1}, field}, true},
		{"had_changed_string", "had_changed", []ast.Expr{&ast.StringLit{Val: "a"}, field}, true},
		{"changed_cols_ok", "changed_cols", []ast.Expr{&ast.StringLit{Val: "c_"}, &ast.BoolLit{Val: true}, field}, false},
		{"changed_cols_bad_prefix", "changed_cols", []ast.Expr{&ast.IntegerLit{Val: 1}, &ast.BoolLit{Val: true}, field}, true},
		{"acc_one", "acc_sum", []ast.Expr{field}, false},
		{"acc_three", "acc_max", []ast.Expr{field, field, field}, false},
		{"acc_two", "acc_count", []ast.Expr{field, field}, true},
	}
	runValidateCases(t, tests)
}

func TestAnalyticRegistration(t *testing.T) {
	checkRegisteredAs(t, Analytic, []string{
		"lag", "latest", "changed_col", "had_changed", "changed_cols",
		"acc_sum", "acc_min", "acc_max", "acc_avg", "acc_count",
		"inc_count", "inc_sum", "inc_avg", "inc_max", "inc_min", "inc_merge_agg", "inc_collect", "inc_last_value",
	})
}
