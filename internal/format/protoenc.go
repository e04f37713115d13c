package format

import (
	"fmt"
	"math"
	"strconv"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// Encode encodes the one row of an emission; protobuf has no framing for
// several messages in one payload, so more rows are an error asking for
// sendSingle.
func (c *ProtoCodec) Encode(rows []map[string]any) ([]byte, error) {
	if len(rows) != 1 {
		return nil, fmt.Errorf("encode protobuf %s: %d rows: %w", c.md.FullName(), len(rows), errProtoRows)
	}
	return c.EncodeRow(rows[0])
}

// EncodeRow encodes row as one message. Fields of the message missing from
// the row (or null) keep their default; row fields the message lacks are
// left out; a value of the wrong type is an error naming the field.
func (c *ProtoCodec) EncodeRow(r map[string]any) ([]byte, error) {
	m := dynamicpb.NewMessage(c.md)
	if err := fillMessage(m, r); err != nil {
		return nil, fmt.Errorf("encode protobuf %s: %w", c.md.FullName(), err)
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode protobuf %s: %w", c.md.FullName(), err)
	}
	return b, nil
}

// EncodeValue encodes an object (a dataField's value) as one message.
func (c *ProtoCodec) EncodeValue(v any) ([]byte, error) {
	r, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("encode protobuf %s: value is %T, want an object", c.md.FullName(), v)
	}
	return c.EncodeRow(r)
}

func fillMessage(m protoreflect.Message, r map[string]any) error {
	fs := m.Descriptor().Fields()
	for i := range fs.Len() {
		fd := fs.Get(i)
		v, ok := r[string(fd.Name())]
		if !ok || v == nil {
			continue
		}
		if err := setField(m, fd, v); err != nil {
			return fmt.Errorf("field %s: %w", fd.Name(), err)
		}
	}
	return nil
}

func setField(m protoreflect.Message, fd protoreflect.FieldDescriptor, v any) error {
	switch {
	case fd.IsMap():
		obj, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("value is %T, want an object", v)
		}
		mp := m.Mutable(fd).Map()
		for k, e := range obj {
			key, err := mapKey(fd.MapKey(), k)
			if err != nil {
				return fmt.Errorf("key %q: %w", k, err)
			}
			val, err := protoValue(mp.NewValue, fd.MapValue(), e)
			if err != nil {
				return fmt.Errorf("key %q: %w", k, err)
			}
			mp.Set(key, val)
		}
		return nil
	case fd.IsList():
		arr, ok := v.([]any)
		if !ok {
			return fmt.Errorf("value is %T, want an array", v)
		}
		l := m.Mutable(fd).List()
		for j, e := range arr {
			val, err := protoValue(l.NewElement, fd, e)
			if err != nil {
				return fmt.Errorf("element %d: %w", j, err)
			}
			l.Append(val)
		}
		return nil
	}
	val, err := protoValue(func() protoreflect.Value { return m.NewField(fd) }, fd, v)
	if err != nil {
		return err
	}
	m.Set(fd, val)
	return nil
}

// protoValue converts one value-model value to fd's kind; newMsg makes the
// message a message-typed value fills.
func protoValue(newMsg func() protoreflect.Value, fd protoreflect.FieldDescriptor, v any) (protoreflect.Value, error) {
	bad := func(want string) (protoreflect.Value, error) {
		return protoreflect.Value{}, fmt.Errorf("value %v is %T, want %s", v, v, want)
	}
	switch fd.Kind() {
	case protoreflect.BoolKind:
		if b, ok := v.(bool); ok {
			return protoreflect.ValueOfBool(b), nil
		}
		return bad("bool")
	case protoreflect.StringKind:
		if s, ok := v.(string); ok {
			return protoreflect.ValueOfString(s), nil
		}
		return bad("string")
	case protoreflect.BytesKind:
		switch b := v.(type) {
		case []byte:
			return protoreflect.ValueOfBytes(b), nil
		case string:
			return protoreflect.ValueOfBytes([]byte(b)), nil
		}
		return bad("bytes")
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		var f float64
		switch n := v.(type) {
		case float64:
			f = n
		case int64:
			f = float64(n)
		default:
			return bad("a number")
		}
		if fd.Kind() == protoreflect.FloatKind {
			return protoreflect.ValueOfFloat32(float32(f)), nil
		}
		return protoreflect.ValueOfFloat64(f), nil
	case protoreflect.EnumKind:
		if s, ok := v.(string); ok {
			ev := fd.Enum().Values().ByName(protoreflect.Name(s))
			if ev == nil {
				return protoreflect.Value{}, fmt.Errorf("%q is not a value of enum %s", s, fd.Enum().FullName())
			}
			return protoreflect.ValueOfEnum(ev.Number()), nil
		}
		i, err := integer(v, math.MinInt32, math.MaxInt32)
		if err != nil {
			return protoreflect.Value{}, err
		}
		return protoreflect.ValueOfEnum(protoreflect.EnumNumber(i)), nil
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		i, err := integer(v, math.MinInt32, math.MaxInt32)
		return protoreflect.ValueOfInt32(int32(i)), err
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		i, err := integer(v, math.MinInt64, math.MaxInt64)
		return protoreflect.ValueOfInt64(i), err
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		i, err := integer(v, 0, math.MaxUint32)
		return protoreflect.ValueOfUint32(uint32(i)), err
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		if f, ok := v.(float64); ok && f >= 1<<63 && f < 1<<64 && f == math.Trunc(f) {
			return protoreflect.ValueOfUint64(uint64(f)), nil
		}
		i, err := integer(v, 0, math.MaxInt64)
		return protoreflect.ValueOfUint64(uint64(i)), err
	case protoreflect.MessageKind:
		return messageValue(newMsg, fd.Message(), v)
	}
	return protoreflect.Value{}, fmt.Errorf("unsupported field kind %s", fd.Kind())
}

func messageValue(newMsg func() protoreflect.Value, md protoreflect.MessageDescriptor, v any) (protoreflect.Value, error) {
	val := newMsg()
	m := val.Message()
	switch {
	case md.FullName() == "google.protobuf.Timestamp":
		ms, err := integer(v, math.MinInt64, math.MaxInt64)
		if err != nil {
			return protoreflect.Value{}, err
		}
		sec, rem := ms/1000, ms%1000
		if rem < 0 {
			sec, rem = sec-1, rem+1000
		}
		m.Set(md.Fields().ByName("seconds"), protoreflect.ValueOfInt64(sec))
		m.Set(md.Fields().ByName("nanos"), protoreflect.ValueOfInt32(int32(rem*1e6)))
		return val, nil
	case isWrapper(md):
		fd := md.Fields().Get(0)
		inner, err := protoValue(nil, fd, v)
		if err != nil {
			return protoreflect.Value{}, err
		}
		m.Set(fd, inner)
		return val, nil
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return protoreflect.Value{}, fmt.Errorf("value is %T, want an object for message %s", v, md.FullName())
	}
	if err := fillMessage(m, obj); err != nil {
		return protoreflect.Value{}, err
	}
	return val, nil
}

// integer converts an int64, or a float64 without fraction, within
// [lo, hi].
func integer(v any, lo, hi int64) (int64, error) {
	var i int64
	switch n := v.(type) {
	case int64:
		i = n
	case float64:
		if n != math.Trunc(n) || n < float64(lo) || n > float64(hi) {
			return 0, fmt.Errorf("value %v is not an integer in [%d, %d]", n, lo, hi)
		}
		i = int64(n)
	default:
		return 0, fmt.Errorf("value %v is %T, want an integer", v, v)
	}
	if i < lo || i > hi {
		return 0, fmt.Errorf("value %d is out of range [%d, %d]", i, lo, hi)
	}
	return i, nil
}

func mapKey(fd protoreflect.FieldDescriptor, k string) (protoreflect.MapKey, error) {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(k).MapKey(), nil
	case protoreflect.BoolKind:
		b, err := strconv.ParseBool(k)
		return protoreflect.ValueOfBool(b).MapKey(), err
	}
	i, err := strconv.ParseInt(k, 10, 64)
	if err != nil {
		return protoreflect.MapKey{}, fmt.Errorf("not an integer key")
	}
	v, err := protoValue(nil, fd, i)
	if err != nil {
		return protoreflect.MapKey{}, err
	}
	return v.MapKey(), nil
}
