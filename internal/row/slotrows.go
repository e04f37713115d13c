package row

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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
// Ownership: SlotRows are carved from a SlotBlock, which holds the
// emissions a projection makes for one input item. The producer fills an
// emission (Add) and hands it on; whoever receives it last calls Release.
// Once every emission of a block is released and its producer called
// Done, the block is reused: released rows must not be touched. Values read
// from them are the rows' own (shared, read-only) and stay valid.
type SlotRows struct {
	cols  *Columns
	vals  []any
	block *SlotBlock
	// inBlock: vals lies in the block's buffer, at its end while the
	// emission is the block's last.
	inBlock bool
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
	n := max(s.cols.Len(), 1)
	b := s.block
	if s.inBlock && &b.rows[len(b.rows)-1] == s && len(b.vals)+n <= cap(b.vals) {
		// The last emission of the block grows into the block's room.
		b.vals = b.vals[:len(b.vals)+n]
	} else if len(s.vals)+n > cap(s.vals) || s.inBlock {
		// Elsewhere the rows move to a buffer of their own.
		grown := make([]any, len(s.vals), max(2*len(s.vals), 8*n))
		copy(grown, s.vals)
		s.vals, s.inBlock = grown, false
	}
	s.vals = s.vals[:len(s.vals)+n]
	row := s.vals[len(s.vals)-n:]
	for i := range row {
		row[i] = Omitted
	}
	return row[:s.cols.Len():s.cols.Len()]
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

// Release tells that the last user of the rows is done with them.
func (s *SlotRows) Release() {
	if s.block != nil {
		s.block.unref()
	}
}

// SlotBlock holds the emissions a projection makes for one input item,
// their rows in one buffer, so that an input item costs one pooled object
// whatever the number of emissions.
type SlotBlock struct {
	pool *SlotPool
	vals []any      // the rows' slots; emissions are consecutive ranges
	rows []SlotRows // the emissions
	refs atomic.Int32
}

// Rows returns a new, empty emission carved from the block.
func (b *SlotBlock) Rows() *SlotRows {
	b.refs.Add(1)
	if len(b.rows) == cap(b.rows) {
		// Emissions handed out keep the old array; the block moves on.
		b.rows = make([]SlotRows, 0, max(8, 2*cap(b.rows)))
	}
	b.rows = append(b.rows, SlotRows{cols: b.pool.cols, vals: b.vals[len(b.vals):len(b.vals)], block: b, inBlock: true})
	return &b.rows[len(b.rows)-1]
}

// Len returns the number of emissions carved from the block.
func (b *SlotBlock) Len() int { return len(b.rows) }

// Done tells that the producer carves no more emissions from the block.
func (b *SlotBlock) Done() { b.unref() }

func (b *SlotBlock) unref() {
	if b.refs.Add(-1) != 0 {
		return
	}
	clear(b.vals) // drop references to the values
	clear(b.rows)
	if cap(b.vals) > maxBlockSlots {
		b.vals = nil // do not keep the room a burst needed
	}
	b.vals, b.rows = b.vals[:0], b.rows[:0]
	b.pool.pool.Put(b)
}

// maxBlockSlots bounds the buffer a recycled block keeps.
const maxBlockSlots = 4096

// SlotPool recycles the SlotBlocks of one projection. Get is called by
// the producer; the blocks come back once released, from any goroutine.
type SlotPool struct {
	cols *Columns
	pool sync.Pool
}

// NewSlotPool returns a pool of blocks of rows with columns cols.
func NewSlotPool(cols *Columns) *SlotPool {
	return &SlotPool{cols: cols}
}

// Columns returns the columns of the pool's rows.
func (p *SlotPool) Columns() *Columns { return p.cols }

// Get returns an empty block with room for n rows at least, reused when
// one was released.
func (p *SlotPool) Get(n int) *SlotBlock {
	b, ok := p.pool.Get().(*SlotBlock)
	if !ok {
		b = &SlotBlock{pool: p}
	}
	b.refs.Store(1) // the producer's
	if want := n * max(p.cols.Len(), 1); cap(b.vals) < want {
		b.vals = make([]any, 0, want)
	}
	if cap(b.rows) < n {
		b.rows = make([]SlotRows, 0, n)
	}
	return b
}
