package mqtt

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/rekuiper/rekuiper/internal/connector/mqtt/mqtttest"
	"github.com/rekuiper/rekuiper/internal/panics"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// panicOnConnect is a transport whose first connect panics.
type panicOnConnect struct {
	transport
	panicked *atomic.Bool
}

func (p panicOnConnect) connect(ctx context.Context) error {
	if p.panicked.CompareAndSwap(false, true) {
		panic("dialer bug")
	}
	return p.transport.connect(ctx)
}

// TestConnectionPanicIsAConnectionError: a panic on a connection's own
// goroutine (here while connecting) is that connection's error, in the
// status its sources and sinks report; the connection retries and then
// delivers, and the process goes on.
func TestConnectionPanicIsAConnectionError(t *testing.T) {
	m := mqtttest.StartMosquitto(t)
	for _, v := range []string{"3.1.1", "5"} {
		t.Run("v"+v, func(t *testing.T) {
			p := newTestPool(t)
			var panicked atomic.Bool
			p.wrapTransport = func(tr transport) transport { return panicOnConnect{tr, &panicked} }
			topic := uniqueTopic(t)
			src := mustSource(t, p, map[string]any{"server": m.URL("plain"), "datasource": topic, "protocolVersion": v})
			waitConnected(t, src.Status)
			if !panicked.Load() {
				t.Fatal("the injected panic did not happen")
			}
			if _, _, disc, _ := src.Status(); disc.IsZero() {
				t.Error("the panic left no disconnection time in the status")
			}
			snk := mustSink(t, p, map[string]any{"server": m.URL("plain"), "topic": topic, "protocolVersion": v})
			waitConnected(t, snk.Status)
			write(t, snk, "after the panic")
			flush(t, snk)
			if msg := read(t, src, 10*time.Second); string(msg.Payload) != "after the panic" {
				t.Fatalf("read %q", msg.Payload)
			}
		})
	}
}

// TestConnectionPanicStatus: while the connection waits to retry after a
// panic, its status names the panic.
func TestConnectionPanicStatus(t *testing.T) {
	p := newTestPool(t)
	p.minBackoff, p.maxBackoff = time.Hour, time.Hour
	var panicked atomic.Bool
	p.wrapTransport = func(tr transport) transport { return panicOnConnect{tr, &panicked} }
	src := mustSource(t, p, map[string]any{"server": "tcp://127.0.0.1:1", "datasource": "t"})
	var st, msg string
	if !testwait.Poll(testwait.Limit, func() bool {
		st, _, _, msg = src.Status()
		return strings.Contains(msg, "panic: mqtt connection: dialer bug")
	}) {
		t.Fatalf("status never named the panic: %s %q", st, msg)
	}
	if st == StateConnected {
		t.Fatalf("state %s after a panic", st)
	}
}

// TestV5ReceivePanicLosesTheConnection: paho.golang calls the receive
// handler on its own goroutine and recovers nothing; a panic while
// dispatching is reported as the connection's loss instead.
func TestV5ReceivePanicLosesTheConnection(t *testing.T) {
	tr := newV5(connConfig{}, "c", nil, func(inbound) { panic("dispatch bug") }, time.Second)
	handled, err := tr.onPublish(paho.PublishReceived{Packet: &paho.Publish{Topic: "a/b", Payload: []byte("x")}})
	if !handled || err != nil {
		t.Errorf("onPublish returned %v, %v; want handled, no error for paho", handled, err)
	}
	select {
	case lost := <-tr.lost():
		if !panics.Is(lost) || lost.Error() != "panic: mqtt receive: dispatch bug" {
			t.Fatalf("lost with %v; want the handler's panic", lost)
		}
	default:
		t.Fatal("the panic was not reported as the connection's loss")
	}
}
