package function

import (
	"testing"
)

// jsonDoc is the document used by the gen_func_json corpus cases.
func jsonDoc() map[string]any {
	return map[string]any{
		"name": "dev1",
		"tags": []any{"a", "b", "c"},
		"vals": []any{
			map[string]any{"k": "x", "v": int64(1)},
			map[string]any{"k": "y", "v": 2.5},
			map[string]any{"k": "z", "v": int64(3)},
		},
		"meta": map[string]any{"ver": int64(2), "on": true},
	}
}

func TestJSONCorpus(t *testing.T) {
	d := jsonDoc()
	miscRun(t, miscTestEnv{}, []miscCase{
		// gen_func_json/json_path_exists
		{name: "json_path_exists/e1", fn: "json_path_exists", args: []any{d, "$.meta.on"}, want: true},
		{name: "json_path_exists/e2", fn: "json_path_exists", args: []any{d, "$.meta.off"}, want: false},
		{name: "json_path_exists/e3", fn: "json_path_exists", args: []any{d, "$.vals[?(@.v > 2)]"}, want: true},
		// gen_func_json/json_path_missing (quirk: eKuiper errors "unknown key nope"; we give nil)
		{name: "json_path_missing", fn: "json_path_query", args: []any{d, "$.nope"}, want: nil},
		// gen_func_json/json_path_nil (quirk: eKuiper errors "invalid data nil for jsonpath"; we give nil / false)
		{name: "json_path_nil/q", fn: "json_path_query", args: []any{nil, "$.a"}, want: nil},
		{name: "json_path_nil/e", fn: "json_path_exists", args: []any{nil, "$.a"}, want: false},
		// gen_func_json/json_path_query
		{name: "json_path_query/t", fn: "json_path_query", args: []any{d, "$.tags"}, want: []any{"a", "b", "c"}},
		{name: "json_path_query/v", fn: "json_path_query", args: []any{d, "$.vals[*].v"}, want: []any{int64(1), 2.5, int64(3)}},
		{name: "json_path_query/ver", fn: "json_path_query", args: []any{d, "$.meta.ver"}, want: int64(2)},
		// gen_func_json/json_path_query_filter
		{name: "json_path_query_filter/big", fn: "json_path_query", args: []any{d, "$.vals[?(@.v > 2)].k"}, want: []any{"y", "z"}},
		{name: "json_path_query_filter/y", fn: "json_path_query_first", args: []any{d, "$.vals[?(@.k == 'y')].v"}, want: 2.5},
		// gen_func_json/json_path_query_first_array
		{name: "json_path_query_first_array/t", fn: "json_path_query_first", args: []any{d, "$.tags"}, want: "a"},
		{name: "json_path_query_first_array/k", fn: "json_path_query_first", args: []any{d, "$.vals[*].k"}, want: "x"},
		// gen_func_json/json_path_query_first_scalar (quirk: eKuiper errors "query result (b) is not an array")
		{name: "json_path_query_first_scalar", fn: "json_path_query_first", args: []any{d, "$.tags[1]"}, want: "b"},
		// gen_func_json/parse_json
		{name: "parse_json/object", fn: "parse_json", args: []any{`{"a": 1, "b": [1, 2.5]}`}, want: map[string]any{"a": 1.0, "b": []any{1.0, 2.5}}},
		{name: "parse_json/array", fn: "parse_json", args: []any{"[1, 2, 3]"}, want: []any{1.0, 2.0, 3.0}},
		{name: "parse_json/string", fn: "parse_json", args: []any{`"str"`}, want: "str"},
		{name: "parse_json/number", fn: "parse_json", args: []any{"12"}, want: 12.0},
		{name: "parse_json/null", fn: "parse_json", args: []any{"null"}, want: nil},
		{name: "parse_json/bool", fn: "parse_json", args: []any{"true"}, want: true},
		// gen_func_json/parse_json_invalid
		{name: "parse_json_invalid/ok", fn: "parse_json", args: []any{`{"a":1}`}, want: map[string]any{"a": 1.0}},
		{name: "parse_json_invalid/bad", fn: "parse_json", args: []any{"{bad"},
			wantErr: "fail to parse json: invalid character 'b' looking for beginning of object key string"},
	})
}

func TestJSONFunctions(t *testing.T) {
	miscRun(t, miscTestEnv{}, []miscCase{
		{name: "to_json object", fn: "to_json", args: []any{map[string]any{"b": []any{int64(1), 2.5}, "a": "<x>"}}, want: `{"a":"<x>","b":[1,2.5]}`},
		{name: "to_json string", fn: "to_json", args: []any{"s"}, want: `"s"`},
		{name: "to_json nil", fn: "to_json", args: []any{nil}, want: nil},
		{name: "parse_json nil", fn: "parse_json", args: []any{nil}, want: nil},
		{name: "parse_json non-string", fn: "parse_json", args: []any{int64(1)}, wantErr: "requires a string"},
		{name: "bad path", fn: "json_path_query", args: []any{jsonDoc(), "tags"}, wantErr: "must start with $"},
		{name: "path not string", fn: "json_path_query", args: []any{jsonDoc(), int64(1)}, wantErr: "json path string"},
		{name: "first of empty filter", fn: "json_path_query_first", args: []any{jsonDoc(), "$.vals[?(@.v > 10)]"}, want: nil},
		{name: "exists empty filter", fn: "json_path_exists", args: []any{jsonDoc(), "$.vals[?(@.v > 10)]"}, want: false},
		{name: "exists null member", fn: "json_path_exists", args: []any{map[string]any{"a": nil}, "$.a"}, want: true},
	})
}
