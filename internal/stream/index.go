package stream

import (
	"math"
	"slices"

	"github.com/rekuiper/rekuiper/internal/row"
)

// Match is a condition a rule tests first on every record, before anything
// else of the rule sees the record: column = one of Values. The planner
// sets it only where a false outcome drops the record silently (the
// leftmost conjunct of a WHERE that runs right after preprocessing, see
// planner.IndexKey), so the subscription may leave such records out of the
// rule's deliveries. The rule still evaluates its whole WHERE on what it
// receives: the index only has to deliver a superset of the records the
// condition keeps or fails on.
type Match struct {
	// Column is a column of the stream, read as the rule reads it.
	Column string
	// Values are the literals the column is compared with, all of one
	// kind: numbers (int64, float64), strings or bools. Any other set
	// leaves the consumer unindexed.
	Values []any
}

// kind is the comparison family of a value under value.Compare: a value
// equals a literal of its own kind by key; against a literal of another
// kind the comparison fails with an error, which the rule must see.
type kind int8

const (
	kindOther kind = iota // nil, NaN, datetimes, arrays, objects, bytes
	kindNum
	kindStr
	kindBool
	kinds
)

func kindOf(v any) kind {
	switch x := v.(type) {
	case int64:
		return kindNum
	case float64:
		if math.IsNaN(x) {
			// NaN compares equal to every number (value.Compare).
			return kindOther
		}
		return kindNum
	case string:
		return kindStr
	case bool:
		return kindBool
	}
	return kindOther
}

// member is a consumer attached to a subscription.
type member struct {
	id int
	c  *Consumer
	// col and keys are the validated Match; col is "" when unindexed.
	col  string
	kind kind
	keys []any // float64 (numbers: 1 and 1.0 meet), string or bool

	// Read loop only: in the current delivery (mark), how many tuples are
	// routed to the consumer, and which, unless they are the first n of
	// the delivery's tuples (pending nil).
	pending []*row.Tuple
	n       int
	mark    uint64

	// Under Subscription.mu: base is the subscription's deliveries when
	// the member joined the fan-out, delivered how many it was given
	// since; the difference is what the index spared it.
	inFan     bool
	base      int64
	delivered int64
}

func newMember(id int, c *Consumer) *member {
	m := &member{id: id, c: c}
	if c.Match == nil || c.Match.Column == "" || len(c.Match.Values) == 0 {
		return m
	}
	k := kindOf(c.Match.Values[0])
	if k == kindOther {
		return m
	}
	var keys []any
	for _, v := range c.Match.Values {
		if kindOf(v) != k {
			return m
		}
		if x, ok := v.(int64); ok {
			v = float64(x)
		}
		if !slices.Contains(keys, v) {
			keys = append(keys, v)
		}
	}
	m.col, m.kind, m.keys = c.Match.Column, k, keys
	return m
}

// fanout is who gets what: the consumers without a Match get every tuple;
// the others are found by column value. Built by the read loop when the
// consumers changed, read-only afterwards.
type fanout struct {
	members []*member // all, by id
	plain   []*member
	cols    []*column
	// reports is set when every member reports what it kept (Kept), so
	// that the decoded memory of a delivery may be recycled.
	reports bool
}

// column indexes the members matching on one column.
type column struct {
	name string
	// Numbers are keyed as float64, as value.Compare compares an int64
	// with a float64 (int64 values beyond 2^53 may share a key with a
	// neighbour: a superset, which the rule's WHERE settles). -0 and 0
	// are one map key.
	byNum  map[float64][]*member
	byStr  map[string][]*member
	byBool [2][]*member
	// byKind lists every member of a kind: a value of another kind makes
	// their comparison fail, so they get the record to report it.
	byKind [kinds][]*member
}

func newFanout(members map[int]*member) *fanout {
	f := &fanout{reports: true}
	for _, m := range members {
		f.members = append(f.members, m)
		f.reports = f.reports && m.c.Kept != nil
	}
	slices.SortFunc(f.members, func(a, b *member) int { return a.id - b.id })
	cols := map[string]*column{}
	for _, m := range f.members {
		if m.col == "" {
			f.plain = append(f.plain, m)
			continue
		}
		c := cols[m.col]
		if c == nil {
			c = &column{name: m.col, byNum: map[float64][]*member{}, byStr: map[string][]*member{}}
			cols[m.col] = c
			f.cols = append(f.cols, c)
		}
		c.byKind[m.kind] = append(c.byKind[m.kind], m)
		for _, k := range m.keys {
			switch x := k.(type) {
			case float64:
				c.byNum[x] = append(c.byNum[x], m)
			case string:
				c.byStr[x] = append(c.byStr[x], m)
			case bool:
				c.byBool[b2i(x)] = append(c.byBool[b2i(x)], m)
			}
		}
	}
	return f
}

// appendMatches appends to dst the members of the column whose condition
// may keep the value v or fail on it; each at most once.
func (c *column) appendMatches(dst []*member, v any) []*member {
	if v == nil {
		return dst // nil = anything is false, without error
	}
	k := kindOf(v)
	if k == kindOther {
		for _, ms := range c.byKind {
			dst = append(dst, ms...)
		}
		return dst
	}
	switch x := v.(type) {
	case int64:
		dst = append(dst, c.byNum[float64(x)]...)
	case float64:
		dst = append(dst, c.byNum[x]...)
	case string:
		dst = append(dst, c.byStr[x]...)
	case bool:
		dst = append(dst, c.byBool[b2i(x)]...)
	}
	for o := kindNum; o < kinds; o++ {
		if o != k {
			dst = append(dst, c.byKind[o]...)
		}
	}
	return dst
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
