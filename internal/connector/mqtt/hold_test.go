package mqtt

import (
	"fmt"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/connector/mqtt/mqtttest"
)

// TestSinkHoldWrites: a sink told to hold its writes (connector.Batcher)
// leaves its qos 0 publishes in the connection's buffer without waking
// its flusher; at EndBatch they reach a subscriber through a real broker, whole and in order,
// batch after batch; Close sends what is still held. With protocol 5
// (paho writes each publish) holding changes nothing.
func TestSinkHoldWrites(t *testing.T) {
	m := mqtttest.StartMosquitto(t)
	for _, v := range []string{"3.1.1", "5"} {
		t.Run("v"+v, func(t *testing.T) {
			p := newTestPool(t)
			topic := uniqueTopic(t)
			src := mustSource(t, p, map[string]any{"server": m.URL("plain"), "datasource": topic, "protocolVersion": v})
			waitConnected(t, src.Status)
			snk := mustSink(t, p, map[string]any{"server": m.URL("plain"), "topic": topic, "protocolVersion": v})
			waitConnected(t, snk.Status)
			snk.HoldWrites()
			const batches, per = 5, 50
			n := 0
			for b := range batches {
				var tr *v3
				var wakes int64
				if v == "3.1.1" {
					tr = snk.conn.current().(*v3)
					wakes = tr.conn.writeWakes.Load()
				}
				for range per {
					write(t, snk, fmt.Sprint(n))
					n++
				}
				if tr != nil {
					if w := tr.conn.writeWakes.Load() - wakes; w != 0 {
						t.Fatalf("batch %d: held publishes woke the flusher %d times", b, w)
					}
				}
				if b < batches-1 {
					if err := snk.EndBatch(); err != nil {
						t.Fatal(err)
					}
				}
			}
			// The last batch is not ended: Close must send it.
			if err := snk.Close(t.Context()); err != nil {
				t.Fatal(err)
			}
			for i := range n {
				msg := read(t, src, 10*time.Second)
				if string(msg.Payload) != fmt.Sprint(i) {
					t.Fatalf("message %d: %q", i, msg.Payload)
				}
			}
		})
	}
}
