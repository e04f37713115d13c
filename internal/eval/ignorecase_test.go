package eval

import (
	"reflect"
	"testing"

	"github.com/rekuiper/rekuiper/internal/function"
	"github.com/rekuiper/rekuiper/internal/row"
	"github.com/rekuiper/rekuiper/internal/sql/ast"
)

// TestIgnoreCaseColumns reads columns with basic.ignoreCase on and off:
// on, a name no column has exactly matches one case-insensitively (an
// exact match still wins, and among columns differing only in case the
// choice is deterministic); off, it reads nothing.
func TestIgnoreCaseColumns(t *testing.T) {
	schemaless := &row.Tuple{Emitter: "s", Message: map[string]any{
		"Temp": 1.5, "temp": 2.5, "HUMID": int64(40), "Humid": int64(41), "Level": "x",
	}}
	typed := row.NewTuple(row.NewLayout([]string{"Temp", "temp", "Humid"}), map[string]any{
		"Temp": 1.5, "temp": 2.5, "Humid": int64(41),
	})
	typed.Emitter = "s"
	joined := &row.Joined{Tuples: []*row.Tuple{
		{Emitter: "a", Message: map[string]any{"ID": int64(1)}},
		{Emitter: "b", Message: map[string]any{"id": int64(2), "Only": "b"}},
	}}
	cases := []struct {
		name    string
		streams map[string]string
		layouts map[string]*row.Layout
		r       row.Row
		ref     *ast.FieldRef
		on, off any
	}{
		{"exact wins", map[string]string{"s": "s"}, nil, schemaless, &ast.FieldRef{Name: "temp"}, 2.5, 2.5},
		{"exact wins, other case", map[string]string{"s": "s"}, nil, schemaless, &ast.FieldRef{Name: "Temp"}, 1.5, 1.5},
		{"folded", map[string]string{"s": "s"}, nil, schemaless, &ast.FieldRef{Name: "level"}, "x", nil},
		{"folded, first in byte order", map[string]string{"s": "s"}, nil, schemaless, &ast.FieldRef{Name: "humid"}, int64(40), nil},
		{"folded, qualified", map[string]string{"s": "s"}, nil, schemaless, &ast.FieldRef{Stream: "s", Name: "LEVEL"}, "x", nil},
		{"typed slot folded, first declared", map[string]string{"s": "s"}, map[string]*row.Layout{"s": row.NewLayout([]string{"Temp", "temp", "Humid"})}, typed, &ast.FieldRef{Name: "TEMP"}, 1.5, nil},
		{"typed slot exact", map[string]string{"s": "s"}, map[string]*row.Layout{"s": row.NewLayout([]string{"Temp", "temp", "Humid"})}, typed, &ast.FieldRef{Name: "temp"}, 2.5, 2.5},
		{"typed slot folded", map[string]string{"s": "s"}, map[string]*row.Layout{"s": row.NewLayout([]string{"Temp", "temp", "Humid"})}, typed, &ast.FieldRef{Name: "humid"}, int64(41), nil},
		{"join, earlier stream wins", map[string]string{"a": "a", "b": "b"}, nil, joined, &ast.FieldRef{Name: "Id"}, int64(1), nil},
		{"join, qualified", map[string]string{"a": "a", "b": "b"}, nil, joined, &ast.FieldRef{Stream: "b", Name: "ID"}, int64(2), nil},
		{"join, one side", map[string]string{"a": "a", "b": "b"}, nil, joined, &ast.FieldRef{Name: "only"}, "b", nil},
		{"no match", map[string]string{"s": "s"}, nil, schemaless, &ast.FieldRef{Name: "pressure"}, nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, on := range []bool{true, false} {
				comp := NewCompiler(function.Builtins(), c.streams, nil)
				comp.Layouts = c.layouts
				comp.IgnoreCase = on
				e, err := comp.Compile(c.ref)
				if err != nil {
					t.Fatal(err)
				}
				// Run several times: a choice depending on map order
				// would show.
				for range 20 {
					got, err := e(&Ctx{Row: c.r})
					if err != nil {
						t.Fatal(err)
					}
					want := c.off
					if on {
						want = c.on
					}
					if !reflect.DeepEqual(got, want) {
						t.Fatalf("ignoreCase %v, %s: got %#v, want %#v", on, c.ref, got, want)
					}
				}
			}
		})
	}
}
