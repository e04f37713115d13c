package row

import (
	"maps"
	"sync/atomic"
)

// record holds the columns of a slotted tuple: the declared ones in slots,
// the others in extra. Once its producer has filled it, a record is
// read-only and shared by every copy of its tuple, across rules; only its
// cache of materialized columns is set later, atomically.
type record struct {
	layout *Layout
	// slots holds the value of layout field i at i: nil when the column is
	// absent, null{} when it is present with a null value.
	slots []any
	extra map[string]any
	cols  atomic.Value // map[string]any, built on first use
}

// null marks a slot whose column is present with a null value; a nil slot
// is an absent column.
type null struct{}

// NewSlotted returns a tuple of layout l whose columns are all absent; set
// them with Put and Set before handing the tuple on.
func NewSlotted(l *Layout) *Tuple {
	return &Tuple{rec: &record{layout: l, slots: make([]any, l.Len())}}
}

// NewTuple returns a tuple holding the columns of m: with a layout, in
// slots (m is not kept); without, m is its Message.
func NewTuple(l *Layout, m map[string]any) *Tuple {
	if l == nil {
		return &Tuple{Message: m}
	}
	t := NewSlotted(l)
	t.fill(m)
	return t
}

func (t *Tuple) fill(m map[string]any) {
	for k, v := range m {
		t.Set(k, v)
	}
}

// Layout returns the tuple's layout, nil when its columns are in Message.
func (t *Tuple) Layout() *Layout {
	if t.rec == nil {
		return nil
	}
	return t.rec.layout
}

// Put sets the column in slot i of a slotted tuple (nil is a present null).
// Like Set, it is for the tuple's producer, before the tuple is handed on,
// or for a tuple made private with Unshare, before its columns are read.
func (t *Tuple) Put(i int, v any) {
	if v == nil {
		v = null{}
	}
	t.rec.slots[i] = v
}

// Set sets a column: into its slot when the tuple's layout declares it,
// else into the other columns. See Put for who may call it.
func (t *Tuple) Set(name string, v any) {
	r := t.rec
	if r == nil {
		if t.Message == nil {
			t.Message = make(map[string]any)
		}
		t.Message[name] = v
		return
	}
	if i, ok := r.layout.index[name]; ok {
		t.Put(i, v)
		return
	}
	if r.extra == nil {
		r.extra = make(map[string]any)
	}
	r.extra[name] = v
}

// Unshare gives the tuple private copies of its columns, so that Put and
// Set change it alone and not the tuple it was cloned from.
func (t *Tuple) Unshare() {
	if r := t.rec; r != nil {
		t.rec = &record{layout: r.layout, slots: append([]any(nil), r.slots...), extra: maps.Clone(r.extra)}
		return
	}
	t.Message = maps.Clone(t.Message)
}

func (r *record) slot(i int) (any, bool) {
	switch v := r.slots[i].(type) {
	case nil:
		return nil, false
	case null:
		return nil, true
	default:
		return v, true
	}
}

func (r *record) value(name string) (any, bool) {
	if i, ok := r.layout.index[name]; ok {
		return r.slot(i)
	}
	v, ok := r.extra[name]
	return v, ok
}

func (r *record) each(fn func(name string, v any)) {
	for i := range r.slots {
		if v, ok := r.slot(i); ok {
			fn(r.layout.names[i], v)
		}
	}
	for k, v := range r.extra {
		fn(k, v)
	}
}

// columns builds the map of all columns once; rules reading the record at
// the same time may both build it, and keep whichever was stored first.
func (r *record) columns() map[string]any {
	if m, ok := r.cols.Load().(map[string]any); ok {
		return m
	}
	m := make(map[string]any, len(r.slots)+len(r.extra))
	r.each(func(k string, v any) { m[k] = v })
	if !r.cols.CompareAndSwap(nil, m) {
		return r.cols.Load().(map[string]any)
	}
	return m
}
