package format

import "github.com/rekuiper/rekuiper/internal/row"

var _ TupleRecycler = (*JSONCodec)(nil)

// NewJSONStream returns a JSON codec for a stream with the given declared
// fields (none: schemaless). DecodeTuples puts declared fields into the
// slots of that layout.
func NewJSONStream(fields []string) *JSONCodec {
	c := NewJSON()
	c.schema = row.NewLayout(fields)
	return c
}

// DecodeTuples decodes the records of payload as Decode does and appends
// them to dst as tuples. A typed stream's tuples are slotted (declared
// fields in slots, see row.Layout); a schemaless stream's hold a Message.
// Tuples, slots and scalar values come from the codec's arena (see
// row.Arena): a record costs a fraction of an allocation, plus a map when
// the stream is schemaless or the record has undeclared fields. Values keep
// their JSON types (int64 and float64 stay distinct), exactly as Decode
// gives them.
func (c *JSONCodec) DecodeTuples(dst []*row.Tuple, payload []byte) ([]*row.Tuple, error) {
	c.data, c.pos, c.str, c.depth = payload, 0, "", 0
	c.ar = &c.arena
	defer func() { c.data, c.str, c.ar = nil, "", nil }()
	c.skipWS()
	if c.pos >= len(c.data) {
		return dst, c.errEOF()
	}
	if c.data[c.pos] != '[' {
		if c.data[c.pos] != '{' {
			return dst, c.notRecords()
		}
		t, err := c.tuple()
		if err != nil {
			return dst, err
		}
		if err := c.end(); err != nil {
			return dst, err
		}
		return append(dst, t), nil
	}
	start := c.pos
	v, err := c.array()
	if err != nil {
		return dst, err
	}
	if err := c.end(); err != nil {
		return dst, err
	}
	ms, err := records(v.([]any), start)
	if err != nil {
		return dst, err
	}
	for _, m := range ms {
		dst = append(dst, c.arena.TupleOf(c.schema, m))
	}
	return dst, nil
}

// tuple decodes the top-level object at c.pos into a tuple.
func (c *JSONCodec) tuple() (*row.Tuple, error) {
	t := c.arena.Tuple(c.schema)
	if c.schema == nil {
		t.Message = c.arena.Map(c.hint)
	}
	extra := 0
	err := c.members(func(idx int, k string, v any) {
		if s := c.slot(idx, k); s >= 0 {
			t.Put(s, v)
			return
		}
		t.Set(k, v)
		extra++
	})
	if err != nil {
		return nil, err
	}
	c.hint = extra
	return t, nil
}

// slot returns the slot of the idx-th key k of a top-level object, -1 when
// the stream does not declare it. Messages of a stream usually list their
// keys in the same order, so the answer for each position is remembered.
func (c *JSONCodec) slot(idx int, k string) int {
	if c.schema == nil {
		return -1
	}
	if idx < len(c.slotKeys) && c.slotKeys[idx] == k {
		return c.slotIdx[idx]
	}
	s, ok := c.schema.Index(k)
	if !ok {
		s = -1
	}
	if idx < maxLayout {
		for len(c.slotKeys) <= idx {
			c.slotKeys = append(c.slotKeys, "")
			c.slotIdx = append(c.slotIdx, -1)
		}
		c.slotKeys[idx], c.slotIdx[idx] = k, s
	}
	return s
}

// Keep tells that the tuples decoded since the last Keep or Recycle may be
// held by anyone (see TupleRecycler).
func (c *JSONCodec) Keep() { c.arena.Keep() }

// Recycle tells that nothing holds or reads the tuples decoded since the
// last Keep or Recycle any more (see TupleRecycler).
func (c *JSONCodec) Recycle() { c.arena.Recycle() }
