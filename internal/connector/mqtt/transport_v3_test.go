package mqtt

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"testing"
	"time"
)

// fakeBroker is a scripted MQTT 3.1.1 peer for one client connection: the
// test reads what the client sent and writes the broker's packets.
type fakeBroker struct {
	t    testing.TB
	ln   net.Listener
	conn net.Conn
	r    *bufio.Reader
}

func newFakeBroker(t testing.TB) *fakeBroker {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &fakeBroker{t: t, ln: ln}
	t.Cleanup(func() {
		_ = ln.Close()
		if b.conn != nil {
			_ = b.conn.Close()
		}
	})
	return b
}

func (b *fakeBroker) config(version byte) connConfig {
	return connConfig{server: &url.URL{Scheme: "tcp", Host: b.ln.Addr().String()}, version: version,
		username: "user", password: "secret"}
}

// packet is one packet the client sent.
type packet struct {
	typ, flags byte
	body       []byte
}

// next reads the client's next packet.
func (b *fakeBroker) next() packet {
	b.t.Helper()
	_ = b.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	typ, flags, body, err := readPacket(b.r, nil)
	if err != nil {
		b.t.Fatalf("broker read: %v", err)
	}
	return packet{typ, flags, body}
}

func (b *fakeBroker) send(pkt ...[]byte) {
	b.t.Helper()
	for _, p := range pkt {
		if _, err := b.conn.Write(p); err != nil {
			b.t.Fatalf("broker write: %v", err)
		}
	}
}

// accept takes the client's connection and answers its CONNECT with code.
func (b *fakeBroker) accept(code byte) packet {
	b.t.Helper()
	c, err := b.ln.Accept()
	if err != nil {
		b.t.Fatal(err)
	}
	b.conn, b.r = c, bufio.NewReader(c)
	p := b.next()
	if p.typ != pktConnect {
		b.t.Fatalf("first packet type %d, want CONNECT", p.typ)
	}
	b.send([]byte{pktConnack << 4, 2, 0, code})
	return p
}

// connectV3 connects a v3 transport to b and returns it with the CONNECT
// the broker received and the messages the handler gets.
func connectV3(t *testing.T, b *fakeBroker, version byte, setup func(*v3)) (*v3, packet, chan inbound) {
	t.Helper()
	msgs := make(chan inbound, 100)
	tr := newV3(b.config(version), "cid", func(in inbound) { msgs <- in }, 5*time.Second)
	if setup != nil {
		setup(tr)
	}
	connected := make(chan packet, 1)
	go func() { connected <- b.accept(0) }()
	if err := tr.connect(context.Background()); err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(tr.close)
	return tr, <-connected, msgs
}

func TestV3Connect(t *testing.T) {
	for _, c := range []struct {
		version byte
		name    string
	}{{4, "MQTT"}, {3, "MQIsdp"}} {
		t.Run(c.name, func(t *testing.T) {
			b := newFakeBroker(t)
			_, p, _ := connectV3(t, b, c.version, nil)
			want, _ := appendConnect(nil, connectPacket{level: c.version, clientID: "cid", username: "user", password: "secret",
				clean: true, keepAlive: uint16(defaultKeepAlive / time.Second)})
			got := append([]byte{p.typ<<4 | p.flags}, appendRemaining(nil, len(p.body))...)
			if got = append(got, p.body...); !slices.Equal(got, want) {
				t.Fatalf("CONNECT % x, want % x", got, want)
			}
		})
	}
}

func TestV3ConnackRefused(t *testing.T) {
	for code, permanent := range map[byte]bool{3: false, 4: true, 5: true} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			b := newFakeBroker(t)
			go b.accept(code)
			tr := newV3(b.config(4), "cid", func(inbound) {}, 5*time.Second)
			err := classify(tr.connect(context.Background()))
			if err == nil || errors.Is(err, errPermanent) != permanent {
				t.Fatalf("connect: %v, permanent %v, want %v", err, errors.Is(err, errPermanent), permanent)
			}
		})
	}
}

// A connect cancelled while it waits for the CONNACK ends with the
// context's error.
func TestV3ConnectCancelled(t *testing.T) {
	b := newFakeBroker(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		accepted <- c // never answers
		// The client sent CONNECT: it waits for the CONNACK now.
		if _, _, _, err := readPacket(bufio.NewReader(c), nil); err == nil {
			cancel()
		}
	}()
	t.Cleanup(func() {
		select {
		case c := <-accepted:
			_ = c.Close()
		default:
		}
	})
	tr := newV3(b.config(4), "cid", func(inbound) {}, 30*time.Second)
	if err := tr.connect(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("connect: %v, want context.Canceled", err)
	}
}

// Out-of-order acknowledgements leave in arrival order; QoS 2 gets PUBREC
// on ack and PUBCOMP on PUBREL.
func TestV3InboundAcks(t *testing.T) {
	b := newFakeBroker(t)
	_, _, msgs := connectV3(t, b, 4, nil)
	b.send(
		appendPublish(nil, &publishPacket{topic: "t/a", qos: 1, id: 1, payload: []byte("one")}),
		appendPublish(nil, &publishPacket{topic: "t/a", qos: 2, id: 2, payload: []byte("two")}),
		appendPublish(nil, &publishPacket{topic: "t/b", qos: 0, payload: []byte("three"), retain: true}),
	)
	var got []inbound
	for range 3 {
		got = append(got, <-msgs)
	}
	if got[0].topic != "t/a" || string(got[1].payload) != "two" || got[1].qos != 2 || got[1].id != 2 ||
		got[2].ack != nil || !got[2].retained || got[2].topic != "t/b" {
		t.Fatalf("messages %+v", got)
	}
	got[1].ack()
	got[0].ack()
	for _, want := range [][2]byte{{pktPuback, 1}, {pktPubrec, 2}} {
		p := b.next()
		id, _ := decodeID(p.body)
		if p.typ != want[0] || id != uint16(want[1]) {
			t.Fatalf("got type %d id %d, want %v", p.typ, id, want)
		}
	}
	b.send(appendAck(nil, pktPubrel, 2))
	if p := b.next(); p.typ != pktPubcomp {
		t.Fatalf("answer to PUBREL: type %d", p.typ)
	}
}

// Outbound QoS 1 and 2 complete on PUBACK and PUBCOMP; QoS 2 sends PUBREL
// on PUBREC.
func TestV3Publish(t *testing.T) {
	b := newFakeBroker(t)
	tr, _, _ := connectV3(t, b, 4, nil)
	p0 := tr.publish(outbound{topic: "o", qos: 0, payload: []byte("zero")})
	<-p0.Done()
	if p0.Error() != nil {
		t.Fatal(p0.Error())
	}
	p1 := tr.publish(outbound{topic: "o", qos: 1, payload: []byte("one")})
	p2 := tr.publish(outbound{topic: "o", qos: 2, payload: []byte("two"), retained: true})
	var ids []uint16
	for i, want := range []string{"zero", "one", "two"} {
		pk := b.next()
		p, err := decodePublish(pk.flags, pk.body, nil)
		if err != nil || string(p.payload) != want || p.qos != byte(i) || p.retain != (i == 2) {
			t.Fatalf("publish %d: %+v %v", i, p, err)
		}
		ids = append(ids, p.id)
	}
	b.send(appendAck(nil, pktPubrec, ids[2]))
	if pk := b.next(); pk.typ != pktPubrel || pk.flags != 0x02 {
		t.Fatalf("answer to PUBREC: type %d flags %x", pk.typ, pk.flags)
	}
	select {
	case <-p2.Done():
		t.Fatal("QoS 2 publish done before PUBCOMP")
	case <-p1.Done():
		t.Fatal("QoS 1 publish done before PUBACK")
	default:
	}
	b.send(appendAck(nil, pktPubcomp, ids[2]), appendAck(nil, pktPuback, ids[1]))
	for _, p := range []pending{p1, p2} {
		<-p.Done()
		if p.Error() != nil {
			t.Fatal(p.Error())
		}
	}
	bad := tr.publish(outbound{topic: "a/+", qos: 1})
	<-bad.Done()
	if !errors.Is(bad.Error(), errPermanent) {
		t.Fatalf("wildcard topic: %v, want permanent", bad.Error())
	}
}

func TestV3Subscribe(t *testing.T) {
	b := newFakeBroker(t)
	tr, _, _ := connectV3(t, b, 4, nil)
	errc := make(chan error, 1)
	go func() { errc <- tr.subscribe(context.Background(), map[string]byte{"b": 2, "a/#": 1}) }()
	pk := b.next()
	if pk.typ != pktSubscribe || pk.flags != 0x02 {
		t.Fatalf("type %d flags %x", pk.typ, pk.flags)
	}
	id, _ := decodeID(pk.body[:2])
	b.send([]byte{pktSuback << 4, 4, byte(id >> 8), byte(id), 1, 0x80})
	err := <-errc
	if !errors.Is(err, errPermanent) || err.Error() != `subscribe "b": refused by broker (code 0x80)` {
		t.Fatalf("subscribe: %v", err)
	}
	go func() { errc <- tr.unsubscribe(context.Background(), []string{"a/#"}) }()
	pk = b.next()
	if pk.typ != pktUnsubscribe {
		t.Fatalf("type %d", pk.typ)
	}
	b.send(append([]byte{pktUnsuback << 4, 2}, pk.body[:2]...))
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// A lost connection is reported once; publishes and subscriptions waiting
// on it fail, and the transport is not dead until closed.
func TestV3Lost(t *testing.T) {
	b := newFakeBroker(t)
	tr, _, _ := connectV3(t, b, 4, nil)
	p := tr.publish(outbound{topic: "o", qos: 1, payload: []byte("x")})
	b.next()
	_ = b.conn.Close()
	select {
	case err := <-tr.lost():
		if err == nil {
			t.Fatal("lost with nil cause")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("connection loss not reported")
	}
	<-p.Done()
	if p.Error() == nil || errors.Is(p.Error(), errPermanent) {
		t.Fatalf("pending publish after loss: %v", p.Error())
	}
	if q := tr.publish(outbound{topic: "o", qos: 1}); q.Error() == nil {
		t.Fatal("publish after loss succeeded")
	}
	select {
	case <-tr.dead():
		t.Fatal("dead before close")
	default:
	}
	tr.close()
	<-tr.dead()
	notLost(t, tr, "second lost report")
}

// notLost fails the test when tr has reported its connection lost; what
// names the report that must not be there.
func notLost(t *testing.T, tr *v3, what string) {
	t.Helper()
	select {
	case err := <-tr.lost():
		t.Fatalf("%s: %v", what, err)
	default:
	}
}

// close sends DISCONNECT and is not reported as lost.
func TestV3Close(t *testing.T) {
	b := newFakeBroker(t)
	tr, _, _ := connectV3(t, b, 4, nil)
	tr.close()
	if p := b.next(); p.typ != pktDisconnect {
		t.Fatalf("type %d, want DISCONNECT", p.typ)
	}
	<-tr.dead()
	notLost(t, tr, "close reported as lost")
}

// The keepalive pings an idle connection and reports it lost when the
// PINGRESP does not come.
func TestV3Keepalive(t *testing.T) {
	b := newFakeBroker(t)
	tr, _, _ := connectV3(t, b, 4, func(t *v3) { t.keepAlive, t.pingTimeout = 40*time.Millisecond, 40*time.Millisecond })
	if p := b.next(); p.typ != pktPingreq {
		t.Fatalf("type %d, want PINGREQ", p.typ)
	}
	b.send([]byte{pktPingresp << 4, 0})
	if p := b.next(); p.typ != pktPingreq {
		t.Fatalf("type %d, want a second PINGREQ", p.typ)
	}
	select {
	case err := <-tr.lost():
		if err == nil {
			t.Fatal("nil cause")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("missing PINGRESP not reported")
	}
}

// A reader held in the handler (backpressure) cannot read the PINGRESP; the
// connection is not reported lost for that, only once the reader is free
// and the PINGRESP still does not come.
func TestV3KeepaliveWhileHandlerBlocked(t *testing.T) {
	b := newFakeBroker(t)
	release := make(chan struct{})
	tr := newV3(b.config(4), "cid", func(inbound) { <-release }, 5*time.Second)
	tr.keepAlive, tr.pingTimeout = 40*time.Millisecond, 40*time.Millisecond
	go b.accept(0)
	if err := tr.connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.close)
	b.send(appendPublish(nil, &publishPacket{topic: "t", payload: []byte("x")}))
	if p := b.next(); p.typ != pktPingreq {
		t.Fatalf("type %d, want PINGREQ", p.typ)
	}
	select {
	case err := <-tr.lost():
		t.Fatalf("lost while the handler held the reader: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	select {
	case <-tr.lost():
	case <-time.After(10 * time.Second):
		t.Fatal("missing PINGRESP not reported once the reader was free")
	}
}

// connectDiscard connects a v3 transport to a broker that discards what it
// receives after CONNACK.
func connectDiscard(tb testing.TB) *v3 {
	return connectServed(tb, func(_ net.Conn, r *bufio.Reader) {
		buf := make([]byte, 64<<10)
		for {
			if _, err := r.Read(buf); err != nil {
				return
			}
		}
	})
}

// connectServed connects a v3 transport to a broker that answers its
// CONNECT with a CONNACK and then leaves the connection to serve.
func connectServed(tb testing.TB, serve func(c net.Conn, r *bufio.Reader)) *v3 {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		r := bufio.NewReader(c)
		if _, _, _, err := readPacket(r, nil); err != nil {
			return
		}
		_, _ = c.Write([]byte{pktConnack << 4, 2, 0, 0})
		serve(c, r)
	}()
	cfg := connConfig{server: &url.URL{Scheme: "tcp", Host: ln.Addr().String()}, version: 4}
	tr := newV3(cfg, "cid", func(inbound) {}, 5*time.Second)
	if err := tr.connect(context.Background()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(tr.close)
	return tr
}

func TestV3PublishQoS0DoesNotAllocate(t *testing.T) {
	tr := connectDiscard(t)
	o := outbound{topic: "bench/out", payload: []byte(`{"seq":1,"deviceId":"d1","temperature":51.5}`)}
	for range 1000 { // grow the buffers first
		tr.publish(o)
	}
	allocs := testing.AllocsPerRun(1000, func() {
		if p := tr.publish(o); p.Error() != nil {
			t.Fatal(p.Error())
		}
	})
	// AllocsPerRun counts the whole process: the flusher may allocate now
	// and then, the publish itself not at all.
	if allocs >= 0.5 {
		t.Fatalf("%.2f allocations per QoS 0 publish", allocs)
	}
}

func BenchmarkV3PublishQoS0(b *testing.B) {
	tr := connectDiscard(b)
	o := outbound{topic: "bench/out", payload: []byte(`{"seq":1,"deviceId":"d1","temperature":51.5}`)}
	b.ReportAllocs()
	for b.Loop() {
		tr.publish(o)
	}
}

func BenchmarkV3PublishQoS1(b *testing.B) {
	// The broker acks each QoS 1 publish.
	tr := connectServed(b, func(c net.Conn, r *bufio.Reader) {
		w := bufio.NewWriter(c)
		for {
			_, flags, body, err := readPacket(r, nil)
			if err != nil {
				return
			}
			p, err := decodePublish(flags, body, nil)
			if err == nil {
				_, _ = w.Write(appendAck(nil, pktPuback, p.id))
			}
			if r.Buffered() == 0 {
				_ = w.Flush()
			}
		}
	})
	o := outbound{topic: "bench/out", qos: 1, payload: []byte(`{"seq":1,"deviceId":"d1","temperature":51.5}`)}
	b.ReportAllocs()
	var last pending
	for b.Loop() {
		last = tr.publish(o)
	}
	<-last.Done()
}
