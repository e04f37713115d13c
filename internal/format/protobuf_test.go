package format

import (
	"bytes"
	"context"
	"io"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

const testProto = `syntax = "proto3";
package demo;
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";
enum Level { LOW = 0; HIGH = 2; }
message Loc { double lat = 1; double lon = 2; }
message Reading {
  string deviceId = 1;
  double temperature = 2;
  int64 humidity = 3;
  bool ok = 4;
  int32 i32 = 5;
  sint64 s64 = 6;
  uint64 u64 = 7;
  float f = 8;
  bytes raw = 9;
  Level level = 10;
  Loc loc = 11;
  repeated int64 counts = 12;
  repeated Loc path = 13;
  map<string, int64> tags = 14;
  google.protobuf.Timestamp at = 15;
  google.protobuf.StringValue note = 16;
  fixed32 fx = 17;
  sfixed64 sfx = 18;
}`

// readingDesc compiles testProto and returns demo.Reading.
func readingDesc(tb testing.TB) protoreflect.MessageDescriptor {
	tb.Helper()
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
		Accessor: func(p string) (io.ReadCloser, error) {
			if p != "demo.proto" {
				return nil, os.ErrNotExist
			}
			return io.NopCloser(strings.NewReader(testProto)), nil
		},
	})}
	fs, err := c.Compile(context.Background(), "demo.proto")
	if err != nil {
		tb.Fatal(err)
	}
	return fs[0].Messages().ByName("Reading")
}

func TestProtobufDecodeKinds(t *testing.T) {
	md := readingDesc(t)
	row := map[string]any{
		"deviceId": "dev-1", "temperature": 23.5, "humidity": int64(-61), "ok": true,
		"i32": int64(math.MinInt32), "s64": int64(-7), "u64": 1.5 * (1 << 63), "f": 1.5,
		"raw": []byte{0, 1, 2}, "level": "HIGH", "loc": map[string]any{"lat": 52.5, "lon": int64(4)},
		"counts": []any{int64(1), int64(300), int64(-2)},
		"path":   []any{map[string]any{"lat": 1.0}, map[string]any{"lon": 2.0}},
		"tags":   map[string]any{"a": int64(1), "b": int64(2)},
		"at":     int64(1_700_000_000_123), "note": "hi", "fx": int64(math.MaxUint32), "sfx": int64(math.MinInt64),
	}
	c := NewProtobuf(md, nil)
	payload, err := c.EncodeRow(row)
	if err != nil {
		t.Fatal(err)
	}
	// The payload is a real protobuf message: the library reads it back.
	m := dynamicpb.NewMessage(md)
	if err := proto.Unmarshal(payload, m); err != nil {
		t.Fatal(err)
	}
	if got := m.Get(md.Fields().ByName("deviceId")).String(); got != "dev-1" {
		t.Fatalf("deviceId read back by protobuf-go: %q", got)
	}
	recs, err := c.Decode(payload)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"deviceId": "dev-1", "temperature": 23.5, "humidity": int64(-61), "ok": true,
		"i32": int64(math.MinInt32), "s64": int64(-7), "u64": 1.5 * (1 << 63), "f": 1.5,
		"raw": []byte{0, 1, 2}, "level": int64(2), "loc": map[string]any{"lat": 52.5, "lon": 4.0},
		"counts": []any{int64(1), int64(300), int64(-2)},
		"path":   []any{map[string]any{"lat": 1.0, "lon": 0.0}, map[string]any{"lat": 0.0, "lon": 2.0}},
		"tags":   map[string]any{"a": int64(1), "b": int64(2)},
		"at":     int64(1_700_000_000_123), "note": "hi", "fx": int64(math.MaxUint32), "sfx": int64(math.MinInt64),
	}
	if len(recs) != 1 || !reflect.DeepEqual(recs[0], want) {
		t.Fatalf("decoded\n%#v\nwant\n%#v", recs, want)
	}
}

func TestProtobufDefaults(t *testing.T) {
	c := NewProtobuf(readingDesc(t), nil)
	payload, err := c.EncodeRow(map[string]any{"deviceId": "d", "unknownField": 1.5, "loc": nil})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := c.Decode(payload)
	if err != nil {
		t.Fatal(err)
	}
	r := recs[0]
	checks := map[string]any{"deviceId": "d", "temperature": 0.0, "humidity": int64(0), "ok": false,
		"level": int64(0), "loc": nil, "at": nil, "note": nil}
	for k, v := range checks {
		if !reflect.DeepEqual(r[k], v) {
			t.Errorf("%s = %#v, want %#v", k, r[k], v)
		}
	}
	if l, ok := r["counts"].([]any); !ok || len(l) != 0 {
		t.Errorf("counts = %#v, want an empty array", r["counts"])
	}
	if m, ok := r["tags"].(map[string]any); !ok || len(m) != 0 {
		t.Errorf("tags = %#v, want an empty object", r["tags"])
	}
	if _, ok := r["unknownField"]; ok {
		t.Error("a row field the message lacks was encoded")
	}
}

func TestProtobufEncodeErrors(t *testing.T) {
	c := NewProtobuf(readingDesc(t), nil)
	for _, tc := range []struct {
		name string
		row  map[string]any
		want string
	}{
		{"string for int", map[string]any{"humidity": "high"}, "field humidity: value high is string, want an integer"},
		{"fraction for int", map[string]any{"humidity": 1.5}, "field humidity: value 1.5 is not an integer"},
		{"int32 overflow", map[string]any{"i32": int64(math.MaxInt32) + 1}, "field i32: value 2147483648 is out of range"},
		{"number for string", map[string]any{"deviceId": int64(3)}, "field deviceId: value 3 is int64, want string"},
		{"unknown enum name", map[string]any{"level": "MID"}, `"MID" is not a value of enum demo.Level`},
		{"scalar for message", map[string]any{"loc": 3.0}, "field loc: value is float64, want an object"},
		{"nested wrong type", map[string]any{"loc": map[string]any{"lat": "n"}}, "field loc: field lat: value n is string, want a number"},
		{"list element", map[string]any{"counts": []any{int64(1), "x"}}, "field counts: element 1:"},
		{"scalar for list", map[string]any{"counts": int64(1)}, "field counts: value is int64, want an array"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.EncodeRow(tc.row)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
	if _, err := c.Encode([]map[string]any{{}, {}}); err == nil || !strings.Contains(err.Error(), "sendSingle") {
		t.Fatalf("two rows: err = %v, want one asking for sendSingle", err)
	}
}

func TestProtobufDecodeErrors(t *testing.T) {
	c := NewProtobuf(readingDesc(t), nil)
	for name, p := range map[string][]byte{
		"truncated varint":    {0x18, 0xff},
		"wrong wire type":     {0x08, 0x01}, // field 1 as a varint: deviceId is a string
		"length past the end": {0x0a, 0x05, 'a'},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := c.Decode(p); err == nil || !strings.Contains(err.Error(), "decode protobuf demo.Reading") {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

func TestProtobufTuplesSlots(t *testing.T) {
	md := readingDesc(t)
	c := NewProtobuf(md, []string{"temperature", "deviceId"})
	payload, err := c.EncodeRow(map[string]any{"deviceId": "d7", "temperature": 9.25, "humidity": int64(3)})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := c.DecodeTuples(nil, payload)
	if err != nil || len(ts) != 1 {
		t.Fatalf("tuples %v, err %v", ts, err)
	}
	for k, want := range map[string]any{"deviceId": "d7", "temperature": 9.25, "humidity": int64(3)} {
		if v, ok := ts[0].Value("", k); !ok || v != want {
			t.Errorf("%s = %#v (%v), want %#v", k, v, ok, want)
		}
	}
}

// nodeDesc is a recursive message type: Node { Node child = 1; int64 v = 2; }.
func nodeDesc(tb testing.TB) protoreflect.MessageDescriptor {
	tb.Helper()
	const src = `syntax = "proto3"; message Node { Node child = 1; int64 v = 2; }`
	c := protocompile.Compiler{Resolver: &protocompile.SourceResolver{
		Accessor: func(p string) (io.ReadCloser, error) {
			if p != "node.proto" {
				return nil, os.ErrNotExist
			}
			return io.NopCloser(strings.NewReader(src)), nil
		},
	}}
	fs, err := c.Compile(context.Background(), "node.proto")
	if err != nil {
		tb.Fatal(err)
	}
	return fs[0].Messages().ByName("Node")
}

// nested encodes n Nodes, each the child of the one before.
func nested(n int) []byte {
	b := protowire.AppendTag(nil, 2, protowire.VarintType)
	b = protowire.AppendVarint(b, 7)
	for range n {
		outer := protowire.AppendTag(nil, 1, protowire.BytesType)
		b = protowire.AppendBytes(outer, b)
	}
	return b
}

func TestProtobufNestingBounded(t *testing.T) {
	c := NewProtobuf(nodeDesc(t), nil)
	recs, err := c.Decode(nested(3))
	if err != nil {
		t.Fatal(err)
	}
	v := any(recs[0])
	for range 3 {
		v = v.(map[string]any)["child"]
	}
	if got := v.(map[string]any)["v"]; got != int64(7) {
		t.Fatalf("innermost v = %#v", got)
	}
	if _, err := c.Decode(nested(maxDepth + 1)); err == nil || !strings.Contains(err.Error(), "nested deeper than") {
		t.Fatalf("deep payload: err = %v", err)
	}
	// The codec is usable after the refused payload.
	if _, err := c.Decode(nested(maxDepth)); err != nil {
		t.Fatalf("payload at the limit: %v", err)
	}
}

// FuzzProtobufDecode checks that no payload panics the decoder, and that
// what it accepts encodes back to a payload that decodes to the same record.
func FuzzProtobufDecode(f *testing.F) {
	md := readingDesc(f)
	enc := NewProtobuf(md, nil)
	seed, err := enc.EncodeRow(map[string]any{"deviceId": "d", "counts": []any{int64(1), int64(2)},
		"tags": map[string]any{"k": int64(3)}, "loc": map[string]any{"lat": 1.5}, "at": int64(5)})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte{0x08, 0x01})
	f.Add(nested(5))
	f.Fuzz(func(t *testing.T, payload []byte) {
		c := NewProtobuf(md, []string{"deviceId", "humidity"})
		if _, err := c.DecodeTuples(nil, payload); err != nil {
			return
		}
		recs, err := c.Decode(payload)
		if err != nil {
			t.Fatalf("DecodeTuples accepted what Decode refuses: %v", err)
		}
		again, err := c.EncodeRow(recs[0])
		if err != nil {
			t.Fatalf("decoded record does not encode: %v (%#v)", err, recs[0])
		}
		back, err := c.Decode(again)
		if err != nil {
			t.Fatal(err)
		}
		// Compared as encoded bytes: DeepEqual calls a NaN unequal to
		// itself.
		twice, err := c.EncodeRow(back[0])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(twice, again) {
			t.Fatalf("round trip changed the record:\n%#v\n%#v", recs[0], back[0])
		}
	})
}
