package engine

import (
	"context"
	"fmt"
	"testing"

	"github.com/rekuiper/rekuiper/internal/format"
	"github.com/rekuiper/rekuiper/internal/schema"
)

// benchProto declares the records of benchStream.
const benchProto = `syntax = "proto3";
message Reading { string deviceId = 1; double temperature = 2; int64 humidity = 3; string status = 4; }`

// protoPayloads are payloads(n)'s records encoded as protobuf, with the
// stream's decoder.
func protoPayloads(b *testing.B, n int) (*format.ProtoCodec, [][]byte) {
	b.Helper()
	fd, err := schema.New(nil, "").Compile(context.Background(), "bench", benchProto)
	if err != nil {
		b.Fatal(err)
	}
	md := fd.Messages().ByName("Reading")
	enc := format.NewProtobuf(md, nil)
	out := make([][]byte, n)
	for i := range out {
		row := map[string]any{"deviceId": fmt.Sprintf("dev%d", i%100), "temperature": float64(20+i%20) + 0.5,
			"humidity": int64(40 + i%30), "status": "ok"}
		if out[i], err = enc.EncodeRow(row); err != nil {
			b.Fatal(err)
		}
	}
	return format.NewProtobuf(md, []string{"deviceId", "temperature", "humidity", "status"}), out
}

// BenchmarkFilterPathProtobuf is BenchmarkFilterPathOperators with the
// same records arriving as protobuf (FORMAT="protobuf") instead of JSON:
// decode into slots, WHERE, projection, encode JSON.
func BenchmarkFilterPathProtobuf(b *testing.B) {
	dec, ps := protoPayloads(b, 1024)
	filterPathOperators(b, dec, ps)
}

// BenchmarkDecodeOnlyJSON and BenchmarkDecodeOnlyProtobuf decode the same
// records into a typed stream's tuples, without the operators.
func BenchmarkDecodeOnlyJSON(b *testing.B) { decodeOnly(b, streamDecoder(b), payloads(1024)) }

func BenchmarkDecodeOnlyProtobuf(b *testing.B) {
	dec, ps := protoPayloads(b, 1024)
	decodeOnly(b, dec, ps)
}

func decodeOnly(b *testing.B, dec format.TupleDecoder, ps [][]byte) {
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += delivery {
		decodeDelivery(b, dec, ps, i, min(i+delivery, b.N))
	}
}
