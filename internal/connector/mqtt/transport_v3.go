package mqtt

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rekuiper/rekuiper/internal/panics"
)

// pingTimeout is how long a PINGREQ may wait for its PINGRESP before the
// connection counts as lost.
const pingTimeout = 10 * time.Second

// v3 is a transport for MQTT 3.1 and 3.1.1 written for this package: one
// connection, no reconnect (the conn loop owns reconnection), no goroutine
// hop per message.
//
//   - One reader goroutine reads packets from the bufConn. It calls the
//     handler for each PUBLISH in arrival order, on its own stack, so a slow
//     consumer holds back the socket (TCP backpressure). It resolves
//     acknowledgements of our publishes and subscriptions and answers
//     PUBREC and PUBREL.
//   - Writers encode packets and append them to the bufConn, whose flusher
//     coalesces them into few system calls. A QoS 0 publish allocates
//     nothing. A sink in the middle of a batch holds its QoS 0 publishes
//     and releases them at the batch's end: written on its own goroutine,
//     without waking the flusher.
//   - QoS 1 and 2 publishes get packet identifiers from an idTable that
//     holds at most defaultMaxInflight of them (publish blocks beyond that);
//     QoS 2 runs PUBREC → PUBREL → PUBCOMP.
//   - Received QoS 1 and 2 messages are acknowledged when the consumer
//     calls inbound.ack, in arrival order (inboundAcks).
//   - A keepalive goroutine sends PINGREQ after keepAlive without a write
//     (or without a read) and reports the connection lost when the
//     PINGRESP does not come.
//
// When the connection fails, lost receives the cause once, and every
// publish and subscription still waiting fails with a "connection lost"
// error; close ends the transport without reporting it as lost.
type v3 struct {
	cfg         connConfig
	clientID    string
	handler     func(inbound)
	flush       func() // optional: called when no complete packet is buffered
	timeout     time.Duration
	keepAlive   time.Duration
	pingTimeout time.Duration

	conn *bufConn // set by connect before the goroutines start

	wmu  sync.Mutex // guards wbuf
	wbuf []byte

	wrote  atomic.Bool   // a packet was written since the keepalive last looked
	rx     atomic.Uint64 // packets read
	busy   atomic.Bool   // the reader is inside the handler
	pongs  atomic.Uint64 // PINGRESPs read
	broken atomic.Bool   // fail ran

	ids  *idTable
	acks *inboundAcks
	ok   *result // the pending of every successful QoS 0 publish

	failOnce  sync.Once
	gone      chan struct{} // closed by fail
	lostCh    chan error
	closing   atomic.Bool
	closeOnce sync.Once
	deadCh    chan struct{}
}

func newV3(cfg connConfig, clientID string, handler func(inbound), timeout time.Duration) *v3 {
	t := &v3{cfg: cfg, clientID: clientID, handler: handler, timeout: timeout,
		keepAlive: defaultKeepAlive, pingTimeout: pingTimeout,
		ids:  newIDTable(defaultMaxInflight),
		ok:   &result{done: make(chan struct{})},
		gone: make(chan struct{}), lostCh: make(chan error, 1), deadCh: make(chan struct{})}
	close(t.ok.done)
	t.acks = newInboundAcks(t.write)
	return t
}

var _ transport = (*v3)(nil)

func (t *v3) connect(ctx context.Context) error {
	nc, err := dial(ctx, t.cfg, t.timeout)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	bc := newBufConn(nc, t.timeout, t.cfg.readPace)
	if err := t.handshake(ctx, bc); err != nil {
		_ = bc.Close()
		return fmt.Errorf("connect: %w", err)
	}
	t.conn = bc
	// A panic in the reader (a malformed packet a decoder did not expect)
	// or the keepalive loses this connection, not the process.
	lost := func(e *panics.Error) { t.fail(e) }
	panics.Go("mqtt reader", lost, t.reader)
	if t.keepAlive > 0 {
		panics.Go("mqtt keepalive", lost, t.keepalive)
	}
	return nil
}

// handshake sends CONNECT and reads CONNACK, within ctx and the timeout.
func (t *v3) handshake(ctx context.Context, bc *bufConn) error {
	level := t.cfg.version
	if level != 3 {
		level = 4
	}
	pkt, err := appendConnect(nil, connectPacket{level: level, clientID: t.clientID,
		username: t.cfg.username, password: t.cfg.password, clean: !t.cfg.session,
		keepAlive: uint16(t.keepAlive / time.Second)})
	if err != nil {
		return err
	}
	if _, err := bc.Write(pkt); err != nil {
		return fmt.Errorf("write connect: %w", err)
	}
	deadline := time.Now().Add(t.timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = bc.Conn.SetReadDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = bc.Conn.SetReadDeadline(time.Unix(1, 0)) })
	typ, _, body, err := readPacket(bc.r, nil)
	if !stop() {
		return ctx.Err()
	}
	if err != nil {
		return fmt.Errorf("read connack: %w", err)
	}
	if typ != pktConnack {
		return malformed("broker sent packet type %d before CONNACK", typ)
	}
	_, code, err := decodeConnack(body)
	if err != nil {
		return err
	}
	if err := connackErr(code); err != nil {
		return err
	}
	return bc.Conn.SetReadDeadline(time.Time{})
}

// write appends one or more whole packets to the connection.
func (t *v3) write(p []byte) error {
	if !t.wrote.Load() {
		t.wrote.Store(true)
	}
	_, err := t.conn.Write(p)
	return err
}

// lostError is the error of a publish or subscription on a failed transport.
type lostError struct{ cause error }

func (e lostError) Error() string { return "connection lost: " + e.cause.Error() }
func (e lostError) Unwrap() error { return e.cause }

// fail ends the connection once: waiting publishes and subscriptions fail,
// and, unless close caused it, lost receives cause.
func (t *v3) fail(cause error) {
	t.failOnce.Do(func() {
		t.broken.Store(true)
		close(t.gone)
		report := !t.closing.Load()
		if report && t.conn != nil {
			// Unblock the reader and the flusher.
			_ = t.conn.Conn.Close()
		}
		t.ids.close(lostError{cause})
		if report {
			t.lostCh <- cause
		}
	})
}

// reader reads packets until the connection fails.
func (t *v3) reader() {
	r := t.conn.r
	scratch := make([]byte, 256)
	var topics topicCache
	// Bodies come from an arena only where flushes hand every message
	// over (push subscriptions); without flush, messages are queued.
	var bodies *bodyArena
	if t.flush != nil {
		bodies = new(bodyArena)
	}
	for {
		typ, flags, body, inArena, err := readPacketInto(r, scratch, bodies)
		if err != nil {
			t.fail(fmt.Errorf("read: %w", err))
			return
		}
		t.rx.Add(1)
		var arena *bodyArena
		if inArena {
			arena = bodies
		}
		if err := t.handle(typ, flags, body, &topics, arena); err != nil {
			t.fail(err)
			return
		}
		if t.flush != nil && !packetBuffered(r) {
			// The next read may block: hand over what was gathered.
			t.busy.Store(true)
			t.flush()
			t.busy.Store(false)
			// Everything read so far was handed over; a transport
			// that is gone (a newer one may be reading) reuses
			// nothing.
			bodies.settle(!isClosed(t.gone))
		}
	}
}

// packetBuffered reports whether r holds a complete packet, which can be
// read without blocking.
func packetBuffered(r *bufio.Reader) bool {
	n := r.Buffered()
	if n < 2 {
		return false
	}
	b, _ := r.Peek(min(n, 5))
	length, shift := 0, 0
	for i := 1; i < len(b); i++ {
		length |= int(b[i]&0x7f) << shift
		if b[i]&0x80 == 0 {
			return n >= i+1+length
		}
		shift += 7
	}
	return false
}

// handle processes one packet read by the reader.
func (t *v3) handle(typ, flags byte, body []byte, topics *topicCache, arena *bodyArena) error {
	switch typ {
	case pktPublish:
		return t.received(flags, body, topics, arena)
	case pktPuback, pktPubcomp:
		id, err := decodeID(body)
		if err != nil {
			return err
		}
		qos := byte(1)
		if typ == pktPubcomp {
			qos = 2
		}
		if f := t.ids.take(id, pktPublish, qos); f != nil {
			f.finish(nil)
		}
	case pktPubrec:
		id, err := decodeID(body)
		if err != nil {
			return err
		}
		if t.ids.pubrec(id) {
			var b [4]byte
			_ = t.write(appendAck(b[:0], pktPubrel, id))
		}
	case pktPubrel:
		id, err := decodeID(body)
		if err != nil {
			return err
		}
		t.acks.released(id)
	case pktSuback:
		id, codes, err := decodeSuback(body)
		if err != nil {
			return err
		}
		if f := t.ids.take(id, pktSubscribe, 0); f != nil {
			f.codes = append([]byte(nil), codes...)
			f.finish(nil)
		}
	case pktUnsuback:
		id, err := decodeID(body)
		if err != nil {
			return err
		}
		if f := t.ids.take(id, pktUnsubscribe, 0); f != nil {
			// The broker sends nothing for the filters after this
			// packet, and every PUBLISH before it is dispatched: hand
			// the batches over before the unsubscriber goes on (Drain).
			if t.flush != nil {
				t.busy.Store(true)
				t.flush()
				t.busy.Store(false)
			}
			f.finish(nil)
		}
	case pktPingresp:
		t.pongs.Add(1)
	default:
		return malformed("unexpected packet type %d from broker", typ)
	}
	return nil
}

// received hands a PUBLISH to the handler, with its acknowledgement for
// QoS 1 and 2.
func (t *v3) received(flags byte, body []byte, topics *topicCache, arena *bodyArena) error {
	p, err := decodePublish(flags, body, topics)
	if err != nil {
		return err
	}
	in := inbound{topic: p.topic, payload: p.payload, qos: p.qos, id: p.id, retained: p.retain, arena: arena}
	if p.qos > 0 {
		seq, deliver := t.acks.received(p.id, p.qos)
		if !deliver {
			return nil
		}
		in.ack = func() { t.acks.ack(seq) }
	}
	t.busy.Store(true)
	t.handler(in)
	t.busy.Store(false)
	return nil
}

// keepalive sends PINGREQ when nothing was written, or nothing read, for
// about keepAlive (between keepAlive-tick and keepAlive), and fails the
// connection when no PINGRESP follows within pingTimeout. Pinging a quiet
// reader too finds a broker that vanished under a connection that only
// publishes QoS 0. A reader blocked in the handler, or one that read other
// packets since the PINGREQ, may simply not have reached the PINGRESP yet:
// then the wait starts again.
func (t *v3) keepalive() {
	tick := min(t.keepAlive/4, t.pingTimeout/2)
	tk := time.NewTicker(tick)
	defer tk.Stop()
	var (
		quietOut, quietIn time.Duration // without a write, without a read
		lastRx            = t.rx.Load()
		pinging           bool
		pingAt            time.Time
		rxAtPing, pongs   uint64
	)
	ping := []byte{pktPingreq << 4, 0}
	for {
		select {
		case <-t.gone:
			return
		case now := <-tk.C:
			quietOut, quietIn = quietOut+tick, quietIn+tick
			if t.wrote.Swap(false) {
				quietOut = 0
			}
			if rx := t.rx.Load(); rx != lastRx {
				quietIn, lastRx = 0, rx
			}
			if pinging {
				switch {
				case t.pongs.Load() != pongs:
					pinging = false
				case now.Sub(pingAt) < t.pingTimeout:
				case t.busy.Load() || t.rx.Load() != rxAtPing:
					pingAt, rxAtPing = now, t.rx.Load()
				default:
					t.fail(fmt.Errorf("no PINGRESP within %s", t.pingTimeout))
					return
				}
				continue
			}
			if quietOut+tick < t.keepAlive && quietIn+tick < t.keepAlive {
				continue
			}
			pinging, pingAt, rxAtPing, pongs = true, now, t.rx.Load(), t.pongs.Load()
			quietOut, quietIn = 0, 0
			if err := t.write(ping); err != nil {
				t.fail(fmt.Errorf("write pingreq: %w", err))
				return
			}
			t.wrote.Store(false)
		}
	}
}

func (t *v3) subscribe(ctx context.Context, filters map[string]byte) error {
	names := sortedKeys(filters)
	qos := make([]byte, len(names))
	for i, f := range names {
		qos[i] = filters[f]
	}
	f, err := t.request(ctx, pktSubscribe, func(b []byte, id uint16) ([]byte, error) {
		return appendSubscribe(b, id, names, qos)
	})
	if err != nil {
		return fmt.Errorf("subscribe: %w", err)
	}
	if len(f.codes) != len(names) {
		return fmt.Errorf("subscribe: broker answered %d return codes for %d filters", len(f.codes), len(names))
	}
	for i, code := range f.codes {
		if code >= 0x80 {
			return fmt.Errorf("subscribe %q: %w", names[i], permanentErr{fmt.Errorf("refused by broker (code 0x%02x)", code)})
		}
	}
	return nil
}

func (t *v3) unsubscribe(ctx context.Context, filters []string) error {
	_, err := t.request(ctx, pktUnsubscribe, func(b []byte, id uint16) ([]byte, error) {
		return appendUnsubscribe(b, id, filters)
	})
	if err != nil {
		return fmt.Errorf("unsubscribe: %w", err)
	}
	return nil
}

// request sends a SUBSCRIBE or UNSUBSCRIBE built by encode and waits for
// its acknowledgement.
func (t *v3) request(ctx context.Context, kind byte, encode func([]byte, uint16) ([]byte, error)) (*outFlight, error) {
	if t.conn == nil {
		return nil, errors.New("not connected")
	}
	f := newFlight(kind, 0)
	id, err := t.ids.add(f)
	if err != nil {
		return nil, err
	}
	t.wmu.Lock()
	t.wbuf, err = encode(t.wbuf[:0], id)
	if err == nil {
		err = t.write(t.wbuf)
	}
	t.wmu.Unlock()
	if err != nil {
		t.ids.drop(id)
		return nil, err
	}
	select {
	case <-f.done:
		return f, f.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// publish writes a PUBLISH. QoS 0 completes once the packet is handed to
// the connection; QoS 1 and 2 wait for a free slot (at most
// defaultMaxInflight in flight) and complete on PUBACK or PUBCOMP.
func (t *v3) publish(o outbound) pending {
	if err := checkTopic(o.topic); err != nil {
		return failed(fmt.Errorf("publish: %w", permanentErr{err}))
	}
	if _, err := publishSize(o.topic, o.payload, o.qos); err != nil {
		return failed(fmt.Errorf("publish: %w", permanentErr{err}))
	}
	if t.conn == nil {
		return failed(errors.New("publish: not connected"))
	}
	p := publishPacket{topic: o.topic, qos: o.qos, retain: o.retained, payload: o.payload}
	if o.qos == 0 {
		if t.broken.Load() {
			return failed(errors.New("publish: connection closed"))
		}
		if err := t.writePublish(&p, o.hold); err != nil {
			return failed(fmt.Errorf("publish: %w", err))
		}
		return t.ok
	}
	f := newFlight(pktPublish, o.qos)
	id, err := t.ids.add(f)
	if err != nil {
		return failed(fmt.Errorf("publish: %w", err))
	}
	p.id = id
	if err := t.writePublish(&p, false); err != nil {
		if f := t.ids.drop(id); f != nil {
			f.finish(fmt.Errorf("publish: %w", err))
		}
	}
	return f
}

func (t *v3) writePublish(p *publishPacket, hold bool) error {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	t.wbuf = appendPublish(t.wbuf[:0], p)
	var err error
	if hold {
		t.wrote.Store(true)
		err = t.conn.hold(t.wbuf)
	} else {
		err = t.write(t.wbuf)
	}
	if cap(t.wbuf) > 1<<20 {
		t.wbuf = nil
	}
	return err
}

// release writes held publishes (see bufConn.hold).
func (t *v3) release() error {
	if t.conn == nil {
		return nil
	}
	return t.conn.writeHeld()
}

// checkTopic rejects topics a broker would answer by disconnecting.
func checkTopic(topic string) error {
	if topic == "" {
		return errors.New("empty topic")
	}
	if strings.ContainsAny(topic, "+#\x00") {
		return fmt.Errorf("topic %q contains a wildcard or NUL", topic)
	}
	return nil
}

func (t *v3) lost() <-chan error { return t.lostCh }

func (t *v3) dead() <-chan struct{} { return t.deadCh }

// close sends DISCONNECT, which bufConn.Close flushes, closes the
// connection and fails what is still waiting. It does not wait for the
// reader, which may be blocked in the handler.
func (t *v3) close() {
	t.closeOnce.Do(func() {
		t.closing.Store(true)
		if t.conn != nil {
			_, _ = t.conn.Write([]byte{pktDisconnect << 4, 0})
			_ = t.conn.Close()
		}
		t.fail(errors.New("connection closed"))
		close(t.deadCh)
	})
}
