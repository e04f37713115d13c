package websocket

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	ws "github.com/coder/websocket"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/connector/conformancetest"
	"github.com/rekuiper/rekuiper/internal/connector/connectortest"
	"github.com/rekuiper/rekuiper/internal/guard"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// remote is a websocket server for client-mode tests: it pushes produced
// payloads to its clients and records what they send. It restarts on the
// same address.
type remote struct {
	addr string
	srv  *httptest.Server
	conformancetest.SeqRecorder

	mu    sync.Mutex
	conns map[*ws.Conn]struct{}
	stop  chan struct{}
}

func newRemote(t *testing.T) *remote {
	t.Helper()
	r := &remote{}
	r.start(t)
	t.Cleanup(r.shutdown)
	return r
}

func (r *remote) start(t *testing.T) {
	t.Helper()
	addr := r.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	var l net.Listener
	var err error
	// On a restart the old port may linger briefly.
	if !testwait.Poll(testwait.Limit, func() bool {
		l, err = net.Listen("tcp", addr)
		return err == nil
	}) {
		t.Fatal(err)
	}
	r.addr = l.Addr().String()
	r.mu.Lock()
	r.conns = map[*ws.Conn]struct{}{}
	r.stop = make(chan struct{})
	r.mu.Unlock()
	r.srv = &httptest.Server{Listener: l, Config: &http.Server{Handler: http.HandlerFunc(r.handle)}}
	r.srv.Start()
}

func (r *remote) handle(w http.ResponseWriter, req *http.Request) {
	c, err := ws.Accept(w, req, nil)
	if err != nil {
		return
	}
	r.mu.Lock()
	r.conns[c] = struct{}{}
	stop := r.stop
	r.mu.Unlock()
	ctx, cancel := context.WithCancel(req.Context())
	defer cancel()
	go func() {
		<-stop
		cancel()
	}()
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			break
		}
		if seq, err := conformancetest.DecodeSeq(&api.Message{Payload: b}); err == nil {
			r.Add(seq)
		}
	}
	r.mu.Lock()
	delete(r.conns, c)
	r.mu.Unlock()
	c.CloseNow()
}

// shutdown closes every connection with the close handshake, then stops
// the server. A client has answered the close when its connection's Close
// returns, and from then on its writes fail: a message written to a
// connection whose close is still in flight would be lost instead
// (WebSocket has no acknowledgement).
func (r *remote) shutdown() {
	r.mu.Lock()
	conns := make([]*ws.Conn, 0, len(r.conns))
	for c := range r.conns {
		conns = append(conns, c)
	}
	r.mu.Unlock()
	for _, c := range conns {
		_ = c.Close(ws.StatusGoingAway, "restart")
	}
	r.mu.Lock()
	close(r.stop)
	r.mu.Unlock()
	r.srv.Close()
}

// Restart implements conformancetest.Restarter.
func (r *remote) Restart(t *testing.T) {
	r.shutdown()
	r.start(t)
}

// Produce sends payloads to every client, waiting up to 2s for one to
// connect (payloads are dropped otherwise, as during a restart).
func (r *remote) Produce(t *testing.T, payloads [][]byte) {
	t.Helper()
	var conns []*ws.Conn
	testwait.Poll(2*time.Second, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		conns = conns[:0]
		for c := range r.conns {
			conns = append(conns, c)
		}
		return len(conns) > 0
	})
	for _, c := range conns {
		for _, p := range payloads {
			if err := c.Write(context.Background(), ws.MessageText, p); err != nil {
				break
			}
		}
	}
}

func invalid(pathProp string) []conformancetest.InvalidCase {
	return []conformancetest.InvalidCase{
		{Name: "no path", Props: map[string]any{"addr": "127.0.0.1:1"}, WantErr: `"` + pathProp + `" is required`},
		{Name: "bad addr", Props: map[string]any{"addr": "nohost", pathProp: "/x"}, WantErr: "not host:port"},
		{Name: "bad scheme", Props: map[string]any{"addr": "127.0.0.1:1", pathProp: "/x", "scheme": "http"}, WantErr: "not one of ws, wss"},
		{Name: "server mode without http server", Props: map[string]any{pathProp: "/x"}, WantErr: "needs the daemon's HTTP server"},
	}
}

func TestClientSourceConformance(t *testing.T) {
	r := newRemote(t)
	conformancetest.RunSourceSuite(t, conformancetest.SourceFactory{
		Spec: SourceSpec(), New: NewSource,
		Props: func(*testing.T) map[string]any {
			return map[string]any{"addr": r.addr, "datasource": "/feed"}
		},
		UnreachableProps: map[string]any{"addr": connectortest.ClosedAddr(t), "datasource": "/feed"},
		Invalid:          invalid("datasource"),
	}, r)
}

func TestClientSinkConformance(t *testing.T) {
	r := newRemote(t)
	conformancetest.RunSinkSuite(t, conformancetest.SinkFactory{
		Spec: SinkSpec(), New: NewSink,
		Props: func(*testing.T) map[string]any {
			return map[string]any{"addr": r.addr, "path": "out"}
		},
		UnreachableProps: map[string]any{"addr": connectortest.ClosedAddr(t), "path": "/out"},
		Invalid:          invalid("path"),
	}, r)
}

// pusher sends to a server-mode source as a client of the daemon's mux.
type pusher struct{ url string }

func (p pusher) Produce(t *testing.T, payloads [][]byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, _, err := ws.Dial(ctx, p.url, nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	for _, b := range payloads {
		if err := c.Write(ctx, ws.MessageText, b); err != nil {
			t.Fatal(err)
		}
	}
	c.Close(ws.StatusNormalClosure, "")
}

func daemonMux(t *testing.T) (*connector.Mux, string) {
	t.Helper()
	mux := connector.NewMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return mux, "ws" + strings.TrimPrefix(srv.URL, "http")
}

func TestServerSourceConformance(t *testing.T) {
	mux, base := daemonMux(t)
	conformancetest.RunSourceSuite(t, conformancetest.SourceFactory{
		Spec: SourceSpec(), New: NewSource, Deps: connector.Deps{HTTP: mux},
		Props: func(*testing.T) map[string]any {
			return map[string]any{"datasource": "/in"}
		},
		Invalid: invalid("datasource")[:3],
	}, pusher{base + "/in"})
}

func TestServerSink(t *testing.T) {
	mux, base := daemonMux(t)
	s, err := registry(t).NewSink(Type, map[string]any{"path": "/out", "timeout": "1s"}, connector.Deps{HTTP: mux})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Write(ctx, conformancetest.Message(0)); err != nil {
		t.Fatalf("write without clients: %v", err)
	}
	if err := s.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	var clients []*ws.Conn
	for range 2 {
		c, _, err := ws.Dial(ctx, base+"/out", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		clients = append(clients, c)
	}
	sink := s.(*Sink)
	testwait.Until(t, "both clients registered", func() bool {
		sink.mu.Lock()
		defer sink.mu.Unlock()
		return len(sink.clients) == 2
	})
	for i := range int64(50) {
		if err := s.Write(ctx, conformancetest.Message(i)); err != nil {
			t.Fatal(err)
		}
	}
	for ci, c := range clients {
		for i := range int64(50) {
			_, b, err := c.Read(ctx)
			if err != nil {
				t.Fatalf("client %d: %v", ci, err)
			}
			seq, err := conformancetest.DecodeSeq(&api.Message{Payload: b})
			if err != nil || seq != i {
				t.Fatalf("client %d message %d: seq %d, %v", ci, i, seq, err)
			}
		}
	}
	// A client that leaves does not fail the sink.
	clients[0].CloseNow()
	for i := range int64(5) {
		if err := s.Write(ctx, conformancetest.Message(100+i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, b, err := clients[1].Read(ctx); err != nil || !strings.Contains(string(b), `"seq":100`) {
		t.Fatalf("remaining client: %s %v", b, err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	closed := false
	for range 10 { // four more messages may be buffered
		if _, _, err := clients[1].Read(ctx); err != nil {
			closed = true
			break
		}
	}
	if !closed {
		t.Fatal("client still connected after Close")
	}
	// The path is free again.
	if err := mux.Handle("/out", http.NotFoundHandler()); err != nil {
		t.Fatalf("path not released: %v", err)
	}
}

func TestServerModeSharesPath(t *testing.T) {
	mux, _ := daemonMux(t)
	ctx := context.Background()
	a, err := registry(t).NewSource(Type, map[string]any{"datasource": "/p"}, connector.Deps{HTTP: mux})
	if err != nil {
		t.Fatal(err)
	}
	b, err := registry(t).NewSource(Type, map[string]any{"datasource": "p"}, connector.Deps{HTTP: mux})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	if err := b.Connect(ctx); err == nil || !strings.Contains(err.Error(), "already in use") {
		t.Fatalf("second source on the same path: %v", err)
	}
	b.Close(ctx)
}

func registry(t *testing.T) *connector.Registry {
	t.Helper()
	r := connectortest.Registry(t, Register)
	return r
}

// TestClientModeNetworkGuard connects a client-mode sink to a server on
// loopback through the name localhost: refused at dial time with
// enablePrivateNet false (the server sees no upgrade), allowed with true.
func TestClientModeNetworkGuard(t *testing.T) {
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		mu.Unlock()
		c, err := ws.Accept(w, r, nil)
		if err != nil {
			return
		}
		c.CloseNow() //nolint:errcheck // test server
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	props := map[string]any{"addr": "localhost:" + port, "path": "/x", "timeout": "5s"}
	for _, tc := range []struct {
		name  string
		allow bool
	}{{"enablePrivateNet false", false}, {"enablePrivateNet true", true}} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := registry(t).NewSink(Type, props, connector.Deps{Guard: guard.New(guard.Policy{AllowPrivateNet: tc.allow})})
			if err != nil {
				t.Fatal(err)
			}
			err = s.Connect(context.Background())
			if tc.allow && err != nil {
				t.Fatalf("connect: %v", err)
			}
			if !tc.allow && !errors.Is(err, guard.ErrBlockedAddress) {
				t.Fatalf("connect: %v, want ErrBlockedAddress", err)
			}
			s.Close(context.Background()) //nolint:errcheck // test end
		})
	}
	mu.Lock()
	defer mu.Unlock()
	if n != 1 {
		t.Fatalf("the server got %d requests, want 1 (from the allowed sink only)", n)
	}
}

// TestClientSinkStatus checks the connection status a client-mode sink
// reports: the connect error against a closed port, connected once a
// server answers.
func TestClientSinkStatus(t *testing.T) {
	down, err := registry(t).NewSink(Type, map[string]any{"addr": conformancetest.ClosedPort(t), "path": "/out", "timeout": "2s"}, connector.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	conformancetest.CheckStatus(t, down, "connecting", "")
	if err := down.Connect(context.Background()); err == nil {
		t.Fatal("connect to a closed port succeeded")
	}
	conformancetest.CheckStatus(t, down, "disconnected", "connection refused")
	if err := down.Write(context.Background(), conformancetest.Message(1)); err == nil {
		t.Fatal("write to a closed port succeeded")
	}
	conformancetest.CheckStatus(t, down, "disconnected", "connection refused")
	down.Close(context.Background()) //nolint:errcheck // test end

	r := newRemote(t)
	up, err := registry(t).NewSink(Type, map[string]any{"addr": r.addr, "path": "/out"}, connector.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if err := up.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer up.Close(context.Background()) //nolint:errcheck // test end
	conformancetest.CheckStatus(t, up, "connected", "")
}
