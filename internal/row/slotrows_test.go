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
	s := pool.Get()
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
	again := pool.Get()
	if again.Len() != 0 {
		t.Fatalf("reused rows hold %d rows", again.Len())
	}
}

func TestSlotRowsNoColumns(t *testing.T) {
	s := NewSlotPool(NewColumns(nil)).Get()
	s.Add()
	s.Add()
	if s.Len() != 2 || !s.Empty() {
		t.Fatalf("len %d empty %v", s.Len(), s.Empty())
	}
	if got := s.Maps(); len(got) != 2 || len(got[0]) != 0 {
		t.Errorf("maps %v", got)
	}
}
