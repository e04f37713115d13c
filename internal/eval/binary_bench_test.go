package eval

import (
	"testing"

	"github.com/rekuiper/rekuiper/internal/function"
	"github.com/rekuiper/rekuiper/internal/row"
	"github.com/rekuiper/rekuiper/internal/sql/parser"
)

// BenchmarkBinary evaluates compiled binary expressions (arithmetic,
// comparison, logic, BETWEEN, IN, LIKE, ->) on one row.
func BenchmarkBinary(b *testing.B) {
	m := map[string]any{
		"i": int64(7), "j": int64(3), "f": 2.5, "g": 0.5, "s": "temperature", "p": "temp%",
		"o": map[string]any{"a": int64(1)}, "arr": []any{int64(1), int64(2), int64(3)},
	}
	r := &row.Tuple{Emitter: "s", Message: m}
	c := NewCompiler(function.Builtins(), map[string]string{"s": "s"}, nil)
	for _, bc := range []struct{ name, src string }{
		{"int_add", "i + j"},
		{"int_mul", "i * j"},
		{"int_div", "i / j"},
		{"float_add", "f + g"},
		{"mixed_mul", "i * f"},
		{"int_lt", "i < j"},
		{"float_eq", "f = g"},
		{"and", "i > j AND f > g"},
		{"between", "i BETWEEN j AND 10"},
		{"in", "j IN arr"},
		{"like_lit", `s LIKE "temp%"`},
		{"like_dyn", "s LIKE p"},
		{"arrow", "o->a"},
	} {
		x, err := parser.ParseExpr(bc.src)
		if err != nil {
			b.Fatalf("parse %s: %v", bc.src, err)
		}
		e, err := c.Compile(x)
		if err != nil {
			b.Fatalf("compile %s: %v", bc.src, err)
		}
		ctx := &Ctx{Row: r}
		if _, err := e(ctx); err != nil {
			b.Fatalf("%s: %v", bc.src, err)
		}
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := e(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
