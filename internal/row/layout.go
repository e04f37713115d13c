package row

import (
	"encoding/binary"
	"unique"
)

// Layout is the column order of a typed stream: the declared fields, each
// with a fixed slot index. Decoders of a typed stream put declared columns
// into slots instead of a map, and compiled expressions read a declared
// column straight from its slot (see Field). A Layout is immutable and safe
// to share between goroutines.
type Layout struct {
	names []string
	index map[string]int
	// id identifies the field list (length-prefixed names): two layouts
	// built from the same names share it, so a layout built by a rule's planner and one built by the
	// stream's decoder are recognised as the same with one comparison.
	id unique.Handle[string]
}

// NewLayout returns the layout of the given field names, in order. A name
// that repeats keeps its first slot. It returns nil for an empty list (a
// schemaless stream).
func NewLayout(names []string) *Layout {
	if len(names) == 0 {
		return nil
	}
	l := &Layout{index: make(map[string]int, len(names))}
	for _, n := range names {
		if _, dup := l.index[n]; dup {
			continue
		}
		l.index[n] = len(l.names)
		l.names = append(l.names, n)
	}
	var key []byte
	for _, n := range l.names {
		key = binary.AppendUvarint(key, uint64(len(n)))
		key = append(key, n...)
	}
	l.id = unique.Make(string(key))
	return l
}

// Len is the number of slots.
func (l *Layout) Len() int { return len(l.names) }

// Name is the field of slot i.
func (l *Layout) Name(i int) string { return l.names[i] }

// Index returns the slot of a field.
func (l *Layout) Index(name string) (int, bool) {
	i, ok := l.index[name]
	return i, ok
}

// same reports whether l and o have the same fields in the same order.
func (l *Layout) same(o *Layout) bool {
	return l == o || (l != nil && o != nil && l.id == o.id)
}

// Field is a declared column of a typed stream resolved to its slot when a
// rule is planned.
type Field struct {
	stream string // "" matches any stream of the row
	name   string
	layout *Layout
	slot   int
}

// Field resolves a declared column; ok is false when the layout does not
// declare it. stream is the stream the reference names ("" any).
func (l *Layout) Field(stream, name string) (Field, bool) {
	i, ok := l.index[name]
	if !ok {
		return Field{}, false
	}
	return Field{stream: stream, name: name, layout: l, slot: i}, true
}

// Get reads the field from r: from its slot when r is a tuple decoded with
// the field's layout, else by name. ok is false when the row has no such
// column.
func (f *Field) Get(r Row) (any, bool) {
	if t, isTuple := r.(*Tuple); isTuple && t.rec != nil && t.rec.layout.same(f.layout) {
		if f.stream != "" && f.stream != t.Emitter {
			return nil, false
		}
		return t.rec.slot(f.slot)
	}
	if r == nil {
		return nil, false
	}
	return r.Value(f.stream, f.name)
}
