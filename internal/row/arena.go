package row

import (
	"math"
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
	// maxFree bounds the recycled chunks of each kind an arena keeps for
	// reuse (and maxFreeMaps its recycled maps), so that one burst does
	// not pin its memory for good.
	maxFree     = 64
	maxFreeMaps = 256
	// maxWindow bounds the filled chunks of each kind (and maxWindowMaps
	// the maps) a window tracks for recycling; beyond, they are left to
	// the GC, as they would be by Keep.
	maxWindow     = 32
	maxWindowMaps = 512
)

// Arena allocates decoded tuples, their slots, their scalar values
// (float64, int64, string) and the maps of schemaless tuples from chunks,
// so that decoding a record costs a fraction of an allocation instead of
// one per tuple, per number and per string.
//
// Memory is handed out in windows that end with Keep or Recycle, called by
// the arena's owner once the tuples of a window went wherever they go:
//
//   - Keep: someone may hold on to what the window handed out (a window
//     operator, the live tap, a sink given maps). That memory is never
//     reused; the GC frees a chunk once nothing references any part of
//     it. So a kept tuple or value is owned by whoever holds it, for as
//     long as they like, like any other allocation; the price is that a
//     value retained for long keeps its whole chunk alive, a few KB at most.
//   - Recycle: nothing references what the window handed out any more, and
//     nothing will read it again. Its chunks and maps are reused by the
//     next windows instead of being allocated anew. A value read after
//     Recycle may show another record's data; builds with the race
//     detector or the arenapoison tag overwrite recycled memory with
//     garbage at Recycle, so that tests catch such a read.
//
// An owner that calls neither gets Keep's behaviour: an arena tracks what
// a window handed out only once Recycle was called. A scalar is written
// once, before it is boxed; a tuple and its slots are filled by their
// producer before it hands them on.
//
// An Arena is not safe for concurrent use and must not be copied; the
// tuples and values it returns may be shared between goroutines once
// complete (they are read-only).
type Arena struct {
	tuples  chunks[Tuple]
	records chunks[record]
	slots   chunks[any]
	floats  chunks[float64]
	ints    chunks[int64]
	strs    chunks[string]
	text    chunks[byte]
	// maps handed out in the current window, and recycled ones (cleared
	// when handed out again).
	maps     []map[string]any
	freeMaps []map[string]any
	// recycling is set by the first Recycle: from then on windows track
	// their chunks and maps.
	recycling bool
}

// chunks is one kind of arena memory: the chunk being filled, from base on
// handed out in the current window (before base: kept by an earlier one),
// the chunks filled in the current window, and recycled chunks.
type chunks[T any] struct {
	cur   []T
	base  int
	full  [][]T
	free  [][]T
	track bool // set by the first recycle
}

// room makes the current chunk hold at least n more cells, starting a new
// chunk (of size cells, or n) when it does not.
func (c *chunks[T]) room(n, size int) {
	if cap(c.cur)-len(c.cur) >= n {
		return
	}
	if c.cur != nil && c.base == 0 && c.track && len(c.full) < maxWindow {
		c.full = append(c.full, c.cur)
	}
	// Any other full chunk is left to the GC (one with a kept prefix, one
	// beyond maxWindow, any before the first recycle): the cells it handed
	// out in this window are not reused.
	c.cur, c.base = nil, 0
	if k := len(c.free); k > 0 && cap(c.free[k-1]) >= n {
		c.cur = c.free[k-1][:0]
		c.free[k-1] = nil
		c.free = c.free[:k-1]
		return
	}
	c.cur = make([]T, 0, max(size, n))
}

// take hands out the next n cells of the current chunk (room must have
// made space). Recycled cells keep their old or poisoned contents.
func (c *chunks[T]) take(n int) []T {
	i := len(c.cur)
	c.cur = c.cur[:i+n]
	return c.cur[i : i+n : i+n]
}

func (c *chunks[T]) keep() {
	clear(c.full)
	c.full = c.full[:0]
	c.base = len(c.cur)
}

func (c *chunks[T]) recycle(poison func([]T)) {
	c.track = true
	for _, ch := range c.full {
		if poison != nil {
			poison(ch)
		}
		if len(c.free) < maxFree {
			c.free = append(c.free, ch[:0])
		}
	}
	clear(c.full)
	c.full = c.full[:0]
	if poison != nil {
		poison(c.cur[c.base:])
	}
	c.cur = c.cur[:c.base]
}

// Keep ends the current window: what it handed out may be held by anyone
// and is never reused.
func (a *Arena) Keep() {
	a.tuples.keep()
	a.records.keep()
	a.slots.keep()
	a.floats.keep()
	a.ints.keep()
	a.strs.keep()
	a.text.keep()
	clear(a.maps)
	a.maps = a.maps[:0]
}

// Recycle ends the current window: nothing references or reads what it
// handed out any more, so it is reused by the next windows (see Arena).
func (a *Arena) Recycle() {
	a.tuples.recycle(poisonFn(poisonTuples))
	a.records.recycle(poisonFn(poisonRecords))
	a.slots.recycle(poisonFn(poisonAnys))
	a.floats.recycle(poisonFn(poisonFloats))
	a.ints.recycle(poisonFn(poisonInts))
	a.strs.recycle(poisonFn(poisonStrings))
	a.text.recycle(poisonFn(poisonBytes))
	a.recycling = true
	for _, m := range a.maps {
		clear(m)
		if poisonRecycled {
			m[poisonText] = poisonText
		}
		if len(a.freeMaps) < maxFreeMaps {
			a.freeMaps = append(a.freeMaps, m)
		}
	}
	clear(a.maps)
	a.maps = a.maps[:0]
}

// Map returns an empty map for a schemaless tuple's columns, with room for
// about hint entries when new.
func (a *Arena) Map(hint int) map[string]any {
	var m map[string]any
	if k := len(a.freeMaps); k > 0 {
		m = a.freeMaps[k-1]
		a.freeMaps[k-1] = nil
		a.freeMaps = a.freeMaps[:k-1]
		clear(m)
	} else {
		m = make(map[string]any, hint)
	}
	if a.recycling && len(a.maps) < maxWindowMaps {
		a.maps = append(a.maps, m)
	}
	return m
}

// Tuple returns a new tuple with layout l (nil for one holding its columns
// in Message), all its slots absent.
func (a *Arena) Tuple(l *Layout) *Tuple {
	a.tuples.room(1, tupleChunk)
	t := &a.tuples.take(1)[0]
	*t = Tuple{}
	if l != nil {
		a.records.room(1, recordChunk)
		t.rec = &a.records.take(1)[0]
		*t.rec = record{layout: l, slots: a.slotSpace(l.Len())}
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
	a.slots.room(n, slotChunk)
	s := a.slots.take(n)
	clear(s)
	return s
}

// Float returns f as an interface value stored in the arena.
func (a *Arena) Float(f float64) any {
	a.floats.room(1, scalarChunk)
	p := &a.floats.take(1)[0]
	*p = f
	return boxAt(p)
}

// Int returns i as an interface value stored in the arena.
func (a *Arena) Int(i int64) any {
	if i >= 0 && i < 256 {
		return i // the runtime boxes small integers without allocating
	}
	a.ints.room(1, scalarChunk)
	p := &a.ints.take(1)[0]
	*p = i
	return boxAt(p)
}

// String returns a copy of b as a string interface value stored in the
// arena.
func (a *Arena) String(b []byte) any {
	if len(b) == 0 {
		return ""
	}
	a.strs.room(1, scalarChunk)
	p := &a.strs.take(1)[0]
	*p = a.copyText(b)
	return boxAt(p)
}

// copyText copies b into the current text chunk and returns a string of
// those bytes. Later writes only go behind them, so strings handed out
// earlier never change until their window is recycled.
func (a *Arena) copyText(b []byte) string {
	if len(b) > maxArenaText {
		return string(b)
	}
	a.text.room(len(b), textChunk)
	s := a.text.take(len(b))
	copy(s, b)
	return unsafe.String(&s[0], len(s))
}

// poisonText marks recycled strings, slots and maps in poisoning builds.
const poisonText = "\x00recycled arena memory"

func poisonFn[T any](f func([]T)) func([]T) {
	if !poisonRecycled {
		return nil
	}
	return f
}

func poisonTuples(ts []Tuple) {
	for i := range ts {
		ts[i] = Tuple{Emitter: poisonText, Timestamp: math.MinInt64}
	}
}

func poisonRecords(rs []record) {
	for i := range rs {
		rs[i] = record{} // a read of its columns panics
	}
}

func poisonAnys(vs []any) {
	for i := range vs {
		vs[i] = poisonText
	}
}

func poisonFloats(fs []float64) {
	for i := range fs {
		fs[i] = -7.777e77
	}
}

func poisonInts(is []int64) {
	for i := range is {
		is[i] = math.MinInt64 + 7
	}
}

func poisonStrings(ss []string) {
	for i := range ss {
		ss[i] = poisonText
	}
}

func poisonBytes(bs []byte) {
	for i := range bs {
		bs[i] = '#'
	}
}

// eface is the memory layout of an empty interface value (runtime.eface).
type eface struct {
	typ  unsafe.Pointer
	data unsafe.Pointer
}

// boxAt returns *p as an interface value whose data word points at p itself
// instead of at the fresh heap copy that any(*p) allocates. It is the only
// unsafe code of the package besides copyText, and it is sound for the way
// Arena uses it:
//
//   - An interface holding a float64, int64 or string is a (type, pointer)
//     pair; the pointer refers to an immutable copy of the value, which the
//     runtime and compiled code only ever read. Any pointer to a value of
//     that type serves, provided the value is not written while anyone may
//     read it: Arena writes each cell before boxing it, and writes it again
//     only after Recycle, when its owner vouched that nobody holds it.
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

// PoisonRecycled reports whether this build overwrites recycled memory
// (the race detector or the arenapoison tag): other packages that reuse
// memory on the same promise (Consumer.Kept) poison theirs in the same
// builds.
const PoisonRecycled = poisonRecycled
