package output

import (
	"testing"

	"github.com/rekuiper/rekuiper/api"
	slot "github.com/rekuiper/rekuiper/internal/row"
)

// TestShapeSlotsMatchesShape checks that shaping an emission in slots
// gives the payloads Shape gives for the same rows as maps, under every
// property ShapeSlots takes.
func TestShapeSlotsMatchesShape(t *testing.T) {
	cols := slot.NewColumns([]string{"temp", "id", "name", "extra"})
	pool := slot.NewSlotPool(cols)
	// Rows as slots: a full row, one with absent and null columns, an
	// empty one.
	rowsOf := func(vals ...[]any) *slot.SlotRows {
		b := pool.Get(1)
		defer b.Done()
		s := b.Rows()
		for _, v := range vals {
			copy(s.Add(), v)
		}
		return s
	}
	o := slot.Omitted
	emissions := map[string][][]any{
		"none":    nil,
		"one":     {{20.5, int64(1), "dev1", []any{int64(1), "x"}}},
		"mixed":   {{20.5, int64(1), "dev1", map[string]any{"b": 1.5, "a": true}}, {nil, int64(2), o, o}, {o, o, o, o}},
		"empty":   {{o, o, o, o}},
		"escapes": {{-0.0, int64(-7), "a\"b\\c\n<é>", nil}},
	}
	props := map[string]map[string]any{
		"default":                nil,
		"sendSingle":             {"sendSingle": true},
		"omitIfEmpty":            {"omitIfEmpty": true},
		"sendSingle omitIfEmpty": {"sendSingle": true, "omitIfEmpty": true},
		"format json":            {"format": "json"},
		"fields":                 {"fields": []any{"name", "temp", "nosuch", "name"}},
		"fields sendSingle":      {"fields": []any{"id", "extra"}, "sendSingle": true},
		"excludeFields":          {"excludeFields": []any{"temp", "nosuch"}},
		"excludeFields single":   {"excludeFields": []any{"extra"}, "sendSingle": true, "omitIfEmpty": true},
	}
	for pname, p := range props {
		for ename, e := range emissions {
			t.Run(pname+"/"+ename, func(t *testing.T) {
				s := mustShaper(t, p)
				if !s.SlotsOK() {
					t.Fatal("SlotsOK is false")
				}
				rows := rowsOf(e...)
				defer rows.Release()
				msgs, err := s.Shape(rows.Maps())
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				err = s.ShapeSlots(rows, func(m *api.SinkMessage) error {
					if m.Rows != nil {
						t.Errorf("message has rows %v", m.Rows)
					}
					got = append(got, string(m.Payload))
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != len(msgs) {
					t.Fatalf("ShapeSlots wrote %d messages %q, Shape %d", len(got), got, len(msgs))
				}
				for i, m := range msgs {
					if got[i] != string(m.Payload) {
						t.Errorf("message %d: slots %s, maps %s", i, got[i], m.Payload)
					}
				}
			})
		}
	}
}

// TestSlotsOK checks which properties keep an emission off the slot path.
func TestSlotsOK(t *testing.T) {
	for _, p := range []map[string]any{
		{"dataTemplate": `{{.id}}`},
		{"dataField": "id"},
		{"dataField": "id", "fields": []any{"id"}},
		{"format": "delimited"},
	} {
		s := mustShaper(t, p)
		if s.SlotsOK() {
			t.Errorf("%v: SlotsOK is true", p)
		}
	}
}

// TestShapeSlotsError checks that a value JSON cannot hold fails the
// emission with an error, as Shape does.
func TestShapeSlotsError(t *testing.T) {
	s := mustShaper(t, nil)
	rows := slot.NewSlotPool(slot.NewColumns([]string{"x"})).Get(1).Rows()
	rows.Add()[0] = 1.0 / zero()
	err := s.ShapeSlots(rows, func(*api.SinkMessage) error {
		t.Error("a message was written")
		return nil
	})
	if err == nil {
		t.Fatal("no error for +Inf")
	}
}

func zero() float64 { return 0 }
