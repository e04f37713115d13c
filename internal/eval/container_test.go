package eval

import (
	"strings"
	"testing"

	"github.com/rekuiper/rekuiper/internal/function"
	"github.com/rekuiper/rekuiper/internal/row"
	"github.com/rekuiper/rekuiper/internal/sql/parser"
)

// TestContainerLeftOfOperator: an object or array left of a comparison or
// arithmetic operator is an error for the row, even beside null, as in
// eKuiper (differential cases of kuiperdiff -seed 41); on the right, or
// read with -> and [], it is not.
func TestContainerLeftOfOperator(t *testing.T) {
	m := map[string]any{"o": map[string]any{"a": int64(1)}, "arr": []any{int64(1)}, "w": 2.5}
	r := &row.Tuple{Emitter: "s", Message: m}
	c := NewCompiler(function.Builtins(), map[string]string{"s": "s"}, nil)
	eval := func(src string) (any, error) { return evalOn(t, c, r, src) }
	for _, src := range []string{"o < w", "o < nope", "arr = arr", "arr > 1", "o + 1", "arr * nope"} {
		if got, err := eval(src); err == nil || !strings.Contains(err.Error(), "is an invalid operation for") {
			t.Errorf("%s = %v, %v; want an invalid operation error", src, got, err)
		}
	}
	for src, want := range map[string]any{"o->a = 1": true, "arr[0] + 1": int64(2), "nope < o": false} {
		if got, err := eval(src); err != nil || got != want {
			t.Errorf("%s = %v, %v; want %v", src, got, err, want)
		}
	}
}

// evalOn parses, compiles and evaluates the SQL expression src on r.
func evalOn(t *testing.T, c *Compiler, r *row.Tuple, src string) (any, error) {
	t.Helper()
	x, err := parser.ParseExpr(src)
	if err != nil {
		t.Fatalf("parse %s: %v", src, err)
	}
	e, err := c.Compile(x)
	if err != nil {
		t.Fatalf("compile %s: %v", src, err)
	}
	return e(&Ctx{Row: r})
}

// TestIndexOfNonArray: a position in anything but an array is an error
// (diff_expr/index_non_array); a key in an object and anything of null are
// not.
func TestIndexOfNonArray(t *testing.T) {
	m := map[string]any{"o": map[string]any{"a": int64(1)}, "s": "str", "n": int64(5), "b": true}
	r := &row.Tuple{Emitter: "s", Message: m}
	c := NewCompiler(function.Builtins(), map[string]string{"s": "s"}, nil)
	for _, src := range []string{"o[0]", "s[0]", "n[0]", "b[0]"} {
		if got, err := evalOn(t, c, r, src); err == nil {
			t.Errorf("%s = %v, want an error", src, got)
		}
	}
	for src, want := range map[string]any{`o["a"]`: int64(1), "nope[0]": nil} {
		if got, err := evalOn(t, c, r, src); err != nil || got != want {
			t.Errorf("%s = %v, %v; want %v", src, got, err, want)
		}
	}
}
