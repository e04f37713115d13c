package netlimit_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/netlimit"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// serve runs an HTTP server on a pool listener; /hold answers only when
// the request's context ends (a busy connection).
func serve(t *testing.T, pool *netlimit.Pool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/ping", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "pong") })
	mux.HandleFunc("/hold", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		http.NewResponseController(w).Flush()
		<-r.Context().Done()
	})
	srv := &http.Server{Handler: mux, ConnState: pool.ConnState, ReadHeaderTimeout: time.Minute}
	go srv.Serve(pool.Listen(ln, "test api", true))
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// get sends GET path on c and returns the status line.
func get(t *testing.T, c net.Conn, path string) string {
	t.Helper()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		return "write: " + err.Error()
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "read: " + err.Error()
	}
	return strings.TrimSpace(line)
}

func TestIdleConnectionsMakeRoom(t *testing.T) {
	pool := netlimit.NewPool(netlimit.Limits{MaxConnections: 8, MaxPerAddress: 8})
	addr := serve(t, pool)
	var silent []net.Conn
	for range 50 { // far more than the cap, all silent
		silent = append(silent, dial(t, addr))
	}
	testwait.Until(t, "the pool accepts every silent connection", func() bool { return pool.Stats().Accepted == 50 })
	if s := pool.Stats(); s.Open > 8 || s.Evicted < 42 {
		t.Fatalf("after 50 silent connections: %+v, want at most 8 open and 42 evicted", s)
	}
	// The next real client gets in, however many silent ones came first.
	if got := get(t, dial(t, addr), "/ping"); got != "HTTP/1.1 200 OK" {
		t.Fatalf("ping after the flood: %q", got)
	}
	// The oldest silent connections were the ones closed.
	silent[0].SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := silent[0].Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("oldest silent connection: read %v, want EOF (closed by the pool)", err)
	}
}

func TestBusyConnectionsAreNotEvicted(t *testing.T) {
	pool := netlimit.NewPool(netlimit.Limits{MaxConnections: 4, MaxPerAddress: 4})
	addr := serve(t, pool)
	for i := range 4 {
		if got := get(t, dial(t, addr), "/hold"); got != "HTTP/1.1 200 OK" {
			t.Fatalf("hold %d: %q", i, got)
		}
	}
	testwait.Until(t, "the held connections are busy", func() bool { return pool.Stats().Idle == 0 })
	// Every connection is busy: the next one is refused with a 503
	// naming the limit, and the held ones stay.
	c := dial(t, addr)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, _ := io.ReadAll(c)
	if !strings.HasPrefix(string(b), "HTTP/1.1 503 ") || !strings.Contains(string(b), "limits.maxConnections 4") {
		t.Fatalf("refusal: %q", b)
	}
	if s := pool.Stats(); s.Refused != 1 || s.Open != 4 || s.Evicted != 0 {
		t.Fatalf("stats: %+v, want 1 refused, 4 open, none evicted", s)
	}
}

func TestPerAddressCapEvictsThatAddressFirst(t *testing.T) {
	pool := netlimit.NewPool(netlimit.Limits{MaxConnections: 100, MaxPerAddress: 3})
	addr := serve(t, pool)
	for range 10 {
		dial(t, addr)
	}
	testwait.Until(t, "ten accepted", func() bool { return pool.Stats().Accepted == 10 })
	if s := pool.Stats(); s.Open != 3 || s.Evicted != 7 {
		t.Fatalf("stats: %+v, want 3 open (the per-address cap) and 7 evicted", s)
	}
	// Closing a connection gives its place back.
	c := dial(t, addr)
	if got := get(t, c, "/ping"); got != "HTTP/1.1 200 OK" {
		t.Fatalf("ping: %q", got)
	}
	c.Close()
	testwait.Until(t, "the closed connection leaves the pool", func() bool { return pool.Stats().Open <= 3 })
}

func TestSlots(t *testing.T) {
	s := netlimit.NewSlots("event streams", 3, "limits.maxEventStreams", 2, "limits.maxEventStreamsPerRule")
	r1, err := s.Acquire("a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Acquire("a"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Acquire("a"); !errors.Is(err, netlimit.ErrTooMany) || !strings.Contains(err.Error(), "limits.maxEventStreamsPerRule") {
		t.Fatalf("third for a: %v, want ErrTooMany naming the per-rule limit", err)
	}
	if _, err := s.Acquire("b"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Acquire("c"); !errors.Is(err, netlimit.ErrBusy) || !strings.Contains(err.Error(), "limits.maxEventStreams ") {
		t.Fatalf("fourth: %v, want ErrBusy naming the total limit", err)
	}
	r1()
	r1() // once only
	if s.Open() != 2 || s.Refused() != 2 {
		t.Fatalf("open %d refused %d, want 2 and 2", s.Open(), s.Refused())
	}
	if _, err := s.Acquire("c"); err != nil {
		t.Fatalf("after a release: %v", err)
	}
}

func TestRate(t *testing.T) {
	now := time.Unix(0, 0)
	r := netlimit.NewRate(2, 3, func() time.Time { return now })
	for i := range 3 {
		if !r.Allow("1.2.3.4") {
			t.Fatalf("burst request %d refused", i)
		}
	}
	if r.Allow("1.2.3.4") {
		t.Fatal("request past the burst allowed")
	}
	if !r.Allow("5.6.7.8") {
		t.Fatal("another address shares the bucket")
	}
	now = now.Add(500 * time.Millisecond) // one token at 2 a second
	if !r.Allow("1.2.3.4") || r.Allow("1.2.3.4") {
		t.Fatal("want exactly one request after half a second")
	}
	if got := netlimit.AddrOf("[::1]:80"); got != "::1" {
		t.Fatalf("AddrOf: %q", got)
	}
}
