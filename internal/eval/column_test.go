package eval

import (
	"reflect"
	"testing"

	"github.com/rekuiper/rekuiper/internal/function"
	"github.com/rekuiper/rekuiper/internal/row"
	"github.com/rekuiper/rekuiper/internal/sql/ast"
)

// TestColumnReadsSlotsAndFallsBack compiles column references against a
// typed stream's layout and evaluates them on every kind of row a rule can
// see: each must read what Row.Value reads.
func TestColumnReadsSlotsAndFallsBack(t *testing.T) {
	fields := []string{"id", "temp", "name"}
	m := map[string]any{"id": int64(7), "temp": nil, "extra": "e"}
	slotted := func(names []string, emitter string, m map[string]any) *row.Tuple {
		tu := row.NewTuple(row.NewLayout(names), m)
		tu.Emitter = emitter
		return tu
	}
	rows := map[string]row.Row{
		"slotted":             slotted(fields, "s", m),
		"slotted other order": slotted([]string{"name", "id", "temp"}, "s", m),
		"map":                 &row.Tuple{Emitter: "s", Message: m},
		"other stream":        slotted(fields, "t", m),
		"joined":              &row.Joined{Tuples: []*row.Tuple{slotted(fields, "t", map[string]any{"id": int64(1)}), slotted(fields, "s", m)}},
	}
	refs := []*ast.FieldRef{
		{Name: "id"}, {Name: "temp"}, {Name: "name"}, {Name: "extra"},
		{Stream: "s", Name: "id"}, {Stream: "alias", Name: "temp"}, {Stream: "t", Name: "id"},
	}
	for _, streams := range []map[string]string{
		{"s": "s", "alias": "s"},           // one stream: unqualified names resolve to slots
		{"s": "s", "alias": "s", "t": "t"}, // a join: only qualified ones do
	} {
		c := NewCompiler(function.Builtins(), streams, nil)
		c.Layouts = map[string]*row.Layout{"s": row.NewLayout(fields), "t": row.NewLayout(fields)}
		for _, ref := range refs {
			if _, known := streams[ref.Stream]; ref.Stream != "" && !known {
				continue
			}
			e, err := c.Compile(ref)
			if err != nil {
				t.Fatal(err)
			}
			for rn, r := range rows {
				got, err := e(&Ctx{Row: r})
				if err != nil {
					t.Fatal(err)
				}
				want, _ := r.Value(streams[ref.Stream], ref.Name)
				if !reflect.DeepEqual(got, want) {
					t.Errorf("streams %v, %s on %s row: got %#v, Row.Value gives %#v", streams, ref, rn, got, want)
				}
			}
		}
	}
}

func TestSlotFieldResolution(t *testing.T) {
	l := row.NewLayout([]string{"a"})
	single := &Compiler{Streams: map[string]string{"s": "s", "x": "s"}, Layouts: map[string]*row.Layout{"s": l}}
	if _, ok := single.slotField("", "a"); !ok {
		t.Error("an unqualified declared column of the only stream did not resolve to a slot")
	}
	if _, ok := single.slotField("", "b"); ok {
		t.Error("an undeclared column resolved to a slot")
	}
	joined := &Compiler{Streams: map[string]string{"s": "s", "t": "t"}, Layouts: map[string]*row.Layout{"s": l}}
	if _, ok := joined.slotField("", "a"); ok {
		t.Error("an unqualified column of a join resolved to one side's slot")
	}
	if _, ok := joined.slotField("s", "a"); !ok {
		t.Error("a qualified declared column did not resolve to a slot")
	}
	if _, ok := joined.slotField("t", "a"); ok {
		t.Error("a column of a schemaless stream resolved to a slot")
	}
}
