package row

import (
	"strings"
	"unsafe"
)

// Chunk sizes of an Arena: large enough that a record costs a small fraction
// of an allocation, small enough that a retained value does not pin much.
// Decoded tuples are short-lived (each rule keeps its own copy, see
// Tuple.Clone), so their chunk is the largest; a tuple retained by a rule
// pins at most one chunk of records, slots, scalars and text: about 4 KB.
const (
	tupleChunk  = 64   // tuples (3.5 KB)
	recordChunk = 32   // records of slotted tuples (1.8 KB)
	slotChunk   = 64   // slots (1 KB)
	scalarChunk = 32   // float64s, int64s, string headers (256-512 B)
	textChunk   = 1024 // string bytes
	// maxArenaText is the longest string copied into a text chunk; longer
	// ones get an allocation of their own.
	maxArenaText = 256
)

// Arena allocates decoded tuples, their slots and their scalar values
// (float64, int64, string) from chunks, so that decoding a record costs a
// fraction of an allocation instead of one per tuple, per number and per
// string.
//
// Memory an Arena hands out is never reused: chunks are filled front to
// back, then dropped by the arena and freed by the GC once nothing
// references any part of them. A scalar is written once, before it is
// boxed; a tuple and its slots are filled by their producer before it hands
// them on. So every tuple and value it returns is owned by whoever holds
// it, for as long as they like, like any other allocation; the price is
// that a value retained for long (in a window, in analytic state) keeps its
// whole chunk alive, a few KB at most.
//
// An Arena is not safe for concurrent use and must not be copied; the
// tuples and values it returns may be shared between goroutines once
// complete (they are read-only).
type Arena struct {
	tuples  []Tuple
	records []record
	slots   []any
	floats  []float64
	ints    []int64
	strs    []string
	text    strings.Builder
}

// Tuple returns a new tuple with layout l (nil for one holding its columns
// in Message), all its slots absent.
func (a *Arena) Tuple(l *Layout) *Tuple {
	if len(a.tuples) == cap(a.tuples) {
		a.tuples = make([]Tuple, 0, tupleChunk)
	}
	a.tuples = a.tuples[:len(a.tuples)+1]
	t := &a.tuples[len(a.tuples)-1]
	if l != nil {
		if len(a.records) == cap(a.records) {
			a.records = make([]record, 0, recordChunk)
		}
		a.records = a.records[:len(a.records)+1]
		t.rec = &a.records[len(a.records)-1]
		t.rec.layout = l
		t.rec.slots = a.slotSpace(l.Len())
	}
	return t
}

// TupleOf returns a new tuple holding the columns of m, as NewTuple does.
func (a *Arena) TupleOf(l *Layout, m map[string]any) *Tuple {
	t := a.Tuple(l)
	if l == nil {
		t.Message = m
	} else {
		t.fill(m)
	}
	return t
}

func (a *Arena) slotSpace(n int) []any {
	if cap(a.slots)-len(a.slots) < n {
		a.slots = make([]any, 0, max(slotChunk, n))
	}
	i := len(a.slots)
	a.slots = a.slots[:i+n]
	return a.slots[i : i+n : i+n]
}

// Float returns f as an interface value stored in the arena.
func (a *Arena) Float(f float64) any {
	if len(a.floats) == cap(a.floats) {
		a.floats = make([]float64, 0, scalarChunk)
	}
	a.floats = append(a.floats, f)
	return boxAt(&a.floats[len(a.floats)-1])
}

// Int returns i as an interface value stored in the arena.
func (a *Arena) Int(i int64) any {
	if i >= 0 && i < 256 {
		return i // the runtime boxes small integers without allocating
	}
	if len(a.ints) == cap(a.ints) {
		a.ints = make([]int64, 0, scalarChunk)
	}
	a.ints = append(a.ints, i)
	return boxAt(&a.ints[len(a.ints)-1])
}

// String returns a copy of b as a string interface value stored in the
// arena.
func (a *Arena) String(b []byte) any {
	if len(b) == 0 {
		return ""
	}
	if len(a.strs) == cap(a.strs) {
		a.strs = make([]string, 0, scalarChunk)
	}
	a.strs = append(a.strs, a.copyText(b))
	return boxAt(&a.strs[len(a.strs)-1])
}

// copyText copies b into the current text chunk. Builder.String shares the
// builder's bytes, and later writes only append behind them, so strings
// handed out earlier never change; a full chunk is replaced, not grown.
func (a *Arena) copyText(b []byte) string {
	if len(b) > maxArenaText {
		return string(b)
	}
	if a.text.Cap()-a.text.Len() < len(b) {
		a.text = strings.Builder{}
		a.text.Grow(textChunk)
	}
	start := a.text.Len()
	a.text.Write(b)
	return a.text.String()[start:]
}

// eface is the memory layout of an empty interface value (runtime.eface).
type eface struct {
	typ  unsafe.Pointer
	data unsafe.Pointer
}

// boxAt returns *p as an interface value whose data word points at p itself
// instead of at the fresh heap copy that any(*p) allocates. It is the only
// unsafe code of the package, and it is sound for the way Arena uses it:
//
//   - An interface holding a float64, int64 or string is a (type, pointer)
//     pair; the pointer refers to an immutable copy of the value, which the
//     runtime and compiled code only ever read. Any pointer to a value of
//     that type serves, provided the value is never written again: Arena
//     writes each cell once, before boxing it, and never reuses a chunk.
//   - The GC treats an interface's data word as a pointer, and an interior
//     pointer keeps its whole heap object alive, so a chunk lives as long as
//     any value boxed from it. p must point into the heap (a chunk), never
//     at a stack variable.
//   - The type word comes from converting T's zero value (which does not
//     allocate), so type switches, ==, map hashing and reflect see exactly
//     what they would see for any(*p).
//
// T is limited to types the runtime stores indirectly in an interface.
func boxAt[T float64 | int64 | string](p *T) any {
	var zero T
	v := any(zero)
	(*eface)(unsafe.Pointer(&v)).data = unsafe.Pointer(p)
	return v
}
