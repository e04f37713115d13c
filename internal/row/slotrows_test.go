package row

import (
	"reflect"
	"testing"
)

func TestSlotRows(t *testing.T) {
	cols := NewColumns([]string{"b", "a", "c"})
	if got := cols.Sorted(); !reflect.DeepEqual(got, []int{1, 0, 2}) {
		t.Fatalf("sorted %v", got)
	}
	pool := NewSlotPool(cols)
	b := pool.Get(1)
	s := b.Rows()
	r := s.Add()
	r[0], r[1] = "x", nil // c absent, a null
	copy(s.Add(), []any{Omitted, Omitted, Omitted})
	if s.Len() != 2 {
		t.Fatalf("len %d", s.Len())
	}
	if v, ok := s.Value(0, 1); v != nil || !ok {
		t.Errorf("null column: %v %v", v, ok)
	}
	if _, ok := s.Value(0, 2); ok {
		t.Error("absent column reported present")
	}
	want := []map[string]any{{"b": "x", "a": nil}, {}}
	if got := s.Maps(); !reflect.DeepEqual(got, want) {
		t.Errorf("maps %v, want %v", got, want)
	}
	if s.Empty() || !s.RowEmpty(1) || s.RowEmpty(0) {
		t.Error("emptiness wrong")
	}
	s.Truncate(1)
	if s.Len() != 1 || !reflect.DeepEqual(s.Maps(), want[:1]) {
		t.Errorf("after truncate %v", s.Maps())
	}
	s.Release()
	b.Done()
}

// TestSlotBlock carves many emissions of several rows from one block, some
// growing after others were carved, and checks each kept its own rows.
func TestSlotBlock(t *testing.T) {
	pool := NewSlotPool(NewColumns([]string{"i", "j"}))
	for round := range 3 {
		b := pool.Get(4)
		var ems []*SlotRows
		for i := range 40 {
			e := b.Rows()
			for j := range i%3 + 1 {
				copy(e.Add(), []any{int64(i), int64(j)})
			}
			ems = append(ems, e)
		}
		// Grow emissions that are no longer the block's last.
		copy(ems[0].Add(), []any{int64(0), int64(99)})
		copy(ems[5].Add(), []any{int64(5), int64(99)})
		for i, e := range ems {
			n := i%3 + 1
			if i == 0 || i == 5 {
				n++
			}
			if e.Len() != n {
				t.Fatalf("round %d emission %d: %d rows, want %d", round, i, e.Len(), n)
			}
			for r := range n {
				v, _ := e.Value(r, 0)
				w, _ := e.Value(r, 1)
				wantJ := int64(r)
				if r == n-1 && (i == 0 || i == 5) {
					wantJ = 99
				}
				if v != int64(i) || w != wantJ {
					t.Fatalf("round %d emission %d row %d: %v %v", round, i, r, v, w)
				}
			}
		}
		for _, e := range ems {
			e.Release()
		}
		b.Done()
	}
}

func TestSlotRowsNoColumns(t *testing.T) {
	s := NewSlotPool(NewColumns(nil)).Get(1).Rows()
	s.Add()
	s.Add()
	if s.Len() != 2 || !s.Empty() {
		t.Fatalf("len %d empty %v", s.Len(), s.Empty())
	}
	if got := s.Maps(); len(got) != 2 || len(got[0]) != 0 {
		t.Errorf("maps %v", got)
	}
}
