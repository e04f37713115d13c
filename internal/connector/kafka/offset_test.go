package kafka

import (
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestOffsetEncoding: the hand-encoded offset is byte for byte what
// json.Marshal makes of a sourceOffset (checkpoints written before keep
// their meaning, and decodeOffset reads it back), for topics that JSON
// escapes and partition numbers that sort differently as strings.
func TestOffsetEncoding(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	for _, topic := range []string{"in", `a"b\c<d>&e`, "temp\u00e9rature\u2028x", "t\x01"} {
		for _, n := range []int{0, 1, 3, 12, 150} {
			s := &Source{topic: topic, next: map[int32]int64{}}
			for len(s.next) < n {
				s.next[int32(rnd.IntN(1000))] = rnd.Int64N(1 << 62)
			}
			want := sourceOffset{V: 1, Topic: topic, Next: map[string]int64{}}
			for p, o := range s.next {
				want.Next[strconv.Itoa(int(p))] = o
			}
			wb, err := json.Marshal(want)
			if err != nil {
				t.Fatal(err)
			}
			for range 2 { // the second time with the cached topic
				got, err := s.Offset()
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != string(wb) {
					t.Fatalf("topic %q, %d partitions:\n got %s\nwant %s", topic, n, got, wb)
				}
			}
			back, err := s.decodeOffset(wb)
			if err != nil {
				t.Fatal(err)
			}
			if len(back) != len(s.next) {
				t.Fatalf("decoded %d partitions, want %d", len(back), len(s.next))
			}
			for p, o := range s.next {
				if back[p] != o {
					t.Fatalf("partition %d: decoded %d, want %d", p, back[p], o)
				}
			}
		}
	}
}

func BenchmarkOffset(b *testing.B) {
	s := &Source{topic: "bench-in", next: map[int32]int64{0: 123456, 1: 234567, 2: 345678}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Offset(); err != nil {
			b.Fatal(err)
		}
	}
}
