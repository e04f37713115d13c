package operator

import (
	"encoding/binary"
	"fmt"

	"github.com/rekuiper/rekuiper/internal/eval"
	"github.com/rekuiper/rekuiper/internal/function"
	"github.com/rekuiper/rekuiper/internal/row"
	"github.com/rekuiper/rekuiper/internal/value"
)

// Fold makes a tumbling window aggregate as rows arrive: instead of keeping
// every row until it fires, it keeps, per window and group, the group's
// first row and one accumulator per aggregate call site, and emits a set
// whose groups carry the results (row.Group.Folded). The planner uses it
// when every aggregate can fold and GROUP BY reads only the row; GroupBy is
// then not in the chain. Memory and checkpoints grow with groups, not rows.
type Fold struct {
	Dims  []eval.Expr
	Sites []*eval.AggSite

	key  []byte
	args []any
}

// foldBucket is one tumbling window's groups, by the window's end.
type foldBucket struct {
	End    int64
	Groups []*foldGroup
	// Err is the first GROUP BY error of the window's rows; the window's
	// emission fails with it, as grouping the kept rows would have.
	Err   string
	index map[string]*foldGroup
}

type foldGroup struct {
	Key   string
	First *row.Tuple
	Accs  []function.Accumulator
}

// foldMarker stands for the row in count(*): any non-nil value.
var foldMarker any = true

// fold adds t to its window's bucket.
func (w *Window) fold(ctx *Context, t *row.Tuple) {
	st := &w.st
	if w.Spec.EventTime && st.First != 0 && t.Timestamp < st.First {
		// Before the first event-time window's start: emitRange would
		// leave it out of that window and no later window contains it.
		return
	}
	size := w.Spec.Size
	end := st.Next + (floorDiv(t.Timestamp-st.Next, size)+1)*size
	if !w.Spec.EventTime && end < st.Next {
		// Read before the last boundary, here after it fired: the open
		// window takes it (as emitRange does for kept rows).
		end = st.Next
	}
	b := w.bucket(end)
	f := w.Fold
	ec := evalCtx(ctx, t)
	f.key = f.key[:0]
	for _, d := range f.Dims {
		v, err := d(ec)
		if err != nil {
			if b.Err == "" {
				b.Err = fmt.Sprintf("run Group By error: %v", err)
			}
			return
		}
		f.key = value.AppendValue(f.key, v)
	}
	g, ok := b.index[string(f.key)]
	if !ok {
		g = f.newGroup(string(f.key), t)
		b.index[g.Key] = g
		b.Groups = append(b.Groups, g)
	}
	for i, s := range f.Sites {
		f.args = f.args[:0]
		var failed error
		for j, a := range s.Args {
			if s.Star[j] {
				f.args = append(f.args, foldMarker)
				continue
			}
			v, err := a(ec)
			if err != nil {
				failed = err
				break
			}
			f.args = append(f.args, v)
		}
		if failed != nil {
			g.Accs[i].Fail(failed)
			continue
		}
		g.Accs[i].Add(f.args)
	}
}

// newGroup starts a group; every site is Foldable (the planner checks), so
// every Def has an accumulator.
func (f *Fold) newGroup(key string, first *row.Tuple) *foldGroup {
	g := &foldGroup{Key: key, First: first, Accs: make([]function.Accumulator, len(f.Sites))}
	for i, s := range f.Sites {
		g.Accs[i] = s.Def.Accumulate()
	}
	return g
}

// bucket returns the bucket of the window ending at end, creating it.
// Buckets stay ordered by end; rows nearly always go to the last one.
func (w *Window) bucket(end int64) *foldBucket {
	bs := w.st.Buckets
	i := len(bs)
	for i > 0 && bs[i-1].End >= end {
		if bs[i-1].End == end {
			return bs[i-1]
		}
		i--
	}
	b := &foldBucket{End: end, index: map[string]*foldGroup{}}
	w.st.Buckets = append(bs, nil)
	copy(w.st.Buckets[i+1:], w.st.Buckets[i:])
	w.st.Buckets[i] = b
	return b
}

// emitFolded emits the window [start, end) from its bucket and drops the
// buckets of windows that ended by then. Without GROUP BY the window is one
// group even when empty, as GroupBy makes it.
func (w *Window) emitFolded(start, end, trigger int64, emit Emit) error {
	var b *foldBucket
	n := 0
	for _, x := range w.st.Buckets {
		if x.End > end {
			break
		}
		if x.End == end {
			b = x
		}
		n++
	}
	w.st.Buckets = append(w.st.Buckets[:0], w.st.Buckets[n:]...)
	if b != nil && b.Err != "" {
		return fmt.Errorf("%s", b.Err)
	}
	set := &row.Set{Window: row.Window{Start: start, End: end, Trigger: trigger}}
	if b != nil {
		for _, g := range b.Groups {
			set.Groups = append(set.Groups, g.group())
		}
	}
	if len(set.Groups) == 0 {
		if len(w.Fold.Dims) > 0 {
			// No groups: nothing to emit, as GroupBy does.
			return nil
		}
		set.Groups = []*row.Group{w.Fold.newGroup("", nil).group()}
	}
	emit(Item{Kind: Data, Set: set})
	return nil
}

func (g *foldGroup) group() *row.Group {
	out := &row.Group{Key: g.Key, Folded: make([]row.Folded, len(g.Accs))}
	if g.First != nil {
		out.Rows = []row.Row{g.First}
	}
	for i, a := range g.Accs {
		out.Folded[i] = a
	}
	return out
}

// refold moves rows a checkpoint of the row-keeping window left in Rows
// (written before the rule folded) into buckets.
func (w *Window) refold(ctx *Context) {
	rows := w.st.Rows
	w.st.Rows = nil
	for _, t := range rows {
		w.fold(ctx, t)
	}
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// appendBuckets encodes the buckets for a checkpoint.
func appendBuckets(buf []byte, bs []*foldBucket) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(bs)))
	for _, b := range bs {
		buf = binary.AppendVarint(buf, b.End)
		buf = value.AppendString(buf, b.Err)
		buf = binary.AppendUvarint(buf, uint64(len(b.Groups)))
		for _, g := range b.Groups {
			buf = value.AppendString(buf, g.Key)
			buf = row.AppendTuple(buf, g.First)
			buf = binary.AppendUvarint(buf, uint64(len(g.Accs)))
			for _, a := range g.Accs {
				buf = a.AppendState(buf)
			}
		}
	}
	return buf
}

// readBuckets decodes what appendBuckets wrote, with fresh accumulators
// from the fold's sites.
func (f *Fold) readBuckets(r *value.Reader) ([]*foldBucket, error) {
	n := r.Uvarint()
	var bs []*foldBucket
	for i := uint64(0); i < n && r.Err() == nil; i++ {
		b := &foldBucket{End: r.Varint(), Err: r.String()}
		ng := r.Uvarint()
		if ng > uint64(r.Len()) {
			return nil, fmt.Errorf("checkpoint claims %d groups in %d bytes", ng, r.Len())
		}
		b.index = make(map[string]*foldGroup, ng)
		b.Groups = make([]*foldGroup, 0, ng)
		for j := uint64(0); j < ng && r.Err() == nil; j++ {
			key := r.String()
			first := row.ReadTuple(r)
			na := r.Uvarint()
			if f == nil || na != uint64(len(f.Sites)) {
				return nil, fmt.Errorf("checkpoint has %d aggregates per group, the rule %d", na, len(f.Sites))
			}
			g := f.newGroup(key, first)
			for _, a := range g.Accs {
				a.ReadState(r)
			}
			b.Groups = append(b.Groups, g)
			b.index[key] = g
		}
		bs = append(bs, b)
	}
	return bs, r.Err()
}
