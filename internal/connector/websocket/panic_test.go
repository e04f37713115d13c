package websocket

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ws "github.com/coder/websocket"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/panics"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// panicOnFirstMessage is a read function that panics on the first message
// it reads, as a bug in decoding would.
func panicOnFirstMessage(panicked *atomic.Bool) func(*ws.Conn, context.Context) (ws.MessageType, []byte, error) {
	return func(c *ws.Conn, ctx context.Context) (ws.MessageType, []byte, error) {
		typ, b, err := c.Read(ctx)
		if err == nil && panicked.CompareAndSwap(false, true) {
			panic("decoder bug")
		}
		return typ, b, err
	}
}

// logBuffer collects log lines from several goroutines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func panickingSource(t *testing.T, props map[string]any, deps connector.Deps) (*Source, *atomic.Bool, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	deps.Logger = slog.New(slog.NewTextHandler(logs, nil))
	src, err := registry(t).NewSource(Type, props, deps)
	if err != nil {
		t.Fatal(err)
	}
	s := src.(*Source)
	var panicked atomic.Bool
	s.read = panicOnFirstMessage(&panicked)
	t.Cleanup(func() { s.Close(context.Background()) }) //nolint:errcheck // test end
	return s, &panicked, logs
}

// TestClientReadPanicLosesTheConnection: a panic on the client-mode read
// loop is the connection's loss: Read fails with the panic (so the engine
// reconnects), the process goes on, and after Connect the source reads
// again.
func TestClientReadPanicLosesTheConnection(t *testing.T) {
	r := newRemote(t)
	s, panicked, logs := panickingSource(t, map[string]any{"addr": r.addr, "datasource": "/feed"}, connector.Deps{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	r.Produce(t, [][]byte{[]byte("first")})
	m, err := s.Read(ctx)
	if err == nil {
		t.Fatalf("read %q after the read loop panicked; want its panic", m.Payload)
	}
	if !panicked.Load() {
		t.Fatalf("read failed with %v before the injected panic", err)
	}
	if !panics.Is(err) || err.Error() != "panic: websocket read: decoder bug" {
		t.Fatalf("read error %v; want the read loop's panic", err)
	}
	if l := logs.String(); !strings.Contains(l, "websocket read panicked") || !strings.Contains(l, "panic_test.go") {
		t.Errorf("the panic was not logged with its stack: %s", l)
	}
	if err := s.Connect(ctx); err != nil {
		t.Fatalf("reconnect after the panic: %v", err)
	}
	if got := readProducing(t, ctx, s, r.Produce, "second"); string(got.Payload) != "second" {
		t.Fatalf("read %q after reconnecting, want second", got.Payload)
	}
}

// TestServerReadPanicDropsOneClient: in server mode a panic on one
// client's read loop closes that client only; Read does not fail and the
// source goes on reading the next client.
func TestServerReadPanicDropsOneClient(t *testing.T) {
	mux, base := daemonMux(t)
	s, panicked, logs := panickingSource(t, map[string]any{"datasource": "/in"}, connector.Deps{HTTP: mux})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	first, _, err := ws.Dial(ctx, base+"/in", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer first.CloseNow()
	if err := first.Write(ctx, ws.MessageText, []byte("first")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := first.Read(ctx); err == nil {
		t.Fatal("the client whose read loop panicked is still connected")
	}
	if !panicked.Load() {
		t.Fatal("the injected panic did not happen")
	}
	// The connection closes before the panic is logged.
	if !testwait.Poll(testwait.Limit, func() bool {
		l := logs.String()
		return strings.Contains(l, "websocket read panicked") && strings.Contains(l, "decoder bug")
	}) {
		t.Fatalf("the panic was not logged: %s", logs.String())
	}
	m := readProducing(t, ctx, s, pusher{base + "/in"}.Produce, "second")
	if string(m.Payload) != "second" || m.Meta["remoteAddr"] == nil {
		t.Fatalf("read %q (meta %v) after the panic, want second from a client", m.Payload, m.Meta)
	}
}

// readProducing produces payload until s reads a message: a message sent
// while the remote still holds a closed connection is lost.
func readProducing(t *testing.T, ctx context.Context, s *Source, produce func(*testing.T, [][]byte), payload string) *api.Message {
	t.Helper()
	for {
		produce(t, [][]byte{[]byte(payload)})
		rctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		m, err := s.Read(rctx)
		cancel()
		if err == nil {
			return m
		}
		if ctx.Err() != nil {
			t.Fatalf("no message read: %v", err)
		}
	}
}
