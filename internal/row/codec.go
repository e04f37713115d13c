package row

import "github.com/rekuiper/rekuiper/internal/value"

// AppendTuple appends a tuple's encoding (emitter, time, columns, metadata
// and alias cache) to buf. Checkpoints and logs embed it. A slotted tuple is
// written as its columns and read back as a tuple without a layout, which
// evaluates the same.
func AppendTuple(buf []byte, t *Tuple) []byte {
	buf = value.AppendString(buf, t.Emitter)
	buf = value.AppendValue(buf, t.Timestamp)
	buf = value.AppendValue(buf, t.Columns(""))
	buf = value.AppendValue(buf, t.Metadata)
	return value.AppendValue(buf, t.aliases)
}

// ReadTuple reads a tuple written by AppendTuple.
func ReadTuple(r *value.Reader) *Tuple {
	t := &Tuple{Emitter: r.String()}
	t.Timestamp, _ = r.Value().(int64)
	t.Message, _ = r.Value().(map[string]any)
	t.Metadata, _ = r.Value().(map[string]any)
	t.aliases, _ = r.Value().(map[string]any)
	return t
}

// AppendTuples appends a count-prefixed list of tuples.
func AppendTuples(buf []byte, ts []*Tuple) []byte {
	buf = value.AppendValue(buf, int64(len(ts)))
	for _, t := range ts {
		buf = AppendTuple(buf, t)
	}
	return buf
}

// ReadTuples reads a list written by AppendTuples.
func ReadTuples(r *value.Reader) []*Tuple {
	n, _ := r.Value().(int64)
	if n < 0 || int(n) > r.Len() {
		return nil
	}
	out := make([]*Tuple, 0, n)
	for i := int64(0); i < n && r.Err() == nil; i++ {
		out = append(out, ReadTuple(r))
	}
	return out
}
