package operator

import (
	"fmt"
	"math"
	"time"

	"github.com/rekuiper/rekuiper/internal/row"
	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/sql/token"
	"github.com/rekuiper/rekuiper/internal/value"
)

// StreamSchema is what the preprocessor knows about one input stream.
type StreamSchema struct {
	// Strict validates and converts the Columns listed in Check.
	Strict bool
	Fields map[string]*ast.DataType
	// Check lists the declared columns the rule uses (all when SELECT *).
	Check []string
	// TimestampField, when set, gives the tuple's event time.
	TimestampField string
}

// Preprocess gives each tuple a per-rule copy, validates typed columns under
// STRICT_VALIDATION and sets event time from the TIMESTAMP column.
type Preprocess struct {
	Schemas  map[string]*StreamSchema
	Location *time.Location

	// copies and lists are chunks that the rule's tuple copies and the
	// slices carrying them downstream are carved from, so that a batch of
	// n tuples costs a fraction of an allocation per tuple. A cell handed
	// out is never reused (downstream operators may keep it): a full chunk
	// is replaced and left to the GC.
	copies []row.Tuple
	lists  []*row.Tuple
	// recycle is set when nothing downstream keeps a tuple once the emit
	// of the item returns (see RecycleCopies): the chunks are then reused
	// from their start by the next item instead of being replaced.
	recycle bool
}

// KeepsNoTuples is implemented by operators that keep no reference to the
// tuples they are given once Process returns (they may keep values).
type KeepsNoTuples interface {
	KeepsNoTuples()
}

// RecycleCopies lets a rule's Preprocess (ops[0]) reuse its tuple copies
// from one item to the next when every operator after it keeps no tuple,
// so that a stateless rule (WHERE and SELECT) copies without allocating.
// It reports whether it did.
func RecycleCopies(ops []Operator) bool {
	if len(ops) == 0 {
		return false
	}
	p, ok := ops[0].(*Preprocess)
	if !ok {
		return false
	}
	for _, op := range ops[1:] {
		if _, ok := op.(KeepsNoTuples); !ok {
			return false
		}
	}
	p.recycle = true
	return true
}

// Chunk sizes of Preprocess: a copy kept by a window pins its chunk, so the
// copies' chunk stays small.
const (
	copyChunk = 16  // tuple copies (0.9 KB)
	listChunk = 128 // tuple pointers (1 KB)
)

func (p *Preprocess) Name() string { return "preprocess" }

func (p *Preprocess) Process(ctx *Context, it Item, emit Emit) error {
	if it.Kind != Data || it.Tuples == nil {
		forward(it, emit)
		return nil
	}
	if p.recycle {
		// The previous item's copies and lists are no longer referenced.
		clear(p.copies) // drop the references they hold
		p.copies, p.lists = p.copies[:0], p.lists[:0]
	}
	out := p.list(len(it.Tuples))
	var firstErr error
	for i, t := range it.Tuples {
		c, err := p.one(t)
		if err != nil {
			if len(out) > 0 {
				emit(Item{Kind: Data, Input: it.Input, Tuples: out})
				out = p.list(len(it.Tuples) - i - 1)
			}
			emitError(ctx, fmt.Errorf("error in preprocessor: %w", err), emit)
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		out = append(out, c)
	}
	if len(out) > 0 {
		emit(Item{Kind: Data, Input: it.Input, Tuples: out})
	}
	return reported(firstErr)
}

// list returns an empty slice with room for n tuples, carved from a chunk.
func (p *Preprocess) list(n int) []*row.Tuple {
	if cap(p.lists)-len(p.lists) < n {
		size := max(listChunk, n)
		if p.recycle {
			size = max(size, 2*cap(p.lists)) // grows to what an item needs
		}
		p.lists = make([]*row.Tuple, 0, size)
	}
	i := len(p.lists)
	p.lists = p.lists[:i+n]
	return p.lists[i : i : i+n]
}

// copyOf returns the rule's own copy of t, carved from a chunk.
func (p *Preprocess) copyOf(t *row.Tuple) *row.Tuple {
	if len(p.copies) == cap(p.copies) {
		size := copyChunk
		if p.recycle {
			size = max(size, 2*cap(p.copies)) // grows to what an item needs
		}
		p.copies = make([]row.Tuple, 0, size)
	}
	p.copies = p.copies[:len(p.copies)+1]
	c := &p.copies[len(p.copies)-1]
	t.CloneTo(c)
	return c
}

func (p *Preprocess) one(t *row.Tuple) (*row.Tuple, error) {
	c := p.copyOf(t)
	s := p.Schemas[t.Emitter]
	if s == nil {
		return c, nil
	}
	if s.Strict && len(s.Check) > 0 {
		if err := p.validate(c, s); err != nil {
			return nil, err
		}
	}
	if s.TimestampField != "" {
		v, ok := c.Value("", s.TimestampField)
		if !ok || v == nil {
			return nil, fmt.Errorf("cannot find timestamp field %s in tuple %v", s.TimestampField, c.Columns(""))
		}
		ts, err := toEpochMS(v, p.Location)
		if err != nil {
			return nil, fmt.Errorf("invalid timestamp field %s: %w", s.TimestampField, err)
		}
		c.Timestamp = ts
	}
	return c, nil
}

// validate converts the checked columns of the rule's copy c to their
// declared types, giving c its own columns first.
func (p *Preprocess) validate(c *row.Tuple, s *StreamSchema) error {
	c.Unshare()
	for _, name := range s.Check {
		v, ok := c.Value("", name)
		if !ok {
			return fmt.Errorf("field %s is not found", name)
		}
		cv, err := convertTo(v, s.Fields[name], p.Location)
		if err != nil {
			return fmt.Errorf("field %s type mismatch: %w", name, err)
		}
		c.Set(name, cv)
	}
	return nil
}

func toEpochMS(v any, loc *time.Location) (int64, error) {
	switch x := v.(type) {
	case int64:
		return x, nil
	case float64:
		return int64(x), nil
	}
	t, err := value.ToTime(v, loc)
	if err != nil {
		return 0, err
	}
	return t.UnixMilli(), nil
}

// convertTo coerces v to a declared column type the way strict validation
// does. Unlike eKuiper, a BIGINT column refuses a float with a fraction
// instead of truncating it (docs/compatibility.md).
func convertTo(v any, dt *ast.DataType, loc *time.Location) (any, error) {
	if dt == nil || v == nil && (dt.Kind == token.STRUCT || dt.Kind == token.ARRAY) {
		// A null struct or array is accepted, as eKuiper accepts it (a
		// null BIGINT, say, is not, nor a null element of an array).
		return v, nil
	}
	switch dt.Kind {
	case token.BIGINT:
		switch x := v.(type) {
		case int64:
			return x, nil
		case float64:
			if x != math.Trunc(x) {
				return nil, fmt.Errorf("cannot convert %s to int64 without losing its fraction", value.Describe(v))
			}
			return int64(x), nil
		}
		return nil, fmt.Errorf("cannot convert %s to int64", value.Describe(v))
	case token.FLOAT:
		switch x := v.(type) {
		case float64:
			return x, nil
		case int64:
			return float64(x), nil
		}
		return nil, fmt.Errorf("cannot convert %s to float64", value.Describe(v))
	case token.STRINGTYPE:
		if s, ok := v.(string); ok {
			return s, nil
		}
		return nil, fmt.Errorf("cannot convert %s to string", value.Describe(v))
	case token.BOOLEAN:
		if b, ok := v.(bool); ok {
			return b, nil
		}
		return nil, fmt.Errorf("cannot convert %s to bool", value.Describe(v))
	case token.DATETIME:
		return toDatetime(v, loc)
	case token.BYTEA:
		switch x := v.(type) {
		case []byte:
			return x, nil
		}
		return nil, fmt.Errorf("cannot convert %s to bytea", value.Describe(v))
	case token.ARRAY:
		arr, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("cannot convert %s to array", value.Describe(v))
		}
		out := make([]any, len(arr))
		for i, e := range arr {
			ce, err := convertTo(e, dt.Elem, loc)
			if err != nil {
				return nil, fmt.Errorf("array element %d: %w", i, err)
			}
			out[i] = ce
		}
		return out, nil
	case token.STRUCT:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("cannot convert %s to struct", value.Describe(v))
		}
		out := make(map[string]any, len(m))
		for k, e := range m {
			out[k] = e
		}
		for _, f := range dt.Fields {
			e, ok := m[f.Name]
			if !ok {
				// A declared field is required, as a declared column is.
				return nil, fmt.Errorf("field %s is not found", f.Name)
			}
			ce, err := convertTo(e, f.Type, loc)
			if err != nil {
				return nil, fmt.Errorf("field %s type mismatch: %w", f.Name, err)
			}
			out[f.Name] = ce
		}
		return out, nil
	}
	return v, nil
}

func toDatetime(v any, loc *time.Location) (any, error) {
	switch x := v.(type) {
	case time.Time:
		return x, nil
	case int64:
		return time.UnixMilli(x).In(loc), nil
	case float64:
		return time.UnixMilli(int64(x)).In(loc), nil
	case string:
		t, err := value.ToTime(x, loc)
		if err != nil {
			return nil, fmt.Errorf("Can't parse string as time: %s", x)
		}
		return t, nil
	}
	return nil, fmt.Errorf("cannot convert %s to datetime", value.Describe(v))
}
