package mqtt

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestIDTableAllocation(t *testing.T) {
	t.Run("sequential from 1", func(t *testing.T) {
		tab := newIDTable(10)
		for want := uint16(1); want <= 3; want++ {
			id, err := tab.add(newFlight(pktPublish, 1))
			if err != nil || id != want {
				t.Fatalf("add = %d, %v, want %d", id, err, want)
			}
		}
	})
	t.Run("wraps past 65535 to 1 and skips ids in flight", func(t *testing.T) {
		tab := newIDTable(10)
		held, err := tab.add(newFlight(pktSubscribe, 0)) // id 1 stays in flight
		if err != nil || held != 1 {
			t.Fatalf("first id %d, %v", held, err)
		}
		tab.last = 0xfffe
		var got []uint16
		for range 3 {
			f := newFlight(pktPublish, 1)
			id, err := tab.add(f)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, id)
			if tab.take(id, pktPublish, 1) != f {
				t.Fatalf("take(%d) did not return its flight", id)
			}
		}
		if want := []uint16{0xffff, 2, 3}; !slices.Equal(got, want) {
			t.Fatalf("ids %v, want %v", got, want)
		}
	})
	t.Run("take checks kind and qos", func(t *testing.T) {
		tab := newIDTable(10)
		f := newFlight(pktPublish, 2)
		id, _ := tab.add(f)
		if tab.take(id, pktPublish, 1) != nil || tab.take(id, pktSubscribe, 0) != nil || tab.take(id+1, pktPublish, 2) != nil {
			t.Fatal("take matched the wrong kind, qos or id")
		}
		if !tab.pubrec(id) || tab.pubrec(id+1) {
			t.Fatal("pubrec")
		}
		if tab.take(id, pktPublish, 2) != f {
			t.Fatal("take of the QoS 2 publish failed")
		}
		if ids, pubs := tab.inFlight(); ids != 0 || pubs != 0 {
			t.Fatalf("in flight %d/%d after take", ids, pubs)
		}
	})
	t.Run("full identifier space", func(t *testing.T) {
		tab := newIDTable(1)
		for range 0xffff {
			if _, err := tab.add(newFlight(pktSubscribe, 0)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := tab.add(newFlight(pktSubscribe, 0)); !errors.Is(err, errNoPacketID) {
			t.Fatalf("add with every id in use: %v", err)
		}
	})
}

func TestIDTableLimit(t *testing.T) {
	const limit = 4
	tab := newIDTable(limit)
	var ids []uint16
	for range limit {
		id, err := tab.add(newFlight(pktPublish, 1))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	// Subscriptions do not count against the limit.
	if _, err := tab.add(newFlight(pktSubscribe, 0)); err != nil {
		t.Fatal(err)
	}
	added := make(chan uint16)
	go func() {
		id, err := tab.add(newFlight(pktPublish, 1))
		if err != nil {
			t.Error(err)
		}
		added <- id
	}()
	select {
	case id := <-added:
		t.Fatalf("publish %d added beyond the limit", id)
	case <-time.After(50 * time.Millisecond):
	}
	tab.take(ids[2], pktPublish, 1)
	id := <-added
	if slices.Contains(ids, id) && id != ids[2] {
		t.Fatalf("id %d reused while in flight", id)
	}
	if _, pubs := tab.inFlight(); pubs != limit {
		t.Fatalf("%d publishes in flight, want %d", pubs, limit)
	}

	// close fails the flights and the waiting publisher.
	var waiting []*outFlight
	tab.mu.Lock()
	for _, f := range tab.m {
		waiting = append(waiting, f)
	}
	tab.mu.Unlock()
	errc := make(chan error)
	go func() {
		_, err := tab.add(newFlight(pktPublish, 1))
		errc <- err
	}()
	cause := errors.New("gone")
	tab.close(cause)
	if err := <-errc; !errors.Is(err, cause) {
		t.Fatalf("blocked add after close: %v", err)
	}
	for _, f := range waiting {
		<-f.Done()
		if !errors.Is(f.Error(), cause) {
			t.Fatalf("flight error %v", f.Error())
		}
	}
	if _, err := tab.add(newFlight(pktSubscribe, 0)); !errors.Is(err, cause) {
		t.Fatalf("add after close: %v", err)
	}
}

// ackLog records what inboundAcks writes, as decoded packets.
type ackLog struct {
	mu  sync.Mutex
	out []string
}

func (l *ackLog) write(b []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := bufio.NewReader(bytes.NewReader(b))
	for {
		typ, _, body, err := readPacket(r, nil)
		if err != nil {
			return nil
		}
		id, _ := decodeID(body)
		l.out = append(l.out, fmt.Sprintf("%d:%d", typ, id))
	}
}

func (l *ackLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.out
	l.out = nil
	return out
}

func TestInboundAcksInOrder(t *testing.T) {
	var log ackLog
	a := newInboundAcks(log.write)
	var seqs []uint64
	for id := uint16(10); id < 15; id++ {
		seq, ok := a.received(id, 1)
		if !ok {
			t.Fatal("QoS 1 message not delivered")
		}
		seqs = append(seqs, seq)
	}
	a.ack(seqs[1])
	a.ack(seqs[3])
	if got := log.take(); len(got) != 0 {
		t.Fatalf("acks sent before the first message was acknowledged: %v", got)
	}
	a.ack(seqs[0])
	if got, want := log.take(), []string{"4:10", "4:11"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	a.ack(seqs[0]) // twice: nothing
	a.ack(seqs[2])
	if got, want := log.take(), []string{"4:12", "4:13"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if a.waiting() != 1 {
		t.Fatalf("waiting %d, want 1", a.waiting())
	}
	// Later messages keep their sequence after the queue was compacted.
	seq, _ := a.received(20, 1)
	a.ack(seq)
	a.ack(seqs[4])
	if got, want := log.take(), []string{"4:14", "4:20"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestInboundAcksQoS2(t *testing.T) {
	var log ackLog
	a := newInboundAcks(log.write)
	s1, _ := a.received(7, 2)
	s2, _ := a.received(8, 1)
	if _, ok := a.received(7, 2); ok {
		t.Fatal("duplicate of a held QoS 2 message delivered again")
	}
	a.ack(s2)
	a.ack(s1)
	if got, want := log.take(), []string{"5:7", "4:8"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v (PUBREC then PUBACK in arrival order)", got, want)
	}
	// A redelivery before PUBREL is answered with PUBREC, not delivered.
	if _, ok := a.received(7, 2); ok {
		t.Fatal("duplicate of an acknowledged QoS 2 message delivered again")
	}
	if got, want := log.take(), []string{"5:7"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	a.released(7)
	if got, want := log.take(), []string{"7:7"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v (PUBCOMP)", got, want)
	}
	// After PUBCOMP the identifier is free for a new message.
	if _, ok := a.received(7, 2); !ok {
		t.Fatal("new message reusing a completed identifier not delivered")
	}
}

// TestInboundAcksConcurrent acknowledges from many goroutines in random
// order; the acknowledgements still leave in arrival order.
func TestInboundAcksConcurrent(t *testing.T) {
	var log ackLog
	a := newInboundAcks(log.write)
	const n = 2000
	seqs := make(chan uint64, n)
	for i := range n {
		seq, _ := a.received(uint16(i%65535+1), 1)
		seqs <- seq
	}
	close(seqs)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for s := range seqs {
				a.ack(s)
			}
		})
	}
	wg.Wait()
	got := log.take()
	if len(got) != n {
		t.Fatalf("%d acks, want %d", len(got), n)
	}
	for i, g := range got {
		if want := fmt.Sprintf("4:%d", i%65535+1); g != want {
			t.Fatalf("ack %d is %s, want %s", i, g, want)
		}
	}
}
