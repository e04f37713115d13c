// Package row defines the records that flow between operators: tuples from
// one stream, joined rows, window sets and groups. Operators treat incoming
// tuples as read-only (they are shared by every rule on a stream); the only
// per-rule mutable part is the alias cache, which a rule's first operator
// creates on its own copy (see Tuple.Clone).
package row

// Row is what expressions are evaluated against.
type Row interface {
	// Value looks up a column. stream "" matches any stream of the row.
	Value(stream, name string) (any, bool)
	// Columns returns the columns of one stream ("" for all streams merged,
	// earlier streams winning on name clashes). The map must not be mutated.
	Columns(stream string) map[string]any
	// Meta looks up a metadata key of a stream ("" any).
	Meta(stream, key string) (any, bool)
	// MetaAll returns all metadata of a stream ("" for the first).
	MetaAll(stream string) map[string]any
	// Time is the row's timestamp in ms (event time or arrival time).
	Time() int64
	// Alias returns a cached value of a SELECT alias computed for this row.
	Alias(name string) (any, bool)
	// SetAlias caches the value of a SELECT alias for this row.
	SetAlias(name string, v any)
}

// Tuple is one record of one stream. A tuple of a typed stream may hold its
// columns in slots (see Layout and NewSlotted); any other tuple holds them
// in Message.
type Tuple struct {
	Emitter string
	// Message holds the columns of a tuple without slots; it is nil for a
	// slotted tuple.
	Message   map[string]any
	Metadata  map[string]any
	Timestamp int64
	aliases   map[string]any
	// rec holds the columns of a slotted tuple; it is shared, read-only,
	// by the copies of the tuple (see Clone).
	rec *record
}

var _ Row = (*Tuple)(nil)

// Clone returns a shallow copy with an empty alias cache; the columns (the
// message or the slots) and the metadata are shared and must not be
// mutated.
func (t *Tuple) Clone() *Tuple {
	c := new(Tuple)
	t.CloneTo(c)
	return c
}

// CloneTo makes dst a copy of t as Clone does.
func (t *Tuple) CloneTo(dst *Tuple) {
	*dst = *t
	dst.aliases = nil
}

func (t *Tuple) Value(stream, name string) (any, bool) {
	if stream != "" && stream != t.Emitter {
		return nil, false
	}
	if t.rec != nil {
		return t.rec.value(name)
	}
	v, ok := t.Message[name]
	return v, ok
}

// Columns returns the columns of the tuple. A slotted tuple builds the map
// on first use and keeps it.
func (t *Tuple) Columns(stream string) map[string]any {
	if stream != "" && stream != t.Emitter {
		return nil
	}
	if t.rec != nil {
		return t.rec.columns()
	}
	return t.Message
}

// Range calls fn for every column of the tuple (of stream, "" any), in no
// particular order, without building a map.
func (t *Tuple) Range(stream string, fn func(name string, v any)) {
	if stream != "" && stream != t.Emitter {
		return
	}
	if t.rec != nil {
		t.rec.each(fn)
		return
	}
	for k, v := range t.Message {
		fn(k, v)
	}
}

func (t *Tuple) Meta(stream, key string) (any, bool) {
	if stream != "" && stream != t.Emitter {
		return nil, false
	}
	v, ok := t.Metadata[key]
	return v, ok
}

func (t *Tuple) MetaAll(stream string) map[string]any {
	if stream != "" && stream != t.Emitter {
		return nil
	}
	return t.Metadata
}

func (t *Tuple) Time() int64 { return t.Timestamp }

func (t *Tuple) Alias(name string) (any, bool) {
	v, ok := t.aliases[name]
	return v, ok
}

func (t *Tuple) SetAlias(name string, v any) {
	if t.aliases == nil {
		t.aliases = make(map[string]any, 4)
	}
	t.aliases[name] = v
}

// Aliases returns the alias cache (for snapshots); may be nil.
func (t *Tuple) Aliases() map[string]any { return t.aliases }

// Joined is a row made of one tuple per joined stream; a nil entry is the
// missing side of an outer join.
type Joined struct {
	Tuples  []*Tuple
	aliases map[string]any
}

var _ Row = (*Joined)(nil)

func (j *Joined) Value(stream, name string) (any, bool) {
	for _, t := range j.Tuples {
		if t == nil {
			continue
		}
		if v, ok := t.Value(stream, name); ok {
			return v, true
		}
	}
	return nil, false
}

func (j *Joined) Columns(stream string) map[string]any {
	if stream != "" {
		for _, t := range j.Tuples {
			if t != nil && t.Emitter == stream {
				return t.Columns(stream)
			}
		}
		return nil
	}
	out := make(map[string]any)
	for i := len(j.Tuples) - 1; i >= 0; i-- {
		if t := j.Tuples[i]; t != nil {
			t.Range("", func(k string, v any) { out[k] = v })
		}
	}
	return out
}

func (j *Joined) Meta(stream, key string) (any, bool) {
	for _, t := range j.Tuples {
		if t == nil {
			continue
		}
		if v, ok := t.Meta(stream, key); ok {
			return v, true
		}
	}
	return nil, false
}

func (j *Joined) MetaAll(stream string) map[string]any {
	for _, t := range j.Tuples {
		if t != nil && (stream == "" || t.Emitter == stream) {
			return t.Metadata
		}
	}
	return nil
}

func (j *Joined) Time() int64 {
	for _, t := range j.Tuples {
		if t != nil {
			return t.Timestamp
		}
	}
	return 0
}

func (j *Joined) Alias(name string) (any, bool) {
	v, ok := j.aliases[name]
	return v, ok
}

func (j *Joined) SetAlias(name string, v any) {
	if j.aliases == nil {
		j.aliases = make(map[string]any, 4)
	}
	j.aliases[name] = v
}

// Window carries the bounds of the window a set of rows belongs to.
type Window struct {
	Start   int64
	End     int64
	Trigger int64
}

// Set is the output of a window or join: rows in arrival order with their
// window bounds. Groups is filled by the group-by operator.
type Set struct {
	Rows   []Row
	Window Window
	Groups []*Group
}

// Group is the rows of one GROUP BY key within a window.
type Group struct {
	Key  string
	Rows []Row
	// Folded, when a window aggregated the group as its rows arrived, holds
	// one result per aggregate call site (see eval.AggSite), and Rows holds
	// only the group's first row.
	Folded []Folded
	// aliases caches SELECT aliases computed for the group (aggregates).
	aliases map[string]any
}

// Folded is an aggregate computed incrementally.
type Folded interface {
	Result() (any, error)
}

// Alias returns a cached alias value of the group.
func (g *Group) Alias(name string) (any, bool) {
	v, ok := g.aliases[name]
	return v, ok
}

// SetAlias caches an alias value of the group.
func (g *Group) SetAlias(name string, v any) {
	if g.aliases == nil {
		g.aliases = make(map[string]any, 4)
	}
	g.aliases[name] = v
}
