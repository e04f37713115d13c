package function

import (
	"testing"
)

func TestObjectCorpus(t *testing.T) {
	nested := map[string]any{"a": map[string]any{"b": int64(1), "c": int64(2)}, "a.b": int64(3)}
	o := map[string]any{"a": int64(1), "b": "x", "c": arrayInts(1, 2)}
	p := map[string]any{"c": int64(3), "d": nil}
	miscRun(t, miscTestEnv{}, []miscCase{
		// gen_func_object/erase_pick_nested_keys
		{name: "erase_pick_nested_keys/e", fn: "erase", args: []any{nested, "a.b"}, want: map[string]any{"a": map[string]any{"b": int64(1), "c": int64(2)}}},
		{name: "erase_pick_nested_keys/p", fn: "object_pick", args: []any{nested, "a.b"}, want: map[string]any{"a": map[string]any{"b": int64(1)}}},
		// gen_func_object/items_single
		{name: "items_single", fn: "items", args: []any{map[string]any{"k": arrayInts(1, 2)}}, want: []any{[]any{"k", arrayInts(1, 2)}}},
		// gen_func_object/keys_single
		{name: "keys_single/k", fn: "keys", args: []any{map[string]any{"only": int64(5)}}, want: []any{"only"}},
		{name: "keys_single/v", fn: "values", args: []any{map[string]any{"only": int64(5)}}, want: arrayInts(5)},
		// gen_func_object/kvpair_invalid
		{name: "kvpair_invalid/1", fn: "kvpair_array_to_obj", args: []any{[]any{map[string]any{"key": "a"}}}, wantErr: "array item should be key-value pair"},
		{name: "kvpair_invalid/2", fn: "kvpair_array_to_obj", args: []any{arrayInts(1)}, wantErr: "array item should be map[string]interface{}"},
		// gen_func_object/obj_to_kvpair_single
		{name: "obj_to_kvpair_single/1", fn: "obj_to_kvpair_array", args: []any{map[string]any{"a": int64(1)}}, want: []any{map[string]any{"key": "a", "value": int64(1)}}},
		{name: "obj_to_kvpair_single/empty", fn: "obj_to_kvpair_array", args: []any{map[string]any{}}, want: nil},
		// gen_func_object/object_concat
		{name: "object_concat/oc", fn: "object_concat", args: []any{o, p}, want: map[string]any{"a": int64(1), "b": "x", "c": int64(3), "d": nil}},
		{name: "object_concat/oc3", fn: "object_concat", args: []any{p, o, p}, want: map[string]any{"a": int64(1), "b": "x", "c": int64(3), "d": nil}},
		{name: "object_concat/oc_2", fn: "object_concat", args: []any{map[string]any{}, map[string]any{"k": true}}, want: map[string]any{"k": true}},
		{name: "object_concat/oc3_2", fn: "object_concat", args: []any{map[string]any{"k": true}, map[string]any{}, map[string]any{"k": true}}, want: map[string]any{"k": true}},
		// gen_func_object/object_wrong_type
		{name: "object_wrong_type/ok", fn: "object_size", args: []any{map[string]any{"a": int64(1)}}, want: int64(1)},
		{name: "object_wrong_type/err", fn: "object_size", args: []any{arrayInts(1, 2)}, wantErr: "the first argument should be map[string]any, got [1 2]"},
		// gen_func_object/zip_invalid
		{name: "zip_invalid/ok", fn: "zip", args: []any{[]any{[]any{"a", int64(1)}}}, want: map[string]any{"a": int64(1)}},
		{name: "zip_invalid/short", fn: "zip", args: []any{[]any{[]any{"a"}}}, wantErr: "each argument should be [][2]interface{}"},
		{name: "zip_invalid/key", fn: "zip", args: []any{[]any{arrayInts(1, 2)}}, wantErr: "the first element in the list item should be string"},
		// gen_func_object/zip_items
		{name: "zip_items/o", fn: "zip", args: []any{[]any{[]any{"a", int64(1)}, []any{"b", int64(2)}}}, want: map[string]any{"a": int64(1), "b": int64(2)}},
		{name: "zip_items/it", fn: "items", args: []any{map[string]any{"k": "v"}}, want: []any{[]any{"k", "v"}}},
		{name: "zip_items/o_empty", fn: "zip", args: []any{[]any{}}, want: nil},
		{name: "zip_items/it_empty", fn: "items", args: []any{map[string]any{}}, want: nil},
	})
}

func TestObjectFunctions(t *testing.T) {
	m := map[string]any{"b": int64(2), "a": int64(1), "c": map[string]any{"x": int64(1), "y": int64(2)}}
	miscRun(t, miscTestEnv{}, []miscCase{
		{name: "keys sorted", fn: "keys", args: []any{m}, want: []any{"a", "b", "c"}},
		{name: "values sorted", fn: "values", args: []any{map[string]any{"b": int64(2), "a": int64(1)}}, want: arrayInts(1, 2)},
		{name: "keys nil", fn: "keys", args: []any{nil}, want: nil},
		{name: "keys bad", fn: "keys", args: []any{"s"}, wantErr: "the argument should be map[string]interface{}"},
		{name: "object", fn: "object", args: []any{[]any{"a", "b"}, []any{int64(1), nil}}, want: map[string]any{"a": int64(1), "b": nil}},
		{name: "object empty", fn: "object", args: []any{[]any{}, []any{}}, want: nil},
		{name: "object length", fn: "object", args: []any{[]any{"a"}, []any{}}, wantErr: "the length of the arguments should be same"},
		{name: "object key type", fn: "object", args: []any{[]any{int64(1)}, []any{int64(1)}}, wantErr: "first argument should be []string"},
		{name: "object_construct", fn: "object_construct", args: []any{"a", int64(1), "b", nil, nil, int64(3)}, want: map[string]any{"a": int64(1), "b": nil}}, // a nil value is kept, a nil key skipped (eKuiper: differential diff_misc/obj_construct)
		{name: "object_construct empty", fn: "object_construct", args: []any{}, want: map[string]any{}},
		{name: "object_construct key", fn: "object_construct", args: []any{int64(1), int64(1)}, wantErr: "key 1 is not a string"},
		{name: "object_concat nil", fn: "object_concat", args: []any{nil, map[string]any{"a": int64(1)}}, want: map[string]any{"a": int64(1)}},
		{name: "object_concat bad", fn: "object_concat", args: []any{map[string]any{}, int64(1)}, wantErr: "the argument should be map[string]interface{}, got 1"},
		{name: "erase list", fn: "erase", args: []any{m, []any{"a", "c"}}, want: map[string]any{"b": int64(2)}},
		{name: "erase bad keys", fn: "erase", args: []any{m, int64(1)}, wantErr: "the argument should be slice or string"},
		// diff_funcs/erase_number_keys: non-string keys name their text.
		{name: "erase number keys", fn: "erase", args: []any{map[string]any{"1": int64(1), "2.5": int64(2), "true": int64(3), "": int64(4), "x": int64(5)}, []any{int64(1), 2.5, true, nil}},
			want: map[string]any{"x": int64(5)}},
		{name: "erase bad object", fn: "erase", args: []any{arrayInts(1), "a"}, wantErr: "the first argument should be map[string]interface{}, got [1]"},
		{name: "pick list", fn: "object_pick", args: []any{m, []any{"a", "c.y", "nope", "c.nope.z"}},
			want: map[string]any{"a": int64(1), "c": map[string]any{"y": int64(2)}}},
		{name: "pick whole then nested", fn: "object_pick", args: []any{m, []any{"c", "c.x"}},
			want: map[string]any{"c": map[string]any{"x": int64(1), "y": int64(2)}}},
		// diff_funcs/object_pick_keys
		{name: "pick string", fn: "object_pick", args: []any{m, "a"}, want: map[string]any{"a": int64(1)}},
		{name: "pick skips non-strings", fn: "object_pick", args: []any{m, []any{"a", 2.5}}, want: map[string]any{"a": int64(1)}},
		{name: "pick nil keys", fn: "object_pick", args: []any{m, nil}, want: map[string]any{}},
		{name: "pick number key", fn: "object_pick", args: []any{m, 2.5}, want: map[string]any{}},
		{name: "pick nil object", fn: "object_pick", args: []any{nil, "a"}, want: nil},
		{name: "pick bad object", fn: "object_pick", args: []any{true, "a"}, wantErr: "the first argument should be a map, got true"},
		{name: "object_size nil", fn: "object_size", args: []any{nil}, want: int64(0)},
		{name: "obj_to_kvpair sorted", fn: "obj_to_kvpair_array", args: []any{map[string]any{"b": int64(2), "a": int64(1)}},
			want: []any{map[string]any{"key": "a", "value": int64(1)}, map[string]any{"key": "b", "value": int64(2)}}},
		{name: "zip nil item", fn: "zip", args: []any{[]any{nil, []any{"a", int64(1)}}}, want: map[string]any{"a": int64(1)}},
	})
	t.Run("pick does not modify input", func(t *testing.T) {
		if got := m["c"].(map[string]any); len(got) != 2 {
			t.Fatalf("input modified: %v", m)
		}
	})
}
