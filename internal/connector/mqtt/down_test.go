package mqtt

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/broker"
	"github.com/rekuiper/rekuiper/internal/connector/mqtt/mqtttest"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// A broker that is down at Connect does not fail it: Read blocks, Write is
// retryable, status reports the error, and everything works once the
// broker comes up.
func TestBrokerDownAtConnect(t *testing.T) {
	port := mqtttest.FreePort(t)
	url := fmt.Sprintf("tcp://127.0.0.1:%d", port)
	p := newTestPool(t)
	topic := uniqueTopic(t)
	src := mustSource(t, p, map[string]any{"server": url, "datasource": topic, "qos": 1})
	snk := mustSink(t, p, map[string]any{"server": url, "topic": topic, "qos": 1})
	readNone(t, src, 200*time.Millisecond)
	err := snk.Write(context.Background(), &api.SinkMessage{Payload: []byte("x")})
	if !errors.Is(err, api.ErrRetryable) || !errors.Is(err, ErrNotConnected) {
		t.Fatalf("write while down: %v, want retryable ErrNotConnected", err)
	}
	st, _, _, lastErr := src.Status()
	if st == StateConnected || lastErr == "" {
		t.Fatalf("status while down: %s %q", st, lastErr)
	}
	b, err := broker.Start(context.Background(), fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	waitConnected(t, src.Status)
	write(t, snk, "up")
	flush(t, snk)
	if m := read(t, src, 10*time.Second); string(m.Payload) != "up" {
		t.Fatalf("got %q", m.Payload)
	}
	if err := src.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := snk.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(p.Connections()); n != 0 {
		t.Fatalf("%d connections left after closing every user", n)
	}
}

// Backpressure: a source whose buffer is full holds the broker back
// instead of dropping; every message arrives once the reader catches up.
func TestBackpressureNoDrop(t *testing.T) {
	b, err := broker.Start(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	p := newTestPool(t)
	p.bufferLength = 4
	topic := uniqueTopic(t)
	src := mustSource(t, p, map[string]any{"server": b.URL(), "datasource": topic, "qos": 1})
	waitConnected(t, src.Status)
	snk := mustSink(t, newTestPool(t), map[string]any{"server": b.URL(), "topic": topic, "qos": 1})
	const n = 500
	for i := range n {
		write(t, snk, fmt.Sprint(i))
	}
	flush(t, snk)
	// The reader has not read yet: the source's buffer fills and holds
	// the broker back.
	testwait.Until(t, "the source's buffer to fill", func() bool { return len(src.sub.ch) == cap(src.sub.ch) })
	for i := range n {
		m := read(t, src, 10*time.Second)
		if string(m.Payload) != fmt.Sprint(i) {
			t.Fatalf("message %d: got %q (order or loss)", i, m.Payload)
		}
		m.Ack()
	}
}
