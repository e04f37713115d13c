package operator

import (
	"testing"

	"github.com/rekuiper/rekuiper/internal/eval"
	"github.com/rekuiper/rekuiper/internal/row"
)

func col(name string) eval.Expr {
	return func(c *eval.Ctx) (any, error) {
		v, _ := c.Row.Value("", name)
		return v, nil
	}
}

// TestGroupByKeysAreTyped: values that print alike are still different
// groups ("1" and 1; ("a,b","c") and ("a","b,c")).
func TestGroupByKeysAreTyped(t *testing.T) {
	rows := []row.Row{
		&row.Tuple{Message: map[string]any{"x": "1", "y": "c"}},
		&row.Tuple{Message: map[string]any{"x": int64(1), "y": "c"}},
		&row.Tuple{Message: map[string]any{"x": "a,b", "y": "c"}},
		&row.Tuple{Message: map[string]any{"x": "a", "y": "b,c"}},
		&row.Tuple{Message: map[string]any{"x": "1", "y": "c"}},
	}
	g := &GroupBy{Dims: []eval.Expr{col("x"), col("y")}}
	var out Item
	err := g.Process(&Context{Rule: &eval.RuleStats{}}, Item{Kind: Data, Set: &row.Set{Rows: rows}}, func(it Item) { out = it })
	if err != nil {
		t.Fatal(err)
	}
	if n := len(out.Set.Groups); n != 4 {
		t.Fatalf("%d groups, want 4", n)
	}
	if first := out.Set.Groups[0]; len(first.Rows) != 2 {
		t.Fatalf("first group has %d rows, want the two string \"1\" rows", len(first.Rows))
	}
}
