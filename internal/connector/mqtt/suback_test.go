package mqtt

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/connector"
)

// subscribeAck reads the client's next SUBSCRIBE and returns a SUBACK
// granting qos 0 to its single filter, to be sent when the test decides.
func subscribeAck(t *testing.T, b *fakeBroker) []byte {
	t.Helper()
	pk := b.next()
	if pk.typ != pktSubscribe {
		t.Fatalf("packet type %d, want SUBSCRIBE", pk.typ)
	}
	id, _ := decodeID(pk.body[:2])
	return []byte{pktSuback << 4, 3, byte(id >> 8), byte(id), 0}
}

func startSource(t *testing.T, p *Pool, props map[string]any, timeout time.Duration) (*Source, <-chan error) {
	t.Helper()
	v, err := SourceSpec().Validate(props)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSource(p, v, connector.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		done <- s.Connect(ctx)
	}()
	return s, done
}

// TestSourceConnectedMeansSubscribed checks that a source reads as
// connected only once the broker acknowledged its subscription: a second
// source on a filter whose SUBSCRIBE is still unacknowledged reads
// connecting, and a subscription the broker never acknowledges fails
// Connect instead of leaving a source that receives nothing.
func TestSourceConnectedMeansSubscribed(t *testing.T) {
	b := newFakeBroker(t)
	p := newTestPool(t)
	server := "tcp://" + b.ln.Addr().String()
	props := func(topic string) map[string]any {
		return map[string]any{"server": server, "datasource": topic}
	}

	first, done := startSource(t, p, props("x"), 10*time.Second)
	b.accept(0)
	b.send(subscribeAck(t, b))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	waitConnected(t, first.Status)

	pending, pendingDone := startSource(t, p, props("t"), 10*time.Second)
	ack := subscribeAck(t, b) // the SUBSCRIBE of t, not yet acknowledged
	// The same filter again: nothing more to subscribe, yet the broker
	// has not acknowledged t.
	same, sameDone := startSource(t, p, props("t"), 10*time.Second)
	if err := <-sameDone; err != nil {
		t.Fatal(err)
	}
	if st, _, _, _ := same.Status(); st != StateConnecting {
		t.Fatalf("source on an unacknowledged filter reads %s, want connecting", st)
	}
	// A marker: once the acknowledgement of a later subscription is
	// through, the source on t still reads connecting.
	marker, markerDone := startSource(t, p, props("m"), 10*time.Second)
	b.send(subscribeAck(t, b))
	if err := <-markerDone; err != nil {
		t.Fatal(err)
	}
	waitConnected(t, marker.Status)
	if st, _, _, _ := same.Status(); st != StateConnecting {
		t.Fatalf("source on an unacknowledged filter reads %s after a later subscription was acknowledged, want connecting", st)
	}
	b.send(ack)
	if err := <-pendingDone; err != nil {
		t.Fatal(err)
	}
	waitConnected(t, pending.Status)
	waitConnected(t, same.Status)

	_, lostDone := startSource(t, p, props("never"), 300*time.Millisecond)
	subscribeAck(t, b) // never sent
	if err := <-lostDone; err == nil || !strings.Contains(err.Error(), "subscribe") {
		t.Fatalf("connect with an unacknowledged subscription: %v, want a subscribe error", err)
	}
	if st, _, _, _ := first.Status(); st != StateConnected {
		t.Fatalf("first source reads %s after another's failed subscribe", st)
	}
	_ = b.conn.Close() // the sources close without waiting for UNSUBACKs
	for _, s := range []*Source{first, pending, same, marker} {
		_ = s.Close(context.Background())
	}
}
