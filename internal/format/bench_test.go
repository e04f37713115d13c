package format

import (
	"encoding/json"
	"testing"

	"github.com/rekuiper/rekuiper/internal/row"
)

var payload4 = []byte(`{"deviceId":"dev-0042","temperature":23.57,"humidity":61,"ok":true}`)

func BenchmarkDecodeJSON4Fields(b *testing.B) {
	c := NewJSON()
	b.ReportAllocs()
	b.SetBytes(int64(len(payload4)))
	for b.Loop() {
		if _, err := c.Decode(payload4); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeTuples4Fields decodes the same payload into a slotted
// tuple of a typed stream, as a stream subscription does.
func BenchmarkDecodeTuples4Fields(b *testing.B) {
	c := NewJSONStream([]string{"deviceId", "temperature", "humidity", "ok"})
	dst := make([]*row.Tuple, 0, 1)
	b.ReportAllocs()
	b.SetBytes(int64(len(payload4)))
	for b.Loop() {
		if _, err := c.DecodeTuples(dst[:0], payload4); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeJSON4FieldsStdlib is the encoding/json baseline.
func BenchmarkDecodeJSON4FieldsStdlib(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(payload4)))
	for b.Loop() {
		var m map[string]any
		if err := json.Unmarshal(payload4, &m); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeJSONNested(b *testing.B) {
	p := []byte(`{"id":7,"loc":{"lat":52.37,"lon":4.89},"tags":["a","b","c"],"readings":[{"t":1,"v":2.5},{"t":2,"v":2.75}]}`)
	c := NewJSON()
	b.ReportAllocs()
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		if _, err := c.Decode(p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeJSON4Fields(b *testing.B) {
	row := map[string]any{"deviceId": "dev-0042", "temperature": 23.57, "humidity": int64(61), "ok": true}
	c := NewJSON()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.EncodeRow(row); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeJSON4FieldsStdlib is the encoding/json baseline.
func BenchmarkEncodeJSON4FieldsStdlib(b *testing.B) {
	row := map[string]any{"deviceId": "dev-0042", "temperature": 23.57, "humidity": int64(61), "ok": true}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(row); err != nil {
			b.Fatal(err)
		}
	}
}
