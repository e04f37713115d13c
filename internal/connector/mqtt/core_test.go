package mqtt

import (
	"fmt"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/testwait"
)

// coreBroker is a broker the core suite runs against.
type coreBroker struct {
	url      string
	versions []string // protocol versions supported
	restart  func()   // nil when the broker cannot be restarted
}

// runCoreSuite checks connect, a QoS 1 round trip, wildcards and reconnect
// after a broker restart.
func runCoreSuite(t *testing.T, b coreBroker) {
	for _, v := range b.versions {
		t.Run("v"+v, func(t *testing.T) {
			t.Run("qos1 round trip", func(t *testing.T) {
				p := newTestPool(t)
				topic := uniqueTopic(t)
				src := mustSource(t, p, map[string]any{"server": b.url, "datasource": topic, "qos": 1, "protocolVersion": v})
				waitConnected(t, src.Status)
				snk := mustSink(t, p, map[string]any{"server": b.url, "topic": topic, "qos": 1, "protocolVersion": v})
				waitConnected(t, snk.Status)
				write(t, snk, "hello")
				flush(t, snk)
				m := read(t, src, 10*time.Second)
				if string(m.Payload) != "hello" || m.Meta["topic"] != topic || m.Meta["qos"] != int64(1) {
					t.Fatalf("got %q meta %v", m.Payload, m.Meta)
				}
				if m.Ack == nil {
					t.Fatal("QoS 1 message without Ack")
				}
				m.Ack()
			})
			t.Run("wildcards", func(t *testing.T) {
				p := newTestPool(t)
				base := uniqueTopic(t)
				src := mustSource(t, p, map[string]any{"server": b.url, "datasource": base + "/+/temp," + base + "/alarm/#", "qos": 1, "protocolVersion": v})
				waitConnected(t, src.Status)
				snk := mustSink(t, p, map[string]any{"server": b.url, "topic": "{{.t}}", "qos": 1, "protocolVersion": v})
				want := map[string]bool{base + "/a/temp": true, base + "/alarm": true, base + "/alarm/x/y": true}
				for _, topic := range []string{base + "/a/temp", base + "/a/hum", base + "/a/b/temp", base + "/alarm", base + "/alarm/x/y"} {
					write(t, snk, topic, map[string]any{"t": topic})
				}
				flush(t, snk)
				got := map[string]bool{}
				for range want {
					m := read(t, src, 10*time.Second)
					got[m.Meta["topic"].(string)] = true
					if m.Ack != nil {
						m.Ack()
					}
				}
				for w := range want {
					if !got[w] {
						t.Fatalf("missing %s, got %v", w, got)
					}
				}
				readNone(t, src, 300*time.Millisecond)
			})
			if b.restart == nil {
				return
			}
			t.Run("reconnect after restart", func(t *testing.T) {
				p := newTestPool(t)
				topic := uniqueTopic(t)
				src := mustSource(t, p, map[string]any{"server": b.url, "datasource": topic, "qos": 1, "protocolVersion": v})
				snk := mustSink(t, p, map[string]any{"server": b.url, "topic": topic, "qos": 1, "protocolVersion": v})
				waitConnected(t, src.Status)
				waitConnected(t, snk.Status)
				write(t, snk, "before")
				flush(t, snk)
				if m := read(t, src, 10*time.Second); string(m.Payload) != "before" {
					t.Fatalf("got %q", m.Payload)
				}
				b.restart()
				waitReconnected(t, src.Status)
				waitConnected(t, snk.Status)
				for i := range 10 {
					write(t, snk, fmt.Sprintf("after-%d", i))
				}
				flush(t, snk)
				seen := collect(src, 10, 15*time.Second)
				if len(seen) != 10 {
					t.Fatalf("after restart got %d of 10 messages: %v", len(seen), seen)
				}
				_, lc, ld, _ := src.Status()
				if ld.IsZero() || lc.Before(ld) {
					t.Fatalf("status times: last connected %v, last disconnected %v", lc, ld)
				}
			})
		})
	}
}

// waitReconnected waits for a disconnect to be recorded and the connection
// to be up again.
func waitReconnected(t *testing.T, status func() (string, time.Time, time.Time, string)) {
	t.Helper()
	if !testwait.Poll(testwait.Limit, func() bool {
		st, lc, ld, _ := status()
		return st == StateConnected && !ld.IsZero() && !lc.Before(ld)
	}) {
		st, _, _, e := status()
		t.Fatalf("did not reconnect: state %s, last error %q", st, e)
	}
}
