package row

import (
	"slices"
	"strings"
	"sync"
)

// Columns names the columns of a rule's slot rows (see SlotRows). A rule
// builds it once, when its projection is planned; it is read-only after.
type Columns struct {
	names []string
	// sorted lists the column indexes in name order: JSON objects are
	// written with sorted keys.
	sorted []int
}

// NewColumns returns the columns named names, in that order.
func NewColumns(names []string) *Columns {
	c := &Columns{names: slices.Clone(names), sorted: make([]int, len(names))}
	for i := range c.sorted {
		c.sorted[i] = i
	}
	slices.SortStableFunc(c.sorted, func(a, b int) int { return strings.Compare(c.names[a], c.names[b]) })
	return c
}

// Len returns the number of columns.
func (c *Columns) Len() int { return len(c.names) }

// Name returns the name of column i.
func (c *Columns) Name(i int) string { return c.names[i] }

// Sorted returns the column indexes in name order; it must not be changed.
func (c *Columns) Sorted() []int { return c.sorted }

// omittedValue marks a column absent from a slot row; a nil value is a
// column present with a null value.
type omittedValue struct{}

// Omitted is the value of a column absent from a slot row (a projection
// leaves out a field whose value is nil, as a map row would not hold it).
var Omitted any = omittedValue{}

// SlotRows is one emission of rows that share their columns, the values of
// each row in slots: no map per row. It is what a rule's projection emits
// for the sinks that can take it (see runtime.SlotSink); the others get
// the maps of Maps.
//
// Ownership: the producer fills it (Add) and hands it on; whoever receives
// it last calls Release, after which it is reused and must not be touched.
// Values read from it are the row's own (shared, read-only), and stay valid
// after Release; only the SlotRows itself is reused.
type SlotRows struct {
	cols *Columns
	vals []any
	pool *SlotPool
}

// Columns returns the columns of the rows.
func (s *SlotRows) Columns() *Columns { return s.cols }

// Len returns the number of rows.
func (s *SlotRows) Len() int {
	if s.cols.Len() == 0 {
		return len(s.vals) // one Omitted placeholder per row
	}
	return len(s.vals) / s.cols.Len()
}

// Value returns the value of column j in row i, and whether the row has
// the column.
func (s *SlotRows) Value(i, j int) (any, bool) {
	v := s.vals[i*s.cols.Len()+j]
	if v == Omitted {
		return nil, false
	}
	return v, true
}

// Row returns the slots of row i (Omitted for an absent column); the slice
// must not be changed or kept.
func (s *SlotRows) Row(i int) []any {
	n := s.cols.Len()
	return s.vals[i*n : (i+1)*n : (i+1)*n]
}

// Add appends a row whose columns are all absent and returns its slots, to
// be filled by the producer before it hands the rows on.
func (s *SlotRows) Add() []any {
	n := s.cols.Len()
	if n == 0 {
		s.vals = append(s.vals, Omitted)
		return s.vals[len(s.vals):]
	}
	for range n {
		s.vals = append(s.vals, Omitted)
	}
	return s.vals[len(s.vals)-n:]
}

// Truncate keeps the first n rows.
func (s *SlotRows) Truncate(n int) {
	if n < s.Len() {
		keep := n * max(s.cols.Len(), 1)
		clear(s.vals[keep:])
		s.vals = s.vals[:keep]
	}
}

// Empty reports whether no row has any column (what omitIfEmpty skips).
func (s *SlotRows) Empty() bool {
	for _, v := range s.vals {
		if v != Omitted {
			return false
		}
	}
	return true
}

// RowEmpty reports whether row i has no column.
func (s *SlotRows) RowEmpty(i int) bool {
	for _, v := range s.Row(i) {
		if v != Omitted {
			return false
		}
	}
	return true
}

// Map returns a new map of row i's columns, owned by the caller.
func (s *SlotRows) Map(i int) map[string]any {
	r := s.Row(i)
	m := make(map[string]any, len(r))
	for j, v := range r {
		if v != Omitted {
			m[s.cols.names[j]] = v
		}
	}
	return m
}

// Maps returns the rows as new maps, owned by the caller: what sinks that
// read maps are given.
func (s *SlotRows) Maps() []map[string]any {
	out := make([]map[string]any, s.Len())
	for i := range out {
		out[i] = s.Map(i)
	}
	return out
}

// Release hands the rows back to their pool once their last user is done.
// The values they held are not touched.
func (s *SlotRows) Release() {
	clear(s.vals) // drop references to the values
	s.vals = s.vals[:0]
	if s.pool != nil {
		s.pool.pool.Put(s)
	}
}

// SlotPool recycles the SlotRows of one projection. Get is called by the
// producer; Release may be called from any goroutine.
type SlotPool struct {
	cols *Columns
	pool sync.Pool
}

// NewSlotPool returns a pool of SlotRows with columns cols.
func NewSlotPool(cols *Columns) *SlotPool {
	return &SlotPool{cols: cols}
}

// Columns returns the columns of the pool's rows.
func (p *SlotPool) Columns() *Columns { return p.cols }

// Get returns an empty SlotRows, reused when one was released.
func (p *SlotPool) Get() *SlotRows {
	if s, ok := p.pool.Get().(*SlotRows); ok {
		return s
	}
	return &SlotRows{cols: p.cols, vals: make([]any, 0, max(p.cols.Len(), 1)), pool: p}
}
