package mqtt

import (
	"errors"
	"sync"
)

// outFlight is an outbound packet awaiting its acknowledgement: a QoS 1 or 2
// PUBLISH (then it is the pending handed to the caller), a SUBSCRIBE or an
// UNSUBSCRIBE. It completes once: the packet identifier is removed from the
// idTable by whoever completes it.
type outFlight struct {
	done  chan struct{}
	err   error
	kind  byte   // pktPublish, pktSubscribe or pktUnsubscribe
	qos   byte   // of a PUBLISH
	rel   bool   // QoS 2 PUBLISH: PUBREC received, PUBREL sent; guarded by idTable.mu
	codes []byte // SUBACK return codes
}

var _ pending = (*outFlight)(nil)

func newFlight(kind, qos byte) *outFlight {
	return &outFlight{done: make(chan struct{}), kind: kind, qos: qos}
}

func (f *outFlight) Done() <-chan struct{} { return f.done }
func (f *outFlight) Error() error          { return f.err }

func (f *outFlight) finish(err error) {
	f.err = err
	close(f.done)
}

var errNoPacketID = errors.New("no free packet identifier")

// idTable assigns packet identifiers (1..65535, skipping those in flight)
// and holds the flights awaiting acknowledgement. At most limit PUBLISH
// flights are in flight: add blocks beyond that until one completes or the
// table is closed (backpressure on the publisher). SUBSCRIBE and
// UNSUBSCRIBE do not count against the limit.
type idTable struct {
	mu      sync.Mutex
	cond    sync.Cond
	limit   int
	counted int // publishes in flight
	last    uint16
	m       map[uint16]*outFlight
	err     error // set by close; add fails with it
}

func newIDTable(limit int) *idTable {
	t := &idTable{limit: max(limit, 1), m: map[uint16]*outFlight{}}
	t.cond.L = &t.mu
	return t
}

// add registers f under a free packet identifier and returns it. A PUBLISH
// waits while limit publishes are in flight. add fails once the table is
// closed.
func (t *idTable) add(f *outFlight) (uint16, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if f.kind == pktPublish {
		for t.counted >= t.limit && t.err == nil {
			t.cond.Wait()
		}
	}
	if t.err != nil {
		return 0, t.err
	}
	if len(t.m) >= 0xffff {
		return 0, errNoPacketID
	}
	for {
		t.last++
		if t.last == 0 {
			t.last = 1
		}
		if _, used := t.m[t.last]; !used {
			break
		}
	}
	t.m[t.last] = f
	if f.kind == pktPublish {
		t.counted++
	}
	return t.last, nil
}

// take removes and returns the flight of id when it is of kind (and, for
// a PUBLISH, of qos); otherwise it returns nil and leaves the table as it
// was. qos is ignored for other kinds.
func (t *idTable) take(id uint16, kind, qos byte) *outFlight {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.m[id]
	if f == nil || f.kind != kind || kind == pktPublish && f.qos != qos {
		return nil
	}
	delete(t.m, id)
	if kind == pktPublish {
		t.counted--
		t.cond.Signal()
	}
	return f
}

// drop removes id's flight whatever its kind; it returns nil when id is not
// in flight.
func (t *idTable) drop(id uint16) *outFlight {
	t.mu.Lock()
	f := t.m[id]
	t.mu.Unlock()
	if f == nil {
		return nil
	}
	return t.take(id, f.kind, f.qos)
}

// pubrec records a PUBREC for a QoS 2 publish and reports whether id is
// one, so the caller answers with PUBREL.
func (t *idTable) pubrec(id uint16) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.m[id]
	if f == nil || f.kind != pktPublish || f.qos != 2 {
		return false
	}
	f.rel = true
	return true
}

// inFlight returns the number of identifiers in use and of publishes among
// them.
func (t *idTable) inFlight() (ids, publishes int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m), t.counted
}

// close fails every flight with err, wakes the publishers waiting for room
// and makes later adds fail with err.
func (t *idTable) close(err error) {
	t.mu.Lock()
	if t.err != nil {
		t.mu.Unlock()
		return
	}
	t.err = err
	fs := make([]*outFlight, 0, len(t.m))
	for id, f := range t.m {
		fs = append(fs, f)
		delete(t.m, id)
	}
	t.counted = 0
	t.cond.Broadcast()
	t.mu.Unlock()
	for _, f := range fs {
		f.finish(err)
	}
}

// QoS 2 states of a received packet identifier.
const (
	q2Held     byte = 1 // delivered, not yet acknowledged by the consumer
	q2Received byte = 2 // PUBREC sent, waiting for PUBREL
)

// inboundAcks sends the acknowledgements of received QoS 1 and 2 messages in
// the order the messages arrived, whatever order the consumer acknowledges
// them in (MQTT 3.1.1 4.6): an acknowledgement waits for those of earlier
// messages. QoS 1 is answered with PUBACK, QoS 2 with PUBREC, and a later
// PUBREL with PUBCOMP. Writes happen under mu, so acknowledgements leave in
// order.
type inboundAcks struct {
	write func([]byte) error

	mu   sync.Mutex
	base uint64 // sequence number of q[head]
	q    []pendingAck
	head int
	q2   map[uint16]byte // QoS 2 identifiers in flight
	buf  []byte
}

type pendingAck struct {
	id    uint16
	qos   byte
	acked bool
}

func newInboundAcks(write func([]byte) error) *inboundAcks {
	return &inboundAcks{write: write, q2: map[uint16]byte{}}
}

// received queues the acknowledgement of a QoS 1 or 2 message and returns
// its sequence number for ack. deliver is false for a QoS 2 message whose
// identifier is already held or acknowledged (a duplicate the consumer must
// not see again); a duplicate already acknowledged gets its PUBREC again.
func (a *inboundAcks) received(id uint16, qos byte) (seq uint64, deliver bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if qos == 2 {
		switch a.q2[id] {
		case q2Held:
			return 0, false
		case q2Received:
			_ = a.write(appendAck(a.buf[:0], pktPubrec, id))
			return 0, false
		}
		a.q2[id] = q2Held
	}
	if a.head > 0 && a.head >= len(a.q)/2 {
		n := copy(a.q, a.q[a.head:])
		a.q = a.q[:n]
		a.head = 0
	}
	a.q = append(a.q, pendingAck{id: id, qos: qos})
	return a.base + uint64(len(a.q)-a.head-1), true
}

// ack marks message seq acknowledged and sends every acknowledgement that
// no earlier message holds back. Acknowledging twice does nothing.
func (a *inboundAcks) ack(seq uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if seq < a.base {
		return
	}
	i := a.head + int(seq-a.base)
	if i >= len(a.q) {
		return
	}
	a.q[i].acked = true
	b := a.buf[:0]
	for a.head < len(a.q) && a.q[a.head].acked {
		p := a.q[a.head]
		if p.qos == 2 {
			b = appendAck(b, pktPubrec, p.id)
			a.q2[p.id] = q2Received
		} else {
			b = appendAck(b, pktPuback, p.id)
		}
		a.head++
		a.base++
	}
	if a.head == len(a.q) {
		a.q, a.head = a.q[:0], 0
	}
	if len(b) > 0 {
		// A failed write means the connection is gone; the broker
		// redelivers what it did not see acknowledged.
		_ = a.write(b)
	}
	a.buf = b[:0]
}

// released answers a PUBREL with PUBCOMP and forgets the identifier.
func (a *inboundAcks) released(id uint16) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.q2, id)
	_ = a.write(appendAck(a.buf[:0], pktPubcomp, id))
}

// waiting returns the number of received messages whose acknowledgement
// has not been sent.
func (a *inboundAcks) waiting() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.q) - a.head
}
