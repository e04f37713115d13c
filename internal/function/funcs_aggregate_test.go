package function

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/sql/ast"
)

// aggTestEnv is the fake Env of the aggregate and analytic tests.
type aggTestEnv struct{}

func (aggTestEnv) Now() time.Time           { return time.UnixMilli(1700000000000) }
func (aggTestEnv) Location() *time.Location { return time.UTC }
func (aggTestEnv) RuleID() string           { return "rule1" }

// aggSensor is the `sensor` fixture of the gen_agg and gen_agg_windows
// suites (ids 1..9; id 4 has no hum, id 6 no temp).
func aggSensor() []map[string]any {
	return []map[string]any{
		{"id": int64(1), "dev": "a", "temp": 20.5, "hum": int64(50)},
		{"id": int64(2), "dev": "b", "temp": 22.0, "hum": int64(40)},
		{"id": int64(3), "dev": "a", "temp": 19.5, "hum": int64(55)},
		{"id": int64(4), "dev": "c", "temp": 30.0},
		{"id": int64(5), "dev": "b", "temp": 21.0, "hum": int64(45)},
		{"id": int64(6), "dev": "a", "hum": int64(60)},
		{"id": int64(7), "dev": "c", "temp": 25.5, "hum": int64(35)},
		{"id": int64(8), "dev": "a", "temp": 18.0, "hum": int64(70)},
		{"id": int64(9), "dev": "b", "temp": 23.25, "hum": int64(41)},
	}
}

// aggPick returns the sensor rows with the given ids, in that order.
func aggPick(ids ...int) []map[string]any {
	all := aggSensor()
	out := make([]map[string]any, len(ids))
	for i, id := range ids {
		out[i] = all[id-1]
	}
	return out
}

// aggCol is the column of field over rows (nil where absent).
func aggCol(rows []map[string]any, field string) []any {
	out := make([]any, len(rows))
	for i, r := range rows {
		out[i] = r[field]
	}
	return out
}

// aggRows is the `*` column of rows.
func aggRows(rows []map[string]any) []any {
	out := make([]any, len(rows))
	for i, r := range rows {
		out[i] = r
	}
	return out
}

// aggConst is a constant argument's column for n rows.
func aggConst(v any, n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func aggCall(t *testing.T, name string, cols ...[]any) (any, error) {
	t.Helper()
	d, ok := Builtins().Lookup(name)
	if !ok {
		t.Fatalf("function %s not registered", name)
	}
	if d.Kind != Aggregate || d.Aggregate == nil {
		t.Fatalf("%s: kind %v, want aggregate", name, d.Kind)
	}
	return d.Aggregate(aggTestEnv{}, cols)
}

func TestAggregateCorpus(t *testing.T) {
	w123, w456, w789 := aggPick(1, 2, 3), aggPick(4, 5, 6), aggPick(7, 8, 9)
	w1to4, w5to8 := aggPick(1, 2, 3, 4), aggPick(5, 6, 7, 8)
	w1to6, w4to7 := aggPick(1, 2, 3, 4, 5, 6), aggPick(4, 5, 6, 7)
	devA := aggPick(1, 3, 6, 8)
	ints := []any{int64(1), int64(2), int64(2)}
	fx4 := []map[string]any{
		{"v": int64(1), "k": "g"}, {"v": int64(2), "k": "g"}, {"v": int64(1), "k": "g"}, {"v": int64(3), "k": "g"},
	}
	tests := []struct {
		name string
		fn   string
		cols [][]any
		want any
	}{
		{"agg_all_nil/sum", "sum", [][]any{{nil, nil}}, nil},
		{"agg_all_nil/avg", "avg", [][]any{{nil, nil}}, nil},
		{"agg_all_nil/max", "max", [][]any{{nil, nil}}, nil},
		{"agg_all_nil/min", "min", [][]any{{nil, nil}}, nil},
		{"agg_all_nil/count", "count", [][]any{{nil, nil}}, int64(0)},
		{"agg_all_nil/collect", "collect", [][]any{{nil, nil}}, []any{nil, nil}},
		{"agg_expression/max", "max", [][]any{aggCol(w1to4, "temp")}, 30.0},
		{"agg_expression/min", "min", [][]any{aggCol(w1to4, "temp")}, 19.5},
		{"agg_expression/sum_hum", "sum", [][]any{aggCol(w1to4, "hum")}, int64(145)},
		{"agg_expression/count_hum", "count", [][]any{aggCol(w1to4, "hum")}, int64(3)},
		{"agg_expression/avg", "avg", [][]any{aggCol(w1to4, "temp")}, 23.0},
		{"agg_expression/w2_avg", "avg", [][]any{aggCol(w5to8, "temp")}, 21.5},
		{"agg_expression/w2_min", "min", [][]any{aggCol(w5to8, "temp")}, 18.0},
		{"agg_expression/w2_sum_hum", "sum", [][]any{aggCol(w5to8, "hum")}, int64(210)},
		// quirk avg_int_truncation: eKuiper answers the truncated int 1.
		{"avg_int_truncation/avg", "avg", [][]any{ints}, 5.0 / 3},
		{"avg_int_truncation/sum", "sum", [][]any{ints}, int64(5)},
		// eKuiper answers a group without values, and percentile_cont a
		// single value, before it checks the percentile's range; the
		// percentile is the argument's first non-null value.
		{"percentile_range_no_values/cont", "percentile_cont", [][]any{{nil, nil}, {int64(5), int64(5)}}, nil},
		{"percentile_range_no_values/disc", "percentile_disc", [][]any{{nil}, {-1.0}}, nil},
		{"percentile_range_single/cont", "percentile_cont", [][]any{{nil, 3.5}, {int64(-1), int64(-1)}}, 3.5},
		{"percentile_first_non_null/disc", "percentile_disc", [][]any{{1.0, 2.0, 3.0}, {nil, 1.0, 0.0}}, 3.0},
		{"collect/w1", "collect", [][]any{aggCol(w1to4, "temp")}, []any{20.5, 22.0, 19.5, 30.0}},
		{"collect/w2", "collect", [][]any{aggCol(w5to8, "temp")}, []any{21.0, nil, 25.5, 18.0}},
		{"collect/devs", "collect", [][]any{aggCol(w5to8, "dev")}, []any{"b", "a", "c", "a"}},
		{"collect/empty_group", "collect", [][]any{{}}, []any(nil)},
		{"count_star_vs_col/star", "count", [][]any{aggRows(fx4)}, int64(4)},
		{"count_star_vs_col/col", "count", [][]any{{int64(1), nil, int64(2), nil}}, int64(2)},
		{"count_sum_avg/count", "count", [][]any{aggRows(w1to6)}, int64(6)},
		{"count_sum_avg/count_hum", "count", [][]any{aggCol(w1to6, "hum")}, int64(5)},
		{"count_sum_avg/sum_hum", "sum", [][]any{aggCol(w1to6, "hum")}, int64(250)},
		{"count_sum_avg/sum_temp", "sum", [][]any{aggCol(w1to6, "temp")}, 113.0},
		// quirk count_sum_avg: eKuiper answers the integer 50.
		{"count_sum_avg/avg_hum", "avg", [][]any{aggCol(w1to6, "hum")}, 50.0},
		{"count_sum_avg/avg_temp", "avg", [][]any{aggCol(w1to6, "temp")}, 22.6},
		{"count_window/empty", "count", [][]any{{}}, int64(0)},
		{"group_by_key/max_id", "max", [][]any{aggCol(devA, "id")}, int64(8)},
		{"group_order_desc_limit/sum_a", "sum", [][]any{aggCol(devA, "hum")}, int64(235)},
		{"group_order_desc_limit/sum_c", "sum", [][]any{aggCol(aggPick(4, 7), "hum")}, int64(35)},
		{"last_value/w1_temp", "last_value", [][]any{aggCol(w123, "temp"), aggConst(true, 3)}, 19.5},
		{"last_value/w1_temp_nn", "last_value", [][]any{aggCol(w123, "temp"), aggConst(false, 3)}, 19.5},
		{"last_value/w2_temp", "last_value", [][]any{aggCol(w456, "temp"), aggConst(true, 3)}, 21.0},
		{"last_value/w2_temp_nn", "last_value", [][]any{aggCol(w456, "temp"), aggConst(false, 3)}, nil},
		{"last_value/w2_hum", "last_value", [][]any{aggCol(w456, "hum"), aggConst(true, 3)}, int64(60)},
		{"last_value/star", "last_value", [][]any{aggRows(w456), aggConst(true, 3)}, aggSensor()[5]},
		{"last_value/empty", "last_value", [][]any{{}, {}}, nil},
		{"max_strings/max", "max", [][]any{{"pear", "apple", "zoo"}}, "zoo"},
		{"max_strings/min", "min", [][]any{{"pear", "apple", "zoo"}}, "apple"},
		{"max/mixed_keeps_type", "max", [][]any{{1.5, int64(3), int64(2)}}, int64(3)},
		{"median_even_int", "median", [][]any{{int64(4), int64(1), int64(3), int64(2)}}, 2.5},
		{"median_first_float", "median", [][]any{{-2.5, int64(16), int64(15)}}, 15.0}, // as eKuiper: a float median when the first value is a float
		{"merge_agg/w1", "merge_agg", [][]any{aggRows(w123)},
			map[string]any{"dev": "a", "hum": int64(55), "id": int64(3), "temp": 19.5}},
		{"merge_agg/w2", "merge_agg", [][]any{aggRows(w456)},
			map[string]any{"dev": "a", "hum": int64(60), "id": int64(6), "temp": 21.0}},
		{"merge_agg/non_objects", "merge_agg", [][]any{{int64(1), "x", nil}}, nil},
		// quirk percentile_edges: eKuiper fails percentile_cont(x, 0).
		{"percentile_edges/p0", "percentile_cont", [][]any{{10.0, 20.0, 30.0, 40.0}, aggConst(int64(0), 4)}, 10.0},
		{"percentile_edges/p1", "percentile_cont", [][]any{{10.0, 20.0, 30.0, 40.0}, aggConst(int64(1), 4)}, 40.0},
		{"percentile_edges/d0", "percentile_disc", [][]any{{10.0, 20.0, 30.0, 40.0}, aggConst(int64(0), 4)}, 10.0},
		{"percentile_edges/d1", "percentile_disc", [][]any{{10.0, 20.0, 30.0, 40.0}, aggConst(int64(1), 4)}, 40.0},
		{"percentile/alias", "percentile", [][]any{{10.0, 20.0, 30.0, 40.0}, aggConst(0.5, 4)}, 20.0},
		{"percentile/small_rank", "percentile_cont", [][]any{{1.0, 2.0, 3.0}, aggConst(0.25, 3)}, 1.0},
		{"percentile/empty", "percentile_cont", [][]any{{}, {}}, nil},
		{"stddev_var_int/stddev", "stddev", [][]any{aggCol(w123, "hum")}, 6.236095644623236},
		{"stddev_var_int/stddevs", "stddevs", [][]any{aggCol(w123, "hum")}, 7.637626158259733},
		{"stddev_var_int/var", "var", [][]any{aggCol(w123, "hum")}, 38.88888888888889},
		{"stddev_var_int/vars", "vars", [][]any{aggCol(w123, "hum")}, 58.333333333333336},
		{"stddevs/single_value", "stddevs", [][]any{{1.0}}, nil},
		{"var/empty", "var", [][]any{{nil}}, nil},
		// eKuiper: +Inf, which no JSON sink writes.
		{"stddev/overflow", "stddev", [][]any{{int64(2), 2e300, int64(-2)}}, nil},
		{"vars/overflow", "vars", [][]any{{-1e308, 1e308}}, nil},
		// quirk sum_float_then_int: eKuiper fails with "requires float64 but found int(2)".
		{"sum_float_then_int/sum", "sum", [][]any{{1.5, int64(2), int64(3)}}, 6.5},
		{"sum_float_then_int/avg", "avg", [][]any{{1.5, int64(2), int64(3)}}, 6.5 / 3},
		{"sum_float_then_int/min", "min", [][]any{{1.5, int64(2), int64(3)}}, 1.5},
		{"sum_int_then_float", "sum", [][]any{{int64(2), 1.5}}, 3.5},
		{"sum_string_error/w2", "sum", [][]any{{int64(2), int64(3)}}, int64(5)},
		{"deduplicate_latest/w1", "deduplicate", [][]any{aggCol(w123, "dev"), aggConst(false, 3), aggRows(w123)}, nil},
		{"deduplicate_latest/w2", "deduplicate", [][]any{aggCol(w456, "dev"), aggConst(false, 3), aggRows(w456)}, aggSensor()[5]},
		{"deduplicate_latest/w3", "deduplicate", [][]any{aggCol(w789, "dev"), aggConst(false, 3), aggRows(w789)}, aggSensor()[8]},
		{"deduplicate_objects", "deduplicate", [][]any{aggCol(fx4, "v"), aggConst(true, 4), aggRows(fx4)},
			[]any{fx4[0], fx4[1], fx4[3]}},
		{"deduplicate/no_rows_column", "deduplicate", [][]any{{int64(1), int64(2), int64(1)}, aggConst(true, 3)},
			[]any{int64(1), int64(2)}},
		{"collections_count/dedup", "deduplicate", [][]any{aggCol(w123, "dev"), aggConst(true, 3), aggRows(w123)},
			[]any{aggSensor()[0], aggSensor()[1]}},
		{"collections_countslide/lhn", "last_value", [][]any{aggCol(w1to4, "hum"), aggConst(false, 4)}, nil},
		{"collections_countslide/lh", "last_value", [][]any{aggCol(w1to4, "hum"), aggConst(true, 4)}, int64(55)},
		{"collections_countslide/merge", "merge_agg", [][]any{aggRows(w1to4)},
			map[string]any{"dev": "c", "hum": int64(55), "id": int64(4), "temp": 30.0}},
		{"grouped_session/avg_a", "avg", [][]any{aggCol(aggPick(1, 3), "temp")}, 20.0},
		{"grouped_session/avg_absent", "avg", [][]any{aggCol(aggPick(6), "temp")}, nil},
		{"basic_hopping/w2_avg", "avg", [][]any{aggCol(w1to6, "temp")}, 22.6},
		{"basic_hopping/w3_avg", "avg", [][]any{aggCol(w4to7, "temp")}, 25.5},
		{"basic_hopping/w3_sum", "sum", [][]any{aggCol(w4to7, "hum")}, int64(140)},
		{"basic_hopping/w3_max", "max", [][]any{aggCol(w4to7, "hum")}, int64(60)},
		{"basic_hopping/w1_avg", "avg", [][]any{aggCol(w123, "temp")}, 20.666666666666668},
		{"join_collect", "collect", [][]any{{int64(1), int64(2), nil}}, []any{int64(1), int64(2), nil}},
		{"stats_count/w1_sd", "stddev", [][]any{aggCol(w123, "temp")}, 1.0274023338281628},
		{"stats_count/w1_var", "var", [][]any{aggCol(w123, "temp")}, 1.0555555555555556},
		{"stats_count/w1_median", "median", [][]any{aggCol(w123, "temp")}, 20.5},
		{"stats_count/w2_sd", "stddev", [][]any{aggCol(w456, "temp")}, 4.5},
		{"stats_count/w2_var", "var", [][]any{aggCol(w456, "temp")}, 20.25},
		{"stats_count/w2_median", "median", [][]any{aggCol(w456, "temp")}, 25.5},
		{"stats_hopping/w2_sd", "stddev", [][]any{aggCol(w1to6, "temp")}, 3.786819245752297},
		{"stats_hopping/w2_var", "var", [][]any{aggCol(w1to6, "temp")}, 14.339999999999998},
		{"stats_hopping/w2_median", "median", [][]any{aggCol(w1to6, "temp")}, 21.0},
		{"stats_hopping/w3_sd", "stddev", [][]any{aggCol(w4to7, "temp")}, 3.6742346141747673},
		{"stats_hopping/w3_var", "var", [][]any{aggCol(w4to7, "temp")}, 13.5},
		{"stats_sliding/w2_sd", "stddev", [][]any{aggCol(aggPick(1, 2), "temp")}, 0.75},
		{"stats_sliding/w2_var", "var", [][]any{aggCol(aggPick(1, 2), "temp")}, 0.5625},
		{"stats_sliding/w2_median", "median", [][]any{aggCol(aggPick(1, 2), "temp")}, 21.25},
		{"stats_sliding/w4_sd", "stddev", [][]any{aggCol(aggPick(2, 3, 4), "temp")}, 4.478342947514801},
		{"stats_sliding/w4_var", "var", [][]any{aggCol(aggPick(2, 3, 4), "temp")}, 20.055555555555557},
		{"stats_sliding/w5_sd", "stddev", [][]any{aggCol(aggPick(3, 4, 5), "temp")}, 4.636809247747852},
		{"stats_sliding/w7_median", "median", [][]any{aggCol(aggPick(5, 6, 7), "temp")}, 23.25},
		{"stats_sliding/w7_var", "var", [][]any{aggCol(aggPick(5, 6, 7), "temp")}, 5.0625},
		{"stats_sliding/single_sd", "stddev", [][]any{{18.0}}, 0.0},
		{"stats_state/w1_sd", "stddev", [][]any{aggCol(w1to4, "temp")}, 4.138236339311712},
		{"stats_state/w1_var", "var", [][]any{aggCol(w1to4, "temp")}, 17.125},
		{"stats_state/w1_median", "median", [][]any{aggCol(w1to4, "temp")}, 21.25},
		// quirk stats_state: eKuiper fails median with "<nil> should be number".
		{"stats_state/w2_median", "median", [][]any{aggCol(aggPick(6, 7), "temp")}, 25.5},
		{"samplestats_count/w1_sds", "stddevs", [][]any{aggCol(w123, "temp")}, 1.2583057392117916},
		{"samplestats_count/w1_vs", "vars", [][]any{aggCol(w123, "temp")}, 1.5833333333333333},
		{"samplestats_count/w2_sds", "stddevs", [][]any{aggCol(w456, "temp")}, 6.363961030678928},
		{"samplestats_count/w2_vs", "vars", [][]any{aggCol(w456, "temp")}, 40.5},
		{"samplestats_state/sds", "stddevs", [][]any{aggCol(w1to4, "temp")}, 4.7784237289438165},
		{"samplestats_state/vs", "vars", [][]any{aggCol(w1to4, "temp")}, 22.833333333333332},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := aggCall(t, tt.fn, tt.cols...)
			if err != nil {
				t.Fatalf("%s: unexpected error %v", tt.fn, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("%s = %#v, want %#v", tt.fn, got, tt.want)
			}
		})
	}
}

func TestAggregatePercentileWindows(t *testing.T) {
	type quad struct{ pc, pd, pc9, pd25 float64 }
	tests := []struct {
		name string
		ids  []int
		want quad
	}{
		{"percentile_count/w1", []int{1, 2, 3}, quad{20.0, 20.5, 21.25, 19.5}},
		{"percentile_count/w2", []int{4, 5, 6}, quad{21.0, 21.0, 25.5, 21.0}},
		{"percentile_countslide/w1", []int{1, 2, 3, 4}, quad{20.5, 20.5, 26.0, 19.5}},
		{"percentile_countslide/w2", []int{3, 4, 5, 6}, quad{20.25, 21.0, 25.5, 19.5}},
		{"percentile_countslide/w3", []int{5, 6, 7, 8}, quad{19.5, 21.0, 23.25, 18.0}},
		{"percentile_hopping/w2", []int{1, 2, 3, 4, 5, 6}, quad{20.75, 21.0, 26.0, 20.5}},
		{"percentile_hopping/w3", []int{4, 5, 6, 7}, quad{23.25, 25.5, 27.75, 21.0}},
		{"percentile_session/w3", []int{7}, quad{25.5, 25.5, 25.5, 25.5}},
		{"percentile_state/w2", []int{6, 7}, quad{25.5, 25.5, 25.5, 25.5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			temps := aggCol(aggPick(tt.ids...), "temp")
			n := len(temps)
			for _, c := range []struct {
				fn   string
				p    float64
				want float64
			}{
				{"percentile_cont", 0.5, tt.want.pc},
				{"percentile_disc", 0.5, tt.want.pd},
				{"percentile_cont", 0.9, tt.want.pc9},
				{"percentile_disc", 0.25, tt.want.pd25},
			} {
				got, err := aggCall(t, c.fn, temps, aggConst(c.p, n))
				if err != nil {
					t.Fatalf("%s(%v): %v", c.fn, c.p, err)
				}
				if got != c.want {
					t.Errorf("%s(%v) = %#v, want %v", c.fn, c.p, got, c.want)
				}
			}
		})
	}
}

func TestAggregateErrors(t *testing.T) {
	tests := []struct {
		name    string
		fn      string
		cols    [][]any
		wantErr string
	}{
		{"sum_string_error", "sum", [][]any{{int64(1), "x"}}, "requires int but found string(x)"},
		{"sum_float_then_string", "sum", [][]any{{1.5, "x"}}, "requires float64 but found string(x)"},
		{"avg_string", "avg", [][]any{{"x"}}, "requires int but found string(x)"},
		{"max_mixed", "max", [][]any{{int64(1), "x"}}, "requires int but found string(x)"},
		{"max_bool", "max", [][]any{{true}}, "requires number, string or datetime but found bool(true)"},
		{"median_string", "median", [][]any{{"x"}}, "string(x) should be number"},
		{"stddev_string", "stddev", [][]any{{1.0, "x"}}, "string(x) should be number"},
		{"percentile_range", "percentile_cont", [][]any{{1.0, 2.0}, {1.5, 1.5}}, "outside of range"},
		{"percentile_disc_range", "percentile_disc", [][]any{{1.0}, {-1.0}}, "outside of range"},
		{"percentile_type", "percentile_disc", [][]any{{1.0}, {"x"}}, "should be a number"},
		{"last_value_not_bool", "last_value", [][]any{{int64(1)}, {int64(1)}}, "second argument is not a bool"},
		{"deduplicate_not_bool", "deduplicate", [][]any{{int64(1)}, {"x"}}, "second argument is not a bool"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := aggCall(t, tt.fn, tt.cols...)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("%s = %#v, %v; want error containing %q", tt.fn, got, err, tt.wantErr)
			}
		})
	}
}

// TestAggregateSlidingDeduplicate replays TestWindowRule10: deduplicate over
// a growing sliding window answers the new row or nil for a repeated key.
func TestAggregateSlidingDeduplicate(t *testing.T) {
	colors := []string{"red", "blue", "blue", "yellow", "red"}
	want := []any{"red", "blue", nil, "yellow", nil}
	var rows []map[string]any
	for i, c := range colors {
		rows = append(rows, map[string]any{"color": c, "size": int64(i)})
		got, err := aggCall(t, "deduplicate", aggCol(rows, "color"), aggConst(false, len(rows)), aggRows(rows))
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		var color any
		if m, ok := got.(map[string]any); ok {
			color = m["color"]
		} else if got != nil {
			t.Fatalf("step %d: got %#v, want a row or nil", i, got)
		}
		if color != want[i] {
			t.Errorf("step %d: color %#v, want %#v", i, color, want[i])
		}
	}
}

func TestAggregateMergeDoesNotAliasInput(t *testing.T) {
	row := map[string]any{"a": int64(1)}
	got, err := aggCall(t, "merge_agg", []any{row})
	if err != nil {
		t.Fatal(err)
	}
	got.(map[string]any)["a"] = int64(2)
	if row["a"] != int64(1) {
		t.Fatalf("merge_agg result aliases its input row")
	}
}

func TestAggregateValidate(t *testing.T) {
	num := func(v float64) ast.Expr { return &ast.NumberLit{Val: v} }
	field := &ast.FieldRef{Name: "x"}
	tests := []validateCase{
		{"percentile_ok", "percentile_cont", []ast.Expr{field, num(0.5)}, false},
		{"percentile_int_ok", "percentile_disc", []ast.Expr{field, &ast.IntegerLit{Val: 1}}, false},
		{"percentile_too_big", "percentile_cont", []ast.Expr{field, num(1.5)}, true},
		{"percentile_string", "percentile", []ast.Expr{field, &ast.StringLit{Val: "a"}}, true},
		{"percentile_expr", "percentile_cont", []ast.Expr{field, field}, false},
		{"last_value_bool", "last_value", []ast.Expr{field, &ast.BoolLit{Val: true}}, false},
		{"last_value_int", "last_value", []ast.Expr{field, &ast.IntegerLit{Val: 1}}, true},
		{"deduplicate_string", "deduplicate", []ast.Expr{field, &ast.StringLit{Val: "x"}}, true},
		{"deduplicate_paren_bool", "deduplicate", []ast.Expr{field, &ast.ParenExpr{X: &ast.BoolLit{}}}, false},
	}
	runValidateCases(t, tests)
}

func TestAggregateRegistration(t *testing.T) {
	checkRegisteredAs(t, Aggregate, []string{
		"count", "avg", "sum", "max", "min", "collect", "merge_agg", "last_value", "deduplicate",
		"median", "stddev", "stddevs", "var", "vars", "percentile_cont", "percentile", "percentile_disc",
	})
}
