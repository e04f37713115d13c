package function

import (
	"testing"
)

func TestJSONPathEval(t *testing.T) {
	doc := map[string]any{
		"store": map[string]any{
			"book": []any{
				map[string]any{"title": "A", "price": 8.95, "cat": "ref"},
				map[string]any{"title": "B", "price": int64(12), "cat": "fic", "isbn": "x-1"},
				map[string]any{"title": "C", "price": 8.99, "cat": "fic"},
				map[string]any{"title": "D", "price": int64(22), "cat": "fic", "isbn": "x-2"},
			},
			"bicycle": map[string]any{"color": "red", "price": 19.95},
		},
		"odd key": int64(7),
		"n":       []any{int64(0), int64(1), int64(2), int64(3), int64(4)},
	}
	cases := []struct {
		path  string
		want  any
		found bool
	}{
		{"$", doc, true},
		{"$.store.bicycle.color", "red", true},
		{"$['store']['bicycle']['color']", "red", true},
		{`$["odd key"]`, int64(7), true},
		{"$.store.book[0].title", "A", true},
		{"$.store.book[-1].title", "D", true},
		{"$.store.book[9].title", nil, false},
		{"$.n[1:3]", []any{int64(1), int64(2)}, true},
		{"$.n[:2]", []any{int64(0), int64(1)}, true},
		{"$.n[-2:]", []any{int64(3), int64(4)}, true},
		{"$.n[::2]", []any{int64(0), int64(2), int64(4)}, true},
		{"$.n[3:-10:-1]", []any{int64(3), int64(2), int64(1), int64(0)}, true},
		{"$.n[3:1:-1]", []any{int64(3), int64(2)}, true},
		{"$.n[::-1]", []any{int64(4), int64(3), int64(2), int64(1), int64(0)}, true},
		{"$.n[0,4]", []any{int64(0), int64(4)}, true},
		{"$.store.book[*].title", []any{"A", "B", "C", "D"}, true},
		{"$.store.bicycle.*", []any{"red", 19.95}, true},
		{"$..title", []any{"A", "B", "C", "D"}, true},
		{"$..bicycle.price", []any{19.95}, true},
		{"$.store.book[?(@.price < 10)].title", []any{"A", "C"}, true},
		{"$.store.book[?(@.price >= 12 && @.cat == 'fic')].title", []any{"B", "D"}, true},
		{"$.store.book[?(@.price < 9 || @.title == \"D\")].title", []any{"A", "C", "D"}, true},
		{"$.store.book[?(@.isbn)].title", []any{"B", "D"}, true},
		{"$.store.book[?(!@.isbn)].title", []any{"A", "C"}, true},
		{"$.store.book[?(@.cat != 'fic')].title", []any{"A"}, true},
		{"$.store.book[?(@.price <= 8.95)].title", []any{"A"}, true},
		{"$.store.book[?(@.price > $.store.bicycle.price)].title", []any{"D"}, true},
		{"$.store.book[?((@.price > 20))].title", []any{"D"}, true},
		{"$.store.book[?(@.title == 5)].title", []any{}, false},
		{"$.missing", nil, false},
		{"$.store.book[*].missing", []any{}, false},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			p, err := parseJSONPath(c.path)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			got, found := p.eval(doc)
			if found != c.found || !arraySame(got, c.want) {
				t.Fatalf("eval = (%#v, %v), want (%#v, %v)", got, found, c.want, c.found)
			}
		})
	}
}

func TestJSONPathParseErrors(t *testing.T) {
	for _, src := range []string{"", "store", "$.", "$[", "$[1", "$['a'", "$[?(@.a >)]", "$[?(@.a == 1]", "$[1:2:0]", "$.a b", "$[x]"} {
		t.Run(src, func(t *testing.T) {
			if _, err := parseJSONPath(src); err == nil {
				t.Fatalf("parseJSONPath(%q) succeeded, want error", src)
			}
		})
	}
}

// FuzzJSONPath checks that parsing and evaluating arbitrary paths never
// panics.
func FuzzJSONPath(f *testing.F) {
	for _, s := range []string{"$", "$.a.b", "$..x", "$[1:-1:2]", "$[?(@.a > 1 && !(@.b == 'x'))]", "$['a','b']", "$[0,1]"} {
		f.Add(s)
	}
	doc := map[string]any{"a": []any{int64(1), map[string]any{"a": 2.5, "b": "x"}}, "b": nil}
	f.Fuzz(func(t *testing.T, src string) {
		p, err := parseJSONPath(src)
		if err != nil {
			return
		}
		p.eval(doc)
	})
}
