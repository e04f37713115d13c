package stream

import (
	"fmt"
	"testing"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/format"
	"github.com/rekuiper/rekuiper/internal/row"
)

// BenchmarkFanout delivers one decoded record at a time (a record per
// delivery, as at 1,000 msg/s) to n rules keeping deviceId = i, with and
// without the index. Each rule's Deliver tests its condition on what it
// gets, as its filter would; the cost of waking the rule's goroutine is
// not in it (see the kuiperbench rules1000 scenario for that).
func BenchmarkFanout(b *testing.B) {
	dec, err := format.New("json", format.Options{Fields: []string{"seq", "deviceId", "temperature"}})
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{1, 100, 1000} {
		for _, indexed := range []bool{false, true} {
			b.Run(fmt.Sprintf("rules=%d/indexed=%v", n, indexed), func(b *testing.B) {
				sub := NewSubscription("s", &fakeSource{}, dec, clock.Wall{}, nil)
				kept := 0
				for i := range n {
					key := int64(i)
					c := &Consumer{Deliver: func(ts []*row.Tuple) bool {
						for _, t := range ts {
							if v, _ := t.Value("", "deviceId"); v == key {
								kept++
							}
						}
						return true
					}}
					if indexed {
						c.Match = &Match{Column: "deviceId", Values: []any{key}}
					}
					sub.Attach(c)
				}
				payloads := make([][]byte, 1000)
				for i := range payloads {
					payloads[i] = fmt.Appendf(nil, `{"seq":%d,"deviceId":%d,"temperature":%d.5}`, i, i%n, i%100)
				}
				fan := sub.fanout()
				batch := make([]readResult, 1)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					batch[0] = readResult{msg: &api.Message{Payload: payloads[i%len(payloads)]}}
					if err := sub.deliverBatch(fan, batch, nil); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				if kept != b.N {
					b.Fatalf("rules kept %d records of %d", kept, b.N)
				}
			})
		}
	}
}
