package function

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/value"
)

// TestValueBuildersAreBounded: every function that builds a value from an
// integer argument refuses a size above its bound, at run time with an
// error naming the function and the bound, and at creation when the
// argument is a literal.
func TestValueBuildersAreBounded(t *testing.T) {
	runtime := []struct {
		fn   string
		args []any
		want []string
	}{
		{"lpad", []any{"s", int64(100000000000)}, []string{"lpad", "100000000000", "1000000"}},
		{"lpad", []any{"s", int64(math.MaxInt64)}, []string{"lpad", "9223372036854775807"}},
		{"rpad", []any{"s", int64(MaxPadLength + 1)}, []string{"rpad", "1000001", "1000000"}},
		{"repeat", []any{"s", int64(MaxBuiltElements + 1)}, []string{"repeat", "1000001", "1000000"}},
		{"sequence", []any{int64(0), int64(math.MaxInt64)}, []string{"sequence", "more than 1000000"}},
		{"sequence", []any{int64(math.MinInt64), int64(math.MaxInt64)}, []string{"sequence", "more than"}},
		{"sequence", []any{int64(math.MaxInt64), int64(math.MinInt64)}, []string{"sequence", "more than"}},
		{"sequence", []any{int64(math.MinInt64), int64(math.MaxInt64), int64(math.MaxInt64)}, nil},
		{"sequence", []any{int64(math.MaxInt64), int64(math.MinInt64), int64(math.MinInt64)}, nil},
		{"sequence", []any{int64(0), int64(MaxBuiltElements - 1)}, nil},
		{"lpad", []any{"s", int64(MaxPadLength)}, nil},
	}
	for _, c := range runtime {
		got, err := miscCall(t, miscTestEnv{}, c.fn, c.args...)
		if c.want == nil {
			if err != nil {
				t.Errorf("%s%v: %v", c.fn, c.args, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s%v = %T of length %d; want an error", c.fn, c.args, got, sizeOf(got))
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s%v: error %q does not say %q", c.fn, c.args, err, w)
			}
		}
	}
	if got, _ := miscCall(t, miscTestEnv{}, "sequence", int64(math.MinInt64), int64(math.MaxInt64), int64(math.MaxInt64)); sizeOf(got) != 3 {
		t.Errorf("sequence(min, max, max) = %v; want 3 elements", got)
	}

	lit := func(v int64) ast.Expr { return &ast.IntegerLit{Val: v} }
	field := &ast.FieldRef{Name: "s"}
	create := []struct {
		fn   string
		args []ast.Expr
		bad  bool
	}{
		{"lpad", []ast.Expr{field, lit(100000000000)}, true},
		{"rpad", []ast.Expr{field, lit(MaxPadLength + 1)}, true},
		{"lpad", []ast.Expr{field, lit(MaxPadLength)}, false},
		{"lpad", []ast.Expr{field, field}, false},
		{"repeat", []ast.Expr{field, lit(MaxBuiltElements + 1)}, true},
		{"repeat", []ast.Expr{field, lit(3)}, false},
		{"sequence", []ast.Expr{lit(0), lit(math.MaxInt64)}, true},
		{"sequence", []ast.Expr{lit(0), lit(10), lit(1)}, false},
		{"sequence", []ast.Expr{lit(0), field}, false},
		{"lag", []ast.Expr{field, lit(MaxLagOffset + 1)}, true},
		{"lag", []ast.Expr{field, lit(MaxLagOffset)}, false},
	}
	for _, c := range create {
		d, _ := Builtins().Lookup(c.fn)
		err := d.Validate(c.args)
		if (err != nil) != c.bad {
			t.Errorf("validate %s%v: %v, want error %v", c.fn, c.args, err, c.bad)
		}
		if err != nil && !strings.Contains(err.Error(), c.fn) {
			t.Errorf("validate %s: error %q does not name the function", c.fn, err)
		}
	}
}

func sizeOf(v any) int {
	switch x := v.(type) {
	case string:
		return len(x)
	case []any:
		return len(x)
	}
	return -1
}

func TestLagOffsetBounded(t *testing.T) {
	d, _ := Builtins().Lookup("lag")
	_, err := d.Analytic(aggTestEnv{}, State{}, true, []any{int64(1), int64(math.MaxInt64)})
	if err == nil || !strings.Contains(err.Error(), "lag: offset 9223372036854775807 exceeds the limit of 1000000") {
		t.Fatalf("lag with a huge offset: %v", err)
	}
}

// TestSumOverflowIsAnError: sum over bigints that do not fit is an error,
// in the batch kernel and in the row-by-row accumulator alike.
func TestSumOverflowIsAnError(t *testing.T) {
	d, _ := Builtins().Lookup("sum")
	col := []any{int64(math.MaxInt64), int64(1)}
	if got, err := d.Aggregate(aggTestEnv{}, [][]any{col}); !errors.Is(err, value.ErrOverflow) {
		t.Errorf("sum kernel = %v, %v; want ErrOverflow", got, err)
	}
	acc := d.Accumulate()
	for _, v := range col {
		acc.Add([]any{v})
	}
	if got, err := acc.Result(); !errors.Is(err, value.ErrOverflow) {
		t.Errorf("sum accumulator = %v, %v; want ErrOverflow", got, err)
	}
}
