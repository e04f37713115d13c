package function

import (
	"testing"
)

// arrayInts builds an []any of int64.
func arrayInts(xs ...int64) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

func TestArrayCorpus(t *testing.T) {
	miscRun(t, miscTestEnv{}, []miscCase{
		// gen_func_array/array_contains_nil
		{name: "array_contains_nil/1", fn: "array_contains", args: []any{[]any{int64(1), nil}, nil}, want: true},
		{name: "array_contains_nil/2", fn: "array_contains", args: []any{arrayInts(1), int64(2)}, want: false},
		// gen_func_array/array_create_empty
		{name: "array_create_empty", fn: "array_create", args: nil, want: nil},
		// gen_func_array/array_distinct_only
		{name: "array_distinct_only/ints", fn: "array_distinct", args: []any{arrayInts(3, 1, 2, 3, 1)}, want: arrayInts(3, 1, 2)},
		{name: "array_distinct_only/strings", fn: "array_distinct", args: []any{[]any{"y", "x", "y"}}, want: []any{"y", "x"}},
		{name: "array_distinct_only/arrays", fn: "array_distinct", args: []any{[]any{arrayInts(1), arrayInts(1)}}, want: []any{arrayInts(1), arrayInts(1)}},
		{name: "array_distinct_only/empty", fn: "array_distinct", args: []any{[]any{}}, want: nil},
		// gen_func_array/array_flatten_deep
		{name: "array_flatten_deep/1", fn: "array_flatten", args: []any{[]any{[]any{int64(1), arrayInts(2, 3)}, []any{}, arrayInts(4)}},
			want: []any{int64(1), arrayInts(2, 3), int64(4)}},
		{name: "array_flatten_deep/2", fn: "array_flatten", args: []any{[]any{int64(1), arrayInts(2)}}, want: arrayInts(1, 2)},
		// gen_func_array/array_func_wrong_type
		{name: "array_func_wrong_type/ok", fn: "array_max", args: []any{arrayInts(1, 2)}, want: int64(2)},
		{name: "array_func_wrong_type/err", fn: "array_max", args: []any{"notarray"}, wantErr: "first argument should be array of interface{}"},
		// gen_func_array/array_max_mixed (quirk: eKuiper gives mx 2 for [1, 2.5] and an error for [2.5, 1])
		{name: "array_max_mixed/max1", fn: "array_max", args: []any{[]any{int64(1), 2.5}}, want: 2.5},
		{name: "array_max_mixed/min1", fn: "array_min", args: []any{[]any{int64(1), 2.5}}, want: int64(1)},
		{name: "array_max_mixed/max2", fn: "array_max", args: []any{[]any{2.5, int64(1)}}, want: 2.5},
		{name: "array_max_mixed/min2", fn: "array_min", args: []any{[]any{2.5, int64(1)}}, want: int64(1)},
		// gen_func_array/array_position
		{name: "array_position/p1", fn: "array_position", args: []any{arrayInts(3, 1, 2, 3), int64(3)}, want: int64(0)},
		{name: "array_position/lp1", fn: "array_last_position", args: []any{arrayInts(3, 1, 2, 3), int64(3)}, want: int64(3)},
		{name: "array_position/p2_1", fn: "array_position", args: []any{arrayInts(2, 5), int64(2)}, want: int64(0)},
		{name: "array_position/p2", fn: "array_position", args: []any{[]any{}, int64(9)}, want: int64(-1)},
		{name: "array_position/lp2", fn: "array_last_position", args: []any{[]any{}, int64(9)}, want: int64(-1)},
		{name: "array_position/p3", fn: "array_position", args: []any{[]any{"x", "y", "x"}, "x"}, want: int64(0)},
		{name: "array_position/lp3", fn: "array_last_position", args: []any{[]any{"x", "y", "x"}, "x"}, want: int64(2)},
		{name: "array_position/p2_3", fn: "array_position", args: []any{[]any{"y", "z"}, int64(2)}, want: int64(-1)},
		// gen_func_array/array_position_literal_int (quirk: eKuiper never matches an integer literal: -1/false twice)
		{name: "array_position_literal_int/p_int", fn: "array_position", args: []any{arrayInts(2, 1), int64(1)}, want: int64(1)},
		{name: "array_position_literal_int/c_int", fn: "array_contains", args: []any{arrayInts(2, 1), int64(1)}, want: true},
		{name: "array_position_literal_int/p_float", fn: "array_position", args: []any{[]any{2.0, 1.0}, int64(1)}, want: int64(-1)},
		{name: "array_position_literal_int/c_float", fn: "array_contains", args: []any{[]any{2.0, 1.0}, int64(1)}, want: false},
		// gen_func_array/array_position_types (quirk: eKuiper gives p1 -1)
		{name: "array_position_types/p1", fn: "array_position", args: []any{[]any{int64(2), int64(1), 1.0, "1"}, int64(1)}, want: int64(1)},
		{name: "array_position_types/pf", fn: "array_position", args: []any{[]any{int64(2), int64(1), 1.0, "1"}, 1.0}, want: int64(2)},
		{name: "array_position_types/cs", fn: "array_contains", args: []any{[]any{int64(2), int64(1), 1.0, "1"}, "1"}, want: true},
		// gen_func_array/array_remove_distinct (quirk: eKuiper removes in place, so d was [1,2,3] and ["y","x"])
		{name: "array_remove_distinct/r1", fn: "array_remove", args: []any{arrayInts(3, 1, 2, 3), int64(3)}, want: arrayInts(1, 2)},
		{name: "array_remove_distinct/d1", fn: "array_distinct", args: []any{arrayInts(3, 1, 2, 3)}, want: arrayInts(3, 1, 2)},
		{name: "array_remove_distinct/r2", fn: "array_remove", args: []any{[]any{}, int64(9)}, want: []any{}},
		{name: "array_remove_distinct/d2", fn: "array_distinct", args: []any{[]any{}}, want: nil},
		{name: "array_remove_distinct/r3", fn: "array_remove", args: []any{[]any{"x", "y", "x"}, "x"}, want: []any{"y"}},
		{name: "array_remove_distinct/d3", fn: "array_distinct", args: []any{[]any{"x", "y", "x"}}, want: []any{"x", "y"}},
		// gen_func_array/array_sort_flatten
		{name: "array_sort_flatten/s1", fn: "array_sort", args: []any{arrayInts(3, 1, 2)}, want: arrayInts(1, 2, 3)},
		{name: "array_sort_flatten/f1", fn: "array_flatten", args: []any{[]any{arrayInts(1, 2), arrayInts(3), []any{}}}, want: arrayInts(1, 2, 3)},
		{name: "array_sort_flatten/s2", fn: "array_sort", args: []any{[]any{"b", "a"}}, want: []any{"a", "b"}},
		{name: "array_sort_flatten/f2", fn: "array_flatten", args: []any{[]any{[]any{[]any{"x"}}, []any{"y"}}}, want: []any{[]any{"x"}, "y"}},
		// gen_func_array/array_sort_mixed
		{name: "array_sort_mixed/nums", fn: "array_sort", args: []any{[]any{int64(3), 1.5, int64(2)}}, want: []any{1.5, int64(2), int64(3)}},
		{name: "array_sort_mixed/bools", fn: "array_sort", args: []any{[]any{true, false}}, want: []any{false, true}},
		// gen_func_array/cardinality_non_array (quirk kept: 0 for non-arrays)
		{name: "cardinality_non_array/string", fn: "cardinality", args: []any{"abc"}, want: int64(0)},
		{name: "cardinality_non_array/object", fn: "cardinality", args: []any{map[string]any{"a": int64(1)}}, want: int64(0)},
		// gen_func_array/contains
		{name: "contains/c1", fn: "array_contains", args: []any{arrayInts(3, 1, 2, 3), int64(3)}, want: true},
		{name: "contains/ca1", fn: "array_contains_any", args: []any{arrayInts(3, 1, 2, 3), arrayInts(2, 5)}, want: true},
		{name: "contains/c2", fn: "array_contains", args: []any{[]any{}, int64(9)}, want: false},
		{name: "contains/ca2", fn: "array_contains_any", args: []any{[]any{}, arrayInts(1)}, want: false},
		{name: "contains/c3", fn: "array_contains", args: []any{[]any{"x", "y", "x"}, "x"}, want: true},
		{name: "contains/ca3", fn: "array_contains_any", args: []any{[]any{"x", "y", "x"}, []any{"y", "z"}}, want: true},
		// gen_func_array/element_at_map
		{name: "element_at_map", fn: "element_at", args: []any{map[string]any{"k": int64(1), "j": int64(2)}, "k"}, want: int64(1)},
		// gen_func_array/element_at_out_of_range
		{name: "element_at_out_of_range", fn: "element_at", args: []any{arrayInts(1, 2), int64(5)}, wantErr: "index out of range"},
		// gen_func_array/kvpair_array_to_obj
		{name: "kvpair_array_to_obj/1", fn: "kvpair_array_to_obj",
			args: []any{[]any{map[string]any{"key": "a", "value": int64(1)}, map[string]any{"key": "b", "value": "x"}}},
			want: map[string]any{"a": int64(1), "b": "x"}},
		{name: "kvpair_array_to_obj/empty", fn: "kvpair_array_to_obj", args: []any{[]any{}}, want: nil},
		// gen_func_array/repeat_field_count
		{name: "repeat_field_count/1", fn: "repeat", args: []any{"ab", int64(3)}, want: []any{"ab", "ab", "ab"}},
		{name: "repeat_field_count/2", fn: "repeat", args: []any{int64(7), int64(1)}, want: arrayInts(7)},
		{name: "repeat_field_count/3", fn: "repeat", args: []any{arrayInts(1), int64(0)}, want: []any{}},
		// gen_func_array/sequence (eKuiper fails on integer literals: "first argument should be int")
		{name: "sequence/s", fn: "sequence", args: []any{int64(1), int64(5)}, want: arrayInts(1, 2, 3, 4, 5)},
		{name: "sequence/sd", fn: "sequence", args: []any{int64(10), int64(0), int64(-3)}, want: arrayInts(10, 7, 4, 1)},
		{name: "sequence/s2", fn: "sequence", args: []any{int64(0), int64(6), int64(2)}, want: arrayInts(0, 2, 4, 6)},
		{name: "sequence/sf1", fn: "sequence", args: []any{int64(3), int64(6)}, want: arrayInts(3, 4, 5, 6)},
		{name: "sequence/sf2", fn: "sequence", args: []any{int64(2), int64(2)}, want: arrayInts(2)},
		// gen_func_array/set_ops
		{name: "set_ops/i1", fn: "array_intersect", args: []any{arrayInts(1, 2, 2, 3), arrayInts(2, 3, 4)}, want: arrayInts(2, 3)},
		{name: "set_ops/u1", fn: "array_union", args: []any{arrayInts(1, 2, 2, 3), arrayInts(2, 3, 4)}, want: arrayInts(1, 2, 3, 4)},
		{name: "set_ops/e1", fn: "array_except", args: []any{arrayInts(1, 2, 2, 3), arrayInts(2, 3, 4)}, want: arrayInts(1)},
		{name: "set_ops/i2", fn: "array_intersect", args: []any{[]any{"p", "q"}, []any{}}, want: nil},
		{name: "set_ops/u2", fn: "array_union", args: []any{[]any{"p", "q"}, []any{}}, want: []any{"p", "q"}},
		{name: "set_ops/e2", fn: "array_except", args: []any{[]any{"p", "q"}, []any{}}, want: []any{"p", "q"}},
		// diff_funcs/array_except_nils
		{name: "except nil first", fn: "array_except", args: []any{nil, map[string]any{"k": int64(1)}}, want: nil},
		{name: "except nil second", fn: "array_except", args: []any{arrayInts(1, 1), nil}, want: arrayInts(1)},
		{name: "except bad second", fn: "array_except", args: []any{[]any{}, 2.5}, wantErr: "second argument should be array"},
	})
}

func TestArrayFunctions(t *testing.T) {
	miscRun(t, miscTestEnv{}, []miscCase{
		{name: "cardinality", fn: "array_cardinality", args: []any{arrayInts(1, 2)}, want: int64(2)},
		{name: "cardinality nil", fn: "cardinality", args: []any{nil}, want: int64(0)},
		{name: "array_create", fn: "array_create", args: []any{int64(1), nil, "a", nil}, want: []any{int64(1), "a"}},
		{name: "array_create_all_nil", fn: "array_create", args: []any{nil, nil}, want: nil},
		{name: "element_at negative", fn: "element_at", args: []any{arrayInts(1, 2, 3), int64(-1)}, want: int64(3)},
		{name: "element_at too negative", fn: "element_at", args: []any{arrayInts(1, 2, 3), int64(-4)}, wantErr: "index out of range"},
		{name: "element_at missing key", fn: "element_at", args: []any{map[string]any{}, "k"}, want: nil},
		{name: "element_at bad", fn: "element_at", args: []any{"s", int64(1)}, wantErr: "first argument should be"},
		// A null array holds nothing, as in eKuiper.
		{name: "nil array", fn: "array_position", args: []any{nil, int64(1)}, want: int64(-1)},
		{name: "nil array last", fn: "array_last_position", args: []any{nil, "x"}, want: int64(-1)},
		{name: "nil array contains", fn: "array_contains", args: []any{nil, nil}, want: false},
		{name: "contains array element", fn: "array_contains", args: []any{[]any{arrayInts(1)}, arrayInts(1)}, want: true},
		{name: "contains_any not array", fn: "array_contains_any", args: []any{arrayInts(1), "x"}, wantErr: "second argument should be array"},
		{name: "max strings", fn: "array_max", args: []any{[]any{"b", "c", "a"}}, want: "c"},
		{name: "min strings", fn: "array_min", args: []any{[]any{"b", "c", "a"}}, want: "a"},
		{name: "max kinds", fn: "array_max", args: []any{[]any{"b", int64(1)}}, wantErr: "requires string but found int64(1)"},
		{name: "max nil element", fn: "array_max", args: []any{[]any{int64(1), nil}}, want: nil},
		{name: "max empty", fn: "array_max", args: []any{[]any{}}, want: nil},
		{name: "max bool", fn: "array_max", args: []any{[]any{true}}, wantErr: "array elements should be"},
		{name: "distinct int vs float", fn: "array_distinct", args: []any{[]any{int64(1), 1.0, int64(1)}}, want: []any{int64(1), 1.0}},
		{name: "concat", fn: "array_concat", args: []any{arrayInts(1), nil, []any{"a"}}, want: []any{int64(1), "a"}},
		{name: "concat bad", fn: "array_concat", args: []any{arrayInts(1), "x"}, wantErr: "argument 2 should be array"},
		{name: "join", fn: "array_join", args: []any{[]any{"a", nil, "c"}, ","}, want: "a,c"},
		{name: "join repl", fn: "array_join", args: []any{[]any{"a", nil, "c"}, "-", "?"}, want: "a-?-c"},
		{name: "join numbers", fn: "array_join", args: []any{[]any{int64(1), 2.5, true}, ","}, want: "1,2.5,true"},
		{name: "join nil without replacement", fn: "array_join", args: []any{[]any{"a", nil, "b"}, "-"}, want: "a-b"},
		{name: "join object", fn: "array_join", args: []any{[]any{map[string]any{}}, ","}, wantErr: "array elements should be string"},
		{name: "map", fn: "array_map", args: []any{"upper_or_missing", arrayInts(1)}, wantErr: "unknown built-in function"},
		{name: "map isnull", fn: "array_map", args: []any{"isnull", []any{nil, int64(1)}}, want: []any{true, false}},
		{name: "map non-scalar arity", fn: "array_map", args: []any{"coalesce", arrayInts(1)}, want: arrayInts(1)},
		{name: "map two-arg", fn: "array_map", args: []any{"array_contains", arrayInts(1)}, wantErr: "exactly one argument"},
		{name: "repeat negative", fn: "repeat", args: []any{"a", int64(-1)}, wantErr: "between 0"},
		{name: "repeat float count", fn: "repeat", args: []any{"a", 1.5}, wantErr: "second argument should be int"},
		{name: "sequence zero step", fn: "sequence", args: []any{int64(1), int64(5), int64(0)}, wantErr: "should not be zero"},
		{name: "sequence wrong way", fn: "sequence", args: []any{int64(1), int64(5), int64(-1)}, want: []any{}},
		{name: "sequence descending default", fn: "sequence", args: []any{int64(3), int64(1)}, want: arrayInts(3, 2, 1)},
		{name: "sequence string", fn: "sequence", args: []any{"a", int64(1)}, wantErr: "first argument should be int"},
		{name: "sequence huge", fn: "sequence", args: []any{int64(0), int64(1) << 40}, wantErr: "more than"},
		{name: "kvpair missing value", fn: "kvpair_array_to_obj", args: []any{[]any{map[string]any{"key": "a"}}}, wantErr: "array item should be key-value pair"},
		{name: "kvpair not map", fn: "kvpair_array_to_obj", args: []any{arrayInts(1)}, wantErr: "array item should be map[string]interface{}"},
	})
}

func TestArrayNoInputMutation(t *testing.T) {
	in := arrayInts(3, 1, 2, 3)
	for _, fn := range []string{"array_remove", "array_sort", "array_shuffle", "array_distinct"} {
		t.Run(fn, func(t *testing.T) {
			args := []any{in}
			if fn == "array_remove" {
				args = append(args, int64(3))
			}
			if _, err := miscCall(t, miscTestEnv{}, fn, args...); err != nil {
				t.Fatal(err)
			}
			if !arraySame(in, arrayInts(3, 1, 2, 3)) {
				t.Fatalf("%s modified its input: %v", fn, in)
			}
		})
	}
}

func TestArrayShuffleKeepsElements(t *testing.T) {
	got, err := miscCall(t, miscTestEnv{}, "array_shuffle", arrayInts(1, 2, 3, 4))
	if err != nil {
		t.Fatal(err)
	}
	sorted, _ := miscCall(t, miscTestEnv{}, "array_sort", got)
	if !arraySame(sorted, arrayInts(1, 2, 3, 4)) {
		t.Fatalf("shuffle lost elements: %v", got)
	}
}

// TestArrayConcatNothing: concatenating nothing is a null list that sinks
// write out (a typed nil), as eKuiper's is (diff_funcs/array_concat_nothing).
func TestArrayConcatNothing(t *testing.T) {
	d, _ := Builtins().Lookup("array_concat")
	for _, args := range [][]any{{nil}, {[]any{}}, {nil, []any{}}} {
		got, err := d.Scalar(nil, args)
		if err != nil {
			t.Fatalf("array_concat%v: %v", args, err)
		}
		if l, ok := got.([]any); !ok || l != nil {
			t.Fatalf("array_concat%v = %#v, want a nil []any", args, got)
		}
	}
}

// TestArrayFlattenEmpty: an array of empty arrays flattens to a null that
// is written out (a typed nil list); an empty array to nothing, as in
// eKuiper (diff_funcs/array_flatten_empty).
func TestArrayFlattenEmpty(t *testing.T) {
	got, err := miscCall(t, nil, "array_flatten", []any{[]any{}, []any{}})
	if l, ok := got.([]any); err != nil || !ok || l != nil {
		t.Errorf("array_flatten([[], []]) = %#v, %v; want []any(nil)", got, err)
	}
	got, err = miscCall(t, nil, "array_flatten", []any{})
	if err != nil || got != nil {
		t.Errorf("array_flatten([]) = %#v, %v; want nil", got, err)
	}
}
