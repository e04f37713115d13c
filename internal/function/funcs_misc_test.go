package function

import (
	"regexp"
	"testing"
	"time"
)

func TestMiscCorpus(t *testing.T) {
	objs := []any{map[string]any{"a": int64(1), "b": int64(2)}, map[string]any{"a": int64(3), "b": int64(4)}}
	miscRun(t, miscTestEnv{}, []miscCase{
		// gen_func_misc/isnull_values
		{name: "isnull_values/a0", fn: "isnull", args: []any{false}, want: false},
		{name: "isnull_values/z", fn: "isnull", args: []any{int64(0)}, want: false},
		{name: "isnull_values/e", fn: "isnull", args: []any{""}, want: false},
		{name: "isnull_values/ar", fn: "isnull", args: []any{[]any{}}, want: false},
		// gen_func_conv/bypass_and_literal
		{name: "bypass_and_literal/1", fn: "bypass", args: []any{int64(5)}, want: int64(5)},
		{name: "bypass_and_literal/2", fn: "bypass", args: []any{arrayInts(1)}, want: arrayInts(1)},
		// gen_srf/extract_non_object
		{name: "extract_non_object/ok", fn: "extract", args: []any{map[string]any{"a": int64(1)}}, want: map[string]any{"a": int64(1)}},
		{name: "extract_non_object/err", fn: "extract", args: []any{arrayInts(1, 2)}, wantErr: "extract should use map"},
		// gen_srf/unnest_empty_nil (the "can't find the result" rows are the evaluator's)
		{name: "unnest_empty_nil/empty", fn: "unnest", args: []any{[]any{}}, want: []any{}},
		{name: "unnest_empty_nil/nil", fn: "unnest", args: []any{nil}, want: nil},
		{name: "unnest_empty_nil/one", fn: "unnest", args: []any{arrayInts(5)}, want: arrayInts(5)},
		// gen_srf/unnest_function_arg, unnest_limit, unnest_scalars, unnest_where, unnest_with_lag
		{name: "unnest_function_arg", fn: "unnest", args: []any{arrayInts(1, 2, 3)}, want: arrayInts(1, 2, 3)},
		{name: "unnest_scalars/strings", fn: "unnest", args: []any{[]any{"p"}}, want: []any{"p"}},
		// gen_srf/unnest_nested_arrays
		{name: "unnest_nested_arrays", fn: "unnest", args: []any{[]any{arrayInts(1, 2), arrayInts(3)}}, want: []any{arrayInts(1, 2), arrayInts(3)}},
		// gen_srf/unnest_non_array, TestSRFSQL/TestSingleSQLRule24
		{name: "unnest_non_array/int", fn: "unnest", args: []any{int64(5)}, wantErr: "should be array"},
		{name: "unnest_non_array/string", fn: "unnest", args: []any{"s"}, wantErr: "should be array"},
		// gen_srf/unnest_objects, unnest_objects_with_column, TestSRFSQL/TestSingleSQLRule18-21
		{name: "unnest_objects", fn: "unnest", args: []any{objs}, want: objs},
	})
}

func TestMiscFunctions(t *testing.T) {
	env := miscTestEnv{now: time.UnixMilli(1700000000137)}
	miscRun(t, env, []miscCase{
		{name: "isnull nil", fn: "isnull", args: []any{nil}, want: true},
		{name: "coalesce", fn: "coalesce", args: []any{nil, nil, int64(3), "x"}, want: int64(3)},
		{name: "coalesce all nil", fn: "coalesce", args: []any{nil, nil}, want: nil},
		{name: "tstamp", fn: "tstamp", args: nil, want: int64(1700000000137)},
		{name: "get_keyed_state default", fn: "get_keyed_state", args: []any{"k", "bigint", int64(7)}, want: int64(7)},
		{name: "get_keyed_state bad type", fn: "get_keyed_state", args: []any{"k", "int", int64(7)}, wantErr: "invalid state type"},
		{name: "delay", fn: "delay", args: []any{int64(1000), "v"}, want: "v"},
		{name: "extract nil", fn: "extract", args: []any{nil}, want: nil},
	})
}

func TestMiscSRFKinds(t *testing.T) {
	r := Builtins()
	for _, name := range []string{"unnest", "extract"} {
		t.Run(name, func(t *testing.T) {
			d, ok := r.Lookup(name)
			if !ok || d.Kind != SRF {
				t.Fatalf("%s: registered %v, kind %v; want SRF", name, ok, d)
			}
		})
	}
	for _, name := range []string{"meta", "mqtt", "window_start", "event_time", "rule_id", "props", "row_number"} {
		t.Run("not "+name, func(t *testing.T) {
			if _, ok := r.Lookup(name); ok {
				t.Fatalf("%s must be left to the evaluator", name)
			}
		})
	}
}

// gen_func_misc/random_properties: length(newuuid()) is 36 and two calls
// differ.
func TestMiscNewUUID(t *testing.T) {
	re := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[any]bool{}
	for i := 0; i < 100; i++ {
		u, err := miscCall(t, miscTestEnv{}, "newuuid")
		if err != nil {
			t.Fatal(err)
		}
		s, ok := u.(string)
		if !ok || len(s) != 36 || !re.MatchString(s) {
			t.Fatalf("newuuid() = %#v, want a version 4 UUID", u)
		}
		if seen[s] {
			t.Fatalf("newuuid() repeated %s", s)
		}
		seen[s] = true
	}
}
