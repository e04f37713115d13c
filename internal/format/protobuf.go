package format

import (
	"errors"
	"fmt"
	"math"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/rekuiper/rekuiper/internal/row"
)

// Protobuf is the format of FORMAT="protobuf" streams and sinks; its
// SCHEMAID ("schema.Message") names a registered .proto schema and a
// message of it.
const Protobuf = "protobuf"

// Schemas resolves a SCHEMAID to the protobuf message it names. The schema
// registry (internal/schema) implements it.
type Schemas interface {
	// ProtoMessage returns the message descriptor of schemaID
	// ("schema.Message"); an unknown schema or message is an error naming
	// it.
	ProtoMessage(schemaID string) (protoreflect.MessageDescriptor, error)
}

var (
	_ TupleDecoder = (*ProtoCodec)(nil)
	_ Codec        = (*ProtoCodec)(nil)
)

// ProtoCodec decodes protobuf messages of one type into records and encodes
// rows into them.
//
// Decoding reads the wire format directly, guided by the descriptor. Every
// field of the message is in the record: an absent scalar has its default
// (proto3: zero), an absent message field is nil, an absent repeated field
// an empty array and an absent map field an empty object. Field names are
// the .proto names. Integers (all widths, enums as their number) are int64,
// except uint64/fixed64 above the int64 range, which are float64; float and
// double are float64; bytes are []byte; nested messages are objects and map
// fields objects keyed by the key's text. Well-known types:
// google.protobuf.Timestamp is int64 milliseconds since the Unix epoch, and
// the wrappers (Int64Value, StringValue, ...) are their value.
//
// Like every Codec it keeps scratch state: one per goroutine.
type ProtoCodec struct {
	md     protoreflect.MessageDescriptor
	layout *row.Layout
	plans  map[protoreflect.FullName]*protoPlan
	arena  row.Arena
	vals   []any // top-level field values, reused between calls
	depth  int   // nesting of the message being decoded
}

// protoPlan is what decoding a message type needs, computed once.
type protoPlan struct {
	md     protoreflect.MessageDescriptor
	fields []protoreflect.FieldDescriptor
	byNum  map[protowire.Number]int // field number → index in fields
	small  []int                    // the same for numbers below len(small), -1 none
	slots  []int                    // index in fields → slot of the stream layout, -1 none
	kinds  []protoreflect.Kind      // index in fields → its kind
	card   []uint8                  // index in fields → cardScalar, cardList or cardMap
}

// Field cardinalities, looked up once per message type: the descriptor's
// methods are interface calls, too slow for every field of every record.
const (
	cardScalar uint8 = iota
	cardList
	cardMap
)

// maxSmallField bounds the field numbers looked up in a slice.
const maxSmallField = 64

func (p *protoPlan) index(num protowire.Number) (int, bool) {
	if int(num) < len(p.small) {
		i := p.small[num]
		return i, i >= 0
	}
	i, ok := p.byNum[num]
	return i, ok
}

// NewProtobuf returns a codec for messages md. fields are a typed stream's
// declared fields (none: schemaless); DecodeTuples puts them in slots.
func NewProtobuf(md protoreflect.MessageDescriptor, fields []string) *ProtoCodec {
	c := &ProtoCodec{md: md, plans: map[protoreflect.FullName]*protoPlan{}}
	if len(fields) > 0 {
		c.layout = row.NewLayout(fields)
	}
	return c
}

func (c *ProtoCodec) plan(md protoreflect.MessageDescriptor) *protoPlan {
	if p, ok := c.plans[md.FullName()]; ok {
		return p
	}
	fs := md.Fields()
	p := &protoPlan{md: md, byNum: make(map[protowire.Number]int, fs.Len())}
	for i := range fs.Len() {
		fd := fs.Get(i)
		p.fields = append(p.fields, fd)
		p.byNum[fd.Number()] = i
		if n := int(fd.Number()); n < maxSmallField {
			for len(p.small) <= n {
				p.small = append(p.small, -1)
			}
			p.small[n] = i
		}
		s := -1
		if md == c.md && c.layout != nil {
			if idx, ok := c.layout.Index(string(fd.Name())); ok {
				s = idx
			}
		}
		p.slots = append(p.slots, s)
		p.kinds = append(p.kinds, fd.Kind())
		card := cardScalar
		switch {
		case fd.IsMap():
			card = cardMap
		case fd.IsList():
			card = cardList
		}
		p.card = append(p.card, card)
	}
	c.plans[md.FullName()] = p
	return p
}

// Decode returns the one record of payload.
func (c *ProtoCodec) Decode(payload []byte) ([]map[string]any, error) {
	c.depth = 0
	p := c.plan(c.md)
	vals, err := c.fieldValues(p, payload, c.vals[:0])
	c.vals = vals[:0]
	if err != nil {
		return nil, err
	}
	m := make(map[string]any, len(p.fields))
	for i, fd := range p.fields {
		m[string(fd.Name())] = orDefault(fd, vals[i])
		vals[i] = nil
	}
	return []map[string]any{m}, nil
}

// DecodeTuples appends the one record of payload to dst as a tuple,
// declared fields in slots.
func (c *ProtoCodec) DecodeTuples(dst []*row.Tuple, payload []byte) ([]*row.Tuple, error) {
	if c.layout == nil {
		ms, err := c.Decode(payload)
		if err != nil {
			return dst, err
		}
		return append(dst, c.arena.TupleOf(nil, ms[0])), nil
	}
	c.depth = 0
	p := c.plan(c.md)
	vals, err := c.fieldValues(p, payload, c.vals[:0])
	c.vals = vals[:0]
	if err != nil {
		return dst, err
	}
	t := c.arena.Tuple(c.layout)
	for i, fd := range p.fields {
		v := orDefault(fd, vals[i])
		vals[i] = nil
		if s := p.slots[i]; s >= 0 {
			t.Put(s, v)
		} else {
			t.Set(string(fd.Name()), v)
		}
	}
	return append(dst, t), nil
}

// fieldValues decodes message b into one value per field of p (nil when
// absent), appended to vals.
func (c *ProtoCodec) fieldValues(p *protoPlan, b []byte, vals []any) ([]any, error) {
	for range p.fields {
		vals = append(vals, nil)
	}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return vals, fmt.Errorf("decode protobuf %s: %w", p.md.FullName(), protowire.ParseError(n))
		}
		b = b[n:]
		i, ok := p.index(num)
		if !ok {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return vals, fmt.Errorf("decode protobuf %s: field %d: %w", p.md.FullName(), num, protowire.ParseError(n))
			}
			b = b[n:]
			continue
		}
		fd := p.fields[i]
		var err error
		switch p.card[i] {
		case cardMap:
			n, err = c.mapEntry(fd, typ, b, &vals[i])
		case cardList:
			n, err = c.listValue(fd, p.kinds[i], typ, b, &vals[i])
		default:
			var v any
			v, n, err = c.value(fd, p.kinds[i], typ, b)
			vals[i] = v
		}
		if err != nil {
			return vals, fmt.Errorf("decode protobuf %s: field %s: %w", p.md.FullName(), fd.Name(), err)
		}
		b = b[n:]
	}
	return vals, nil
}

func (c *ProtoCodec) listValue(fd protoreflect.FieldDescriptor, k protoreflect.Kind, typ protowire.Type, b []byte, dst *any) (int, error) {
	list, _ := (*dst).([]any)
	if list == nil {
		list = []any{} // an empty packed run is still an (empty) array
	}
	if typ == protowire.BytesType && packable(k) {
		packed, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return 0, protowire.ParseError(n)
		}
		want := wireType(k)
		for len(packed) > 0 {
			v, m, err := c.value(fd, k, want, packed)
			if err != nil {
				return 0, err
			}
			list = append(list, v)
			packed = packed[m:]
		}
		*dst = list
		return n, nil
	}
	v, n, err := c.value(fd, k, typ, b)
	if err != nil {
		return 0, err
	}
	*dst = append(list, v)
	return n, nil
}

func (c *ProtoCodec) mapEntry(fd protoreflect.FieldDescriptor, typ protowire.Type, b []byte, dst *any) (int, error) {
	if typ != protowire.BytesType {
		return 0, fmt.Errorf("wire type %d, want %d", typ, protowire.BytesType)
	}
	entry, n := protowire.ConsumeBytes(b)
	if n < 0 {
		return 0, protowire.ParseError(n)
	}
	vals, err := c.fieldValues(c.plan(fd.Message()), entry, nil)
	if err != nil {
		return 0, err
	}
	m, _ := (*dst).(map[string]any)
	if m == nil {
		m = map[string]any{}
		*dst = m
	}
	k := orDefault(fd.MapKey(), vals[0])
	m[fmt.Sprint(k)] = orDefault(fd.MapValue(), vals[1])
	return n, nil
}

// value decodes one value of fd, of kind k.
func (c *ProtoCodec) value(fd protoreflect.FieldDescriptor, k protoreflect.Kind, typ protowire.Type, b []byte) (any, int, error) {
	if want := wireType(k); typ != want {
		return nil, 0, fmt.Errorf("wire type %d, want %d for %s", typ, want, k)
	}
	switch typ {
	case protowire.VarintType:
		u, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return nil, 0, protowire.ParseError(n)
		}
		switch k {
		case protoreflect.BoolKind:
			return u != 0, n, nil
		case protoreflect.Int32Kind, protoreflect.EnumKind:
			return c.arena.Int(int64(int32(u))), n, nil
		case protoreflect.Uint32Kind:
			return c.arena.Int(int64(uint32(u))), n, nil
		case protoreflect.Sint32Kind:
			return c.arena.Int(int64(int32(protowire.DecodeZigZag(u & math.MaxUint32)))), n, nil
		case protoreflect.Sint64Kind:
			return c.arena.Int(protowire.DecodeZigZag(u)), n, nil
		case protoreflect.Uint64Kind:
			return c.uint64(u), n, nil
		default: // Int64Kind
			return c.arena.Int(int64(u)), n, nil
		}
	case protowire.Fixed32Type:
		u, n := protowire.ConsumeFixed32(b)
		if n < 0 {
			return nil, 0, protowire.ParseError(n)
		}
		switch k {
		case protoreflect.FloatKind:
			return c.arena.Float(float64(math.Float32frombits(u))), n, nil
		case protoreflect.Sfixed32Kind:
			return c.arena.Int(int64(int32(u))), n, nil
		default: // Fixed32Kind
			return c.arena.Int(int64(u)), n, nil
		}
	case protowire.Fixed64Type:
		u, n := protowire.ConsumeFixed64(b)
		if n < 0 {
			return nil, 0, protowire.ParseError(n)
		}
		switch k {
		case protoreflect.DoubleKind:
			return c.arena.Float(math.Float64frombits(u)), n, nil
		case protoreflect.Sfixed64Kind:
			return c.arena.Int(int64(u)), n, nil
		default: // Fixed64Kind
			return c.uint64(u), n, nil
		}
	case protowire.BytesType:
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return nil, 0, protowire.ParseError(n)
		}
		switch k {
		case protoreflect.StringKind:
			// protobuf-go refuses invalid UTF-8 in proto3 strings (and so
			// would a sink encoding the row); refuse it on the way in.
			if !utf8.Valid(v) {
				return nil, 0, errors.New("string is not valid UTF-8")
			}
			return c.arena.String(v), n, nil
		case protoreflect.BytesKind:
			return append([]byte{}, v...), n, nil
		default: // MessageKind
			m, err := c.message(fd.Message(), v)
			return m, n, err
		}
	}
	return nil, 0, fmt.Errorf("unsupported field kind %s", k)
}

func (c *ProtoCodec) uint64(u uint64) any {
	if u > math.MaxInt64 {
		return c.arena.Float(float64(u))
	}
	return c.arena.Int(int64(u))
}

// message decodes a nested message: an object, or the value of a
// well-known type.
func (c *ProtoCodec) message(md protoreflect.MessageDescriptor, b []byte) (any, error) {
	// A recursive message type lets a payload nest as deep as its length
	// allows; bound it as the JSON decoder does, so it cannot exhaust the
	// stack.
	if c.depth >= maxDepth {
		return nil, fmt.Errorf("messages nested deeper than %d", maxDepth)
	}
	c.depth++
	p := c.plan(md)
	vals, err := c.fieldValues(p, b, nil)
	c.depth--
	if err != nil {
		return nil, err
	}
	switch {
	case md.FullName() == "google.protobuf.Timestamp":
		sec, _ := orDefault(p.fields[0], vals[0]).(int64)
		nanos, _ := orDefault(p.fields[1], vals[1]).(int64)
		return sec*1000 + nanos/1e6, nil
	case isWrapper(md):
		return orDefault(p.fields[0], vals[0]), nil
	}
	m := make(map[string]any, len(p.fields))
	for i, fd := range p.fields {
		m[string(fd.Name())] = orDefault(fd, vals[i])
	}
	return m, nil
}

func isWrapper(md protoreflect.MessageDescriptor) bool {
	if md.ParentFile() == nil || md.ParentFile().Path() != "google/protobuf/wrappers.proto" {
		return false
	}
	return md.Fields().Len() == 1 && md.Fields().Get(0).Name() == "value"
}

// orDefault returns v, or fd's value when absent from the message.
func orDefault(fd protoreflect.FieldDescriptor, v any) any {
	if v != nil {
		return v
	}
	switch {
	case fd.IsMap():
		return map[string]any{}
	case fd.IsList():
		return []any{}
	}
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return nil
	case protoreflect.BoolKind:
		return fd.Default().Bool()
	case protoreflect.StringKind:
		return fd.Default().String()
	case protoreflect.BytesKind:
		return append([]byte{}, fd.Default().Bytes()...)
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return fd.Default().Float()
	case protoreflect.EnumKind:
		return int64(fd.Default().Enum())
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		u := fd.Default().Uint()
		if u > math.MaxInt64 {
			return float64(u)
		}
		return int64(u)
	default:
		return fd.Default().Int()
	}
}

func packable(k protoreflect.Kind) bool {
	switch k {
	case protoreflect.StringKind, protoreflect.BytesKind, protoreflect.MessageKind, protoreflect.GroupKind:
		return false
	}
	return true
}

func wireType(k protoreflect.Kind) protowire.Type {
	switch k {
	case protoreflect.FloatKind, protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind:
		return protowire.Fixed32Type
	case protoreflect.DoubleKind, protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind:
		return protowire.Fixed64Type
	case protoreflect.StringKind, protoreflect.BytesKind, protoreflect.MessageKind:
		return protowire.BytesType
	case protoreflect.GroupKind:
		return protowire.StartGroupType
	}
	return protowire.VarintType
}

var errProtoRows = errors.New("protobuf encodes one row per message: set sendSingle to true")

var _ TupleRecycler = (*ProtoCodec)(nil)

// Keep tells that the tuples decoded since the last Keep or Recycle may be
// held by anyone (see TupleRecycler).
func (c *ProtoCodec) Keep() { c.arena.Keep() }

// Recycle tells that nothing holds or reads the tuples decoded since the
// last Keep or Recycle any more (see TupleRecycler).
func (c *ProtoCodec) Recycle() { c.arena.Recycle() }
