package connection

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/clock"
)

type client struct {
	mu     sync.Mutex
	closed int
}

func (c *client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed++
	return nil
}

func openClient(opened *int) func(*Tracker) (*client, error) {
	return func(*Tracker) (*client, error) {
		*opened++
		return &client{}, nil
	}
}

func TestSharedClientIsReferenceCounted(t *testing.T) {
	r := NewRegistry(clock.NewVirtual(1000))
	opened := 0
	u1, u2 := r.Join("k"), r.Join("k")
	c1, t1, err := Shared(u1, openClient(&opened), (*client).Close)
	if err != nil {
		t.Fatal(err)
	}
	c2, t2, err := Shared(u2, openClient(&opened), (*client).Close)
	if err != nil {
		t.Fatal(err)
	}
	if c1 != c2 || t1 != t2 || opened != 1 {
		t.Fatalf("not shared: %p %p, opened %d", c1, c2, opened)
	}
	if st := r.StatusOf("k"); st.Users != 2 || st.Clients != 1 || st.State != StateConnecting {
		t.Fatalf("status %+v", st)
	}
	if err := u1.Leave(); err != nil {
		t.Fatal(err)
	}
	if c1.closed != 0 {
		t.Fatal("closed while a holder is left")
	}
	if err := u2.Leave(); err != nil {
		t.Fatal(err)
	}
	if err := u2.Leave(); err != nil {
		t.Fatal(err)
	}
	if c1.closed != 1 {
		t.Fatalf("closed %d times, want 1", c1.closed)
	}
	if st := r.StatusOf("k"); st.Users != 0 || st.Clients != 0 || st.State != StateDisconnected {
		t.Fatalf("status after leaving %+v", st)
	}
	u3 := r.Join("k")
	c3, _, err := Shared(u3, openClient(&opened), (*client).Close)
	if err != nil {
		t.Fatal(err)
	}
	if c3 == c1 || opened != 2 {
		t.Fatal("a closed client was handed out again")
	}
	u3.Leave()
}

func TestStateAndTimes(t *testing.T) {
	vc := clock.NewVirtual(1000)
	r := NewRegistry(vc)
	u := r.Join("k")
	_, tr, err := Shared(u, func(*Tracker) (*client, error) { return &client{}, nil }, (*client).Close)
	if err != nil {
		t.Fatal(err)
	}
	tr.Connected()
	st := r.StatusOf("k")
	if st.State != StateConnected || st.LastConnected.UnixMilli() != 1000 || !st.LastDisconnected.IsZero() || st.LastError != "" {
		t.Fatalf("connected: %+v", st)
	}
	vc.AdvanceTo(2000, nil)
	tr.Failed(errors.New("connection refused"))
	st = r.StatusOf("k")
	if st.State != StateDisconnected || st.LastDisconnected.UnixMilli() != 2000 || st.LastError != "connection refused" {
		t.Fatalf("failed: %+v", st)
	}
	// A second client under the key that works does not hide the failure.
	other := r.Join("k")
	ot := other.Track()
	ot.Connected()
	if st := r.StatusOf("k"); st.State != StateDisconnected || st.Clients != 2 || st.Users != 2 {
		t.Fatalf("one of two failed: %+v", st)
	}
	vc.AdvanceTo(3000, nil)
	tr.Connected()
	st = r.StatusOf("k")
	if st.State != StateConnected || st.LastConnected.UnixMilli() != 3000 || st.LastError != "" {
		t.Fatalf("reconnected: %+v", st)
	}
	ot.Close()
	other.Leave()
	tr.Failed(errors.New("gone"))
	u.Leave()
	st = r.StatusOf("k")
	if st.State != StateDisconnected || st.Users != 0 || st.Clients != 0 || st.LastError != "gone" {
		t.Fatalf("after the last client closed the error must stay: %+v", st)
	}
	tr.Connected() // after Close: ignored
	if st := r.StatusOf("k"); st.State != StateDisconnected {
		t.Fatalf("closed tracker changed the state: %+v", st)
	}
}

func TestCloseOfConnectedClientSetsLastDisconnected(t *testing.T) {
	vc := clock.NewVirtual(1000)
	r := NewRegistry(vc)
	tr := r.Track("k")
	tr.Connected()
	vc.AdvanceTo(5000, nil)
	tr.Close()
	if st := r.StatusOf("k"); st.LastDisconnected.UnixMilli() != 5000 || st.State != StateDisconnected {
		t.Fatalf("status %+v", st)
	}
}

func TestFailedOpenIsRetried(t *testing.T) {
	r := NewRegistry(nil)
	u := r.Join("k")
	_, _, err := Shared(u, func(*Tracker) (*client, error) { return nil, errors.New("bad dsn") }, (*client).Close)
	if err == nil {
		t.Fatal("open error lost")
	}
	if st := r.StatusOf("k"); st.LastError != "bad dsn" || st.Clients != 0 || st.Users != 1 {
		t.Fatalf("status %+v", st)
	}
	opened := 0
	if _, _, err := Shared(u, openClient(&opened), (*client).Close); err != nil || opened != 1 {
		t.Fatalf("retry: %v, opened %d", err, opened)
	}
	u.Leave()
	if _, _, err := Shared(u, openClient(&opened), (*client).Close); err == nil {
		t.Fatal("Shared after Leave succeeded")
	}
}

func TestNilRegistry(t *testing.T) {
	var r *Registry
	u1, u2 := r.Join("k"), r.Join("k")
	c1, tr, err := Shared(u1, func(*Tracker) (*client, error) { return &client{}, nil }, (*client).Close)
	if err != nil {
		t.Fatal(err)
	}
	c2, _, _ := Shared(u2, func(*Tracker) (*client, error) { return &client{}, nil }, (*client).Close)
	if c1 == c2 {
		t.Fatal("clients shared without a registry")
	}
	tr.Connected()
	tr.Failed(errors.New("x"))
	u1.Track().Connected()
	u1.Leave()
	u2.Leave()
	if c1.closed != 1 || c2.closed != 1 {
		t.Fatalf("closed %d, %d", c1.closed, c2.closed)
	}
}

func TestKeyFuncs(t *testing.T) {
	r := NewRegistry(nil)
	f := func(props map[string]any) (string, error) {
		a, _ := props["addr"].(string)
		if a == "" {
			return "", errors.New("property \"addr\" is required")
		}
		return Digest("x", a), nil
	}
	if err := r.SetKeyFunc("Redis", f); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		typ  string
		f    KeyFunc
	}{{"duplicate", "redis", f}, {"empty", " ", f}, {"nil", "sql", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			if err := r.SetKeyFunc(tc.typ, tc.f); err == nil {
				t.Fatal("accepted")
			}
		})
	}
	u := r.Join(Digest("x", "h:1"))
	u.Track().Connected()
	st, err := r.Status("REDIS", Pick(map[string]any{"ADDR": "h:1", "other": 1}, "addr"))
	if err != nil || st.State != StateConnected || st.Users != 1 {
		t.Fatalf("status %+v, %v", st, err)
	}
	if _, err := r.Status("redis", map[string]any{}); err == nil || !strings.Contains(err.Error(), "addr") {
		t.Fatalf("bad props: %v", err)
	}
	if _, err := r.Status("websocket", nil); !errors.Is(err, ErrNoKeyFunc) {
		t.Fatalf("untracked type: %v", err)
	}
}

func TestDigestHidesParts(t *testing.T) {
	k := Digest("redis", "h:1", "secret")
	if !strings.HasPrefix(k, "redis:") || strings.Contains(k, "secret") || k == Digest("redis", "h:1", "other") {
		t.Fatalf("digest %q", k)
	}
	if Digest("a", "bc") == Digest("a", "b", "c") {
		t.Fatal("parts are not separated")
	}
}

func TestConcurrentUse(t *testing.T) {
	r := NewRegistry(nil)
	var wg sync.WaitGroup
	var mu sync.Mutex
	clients := map[*client]bool{}
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				u := r.Join("k")
				c, tr, err := Shared(u, func(*Tracker) (*client, error) { return &client{}, nil }, (*client).Close)
				if err != nil {
					t.Error(err)
					return
				}
				tr.Connected()
				mu.Lock()
				clients[c] = true
				mu.Unlock()
				_ = r.StatusOf("k")
				u.Leave()
				time.Sleep(time.Microsecond) // spreads the joins and leaves so the goroutines interleave; not a wait
			}
		}()
	}
	wg.Wait()
	for c := range clients {
		if c.closed != 1 {
			t.Fatalf("a client was closed %d times", c.closed)
		}
	}
	if st := r.StatusOf("k"); st.Users != 0 || st.Clients != 0 {
		t.Fatalf("status %+v", st)
	}
}
