package sdktest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// Sink describes the sink under test.
type Sink struct {
	// New builds the sink from properties as the engine does: it validates
	// them against the sink's spec, then calls the factory
	// (sdk.Registry.NewSink does both).
	New func(props map[string]any) (api.Sink, error)
	// Props returns valid properties for a sink that writes where the
	// reader reads. It is called once per subtest.
	Props func(t *testing.T) map[string]any
	// UnreachableProps are valid properties whose Connect or first Write
	// fails because no server is there (a failed Write must be retryable);
	// nil skips the failed-connect check.
	UnreachableProps map[string]any
	// Invalid are configurations New must refuse; nil skips the check.
	Invalid []InvalidCase
}

// Reader observes what a sink delivered.
type Reader interface {
	// Seqs returns the sequence numbers delivered since the subtest began,
	// in delivery order, waiting until there are at least want of them or
	// the timeout passed (then it returns what it has).
	Seqs(t *testing.T, want int, timeout time.Duration) []int64
	// Reset forgets what was delivered before; it is called at the start of
	// each subtest that counts records.
	Reset(t *testing.T)
}

// RunSink runs the sink checks as subtests of t: OpenClose,
// CloseAfterFailedConnect, Batch (ten messages, each delivered once),
// Ordered (a hundred messages, delivered in order), ReconnectAfterRestart
// (when r is a Restarter: while the server restarts every failed Write is
// retryable, and the same sink delivers again once it is back) and
// InvalidConfig.
func RunSink(t *testing.T, f Sink, r Reader) {
	t.Helper()
	if f.New == nil || f.Props == nil {
		t.Fatal("sdktest: Sink needs New and Props")
	}
	s := sinkSuite{f: f, r: r, build: builder(f.New, "sink")}
	t.Run("OpenClose", func(t *testing.T) { openClose(t, s.build(t, f.Props(t))) })
	t.Run("CloseAfterFailedConnect", s.closeAfterFailedConnect)
	t.Run("Batch", s.batch)
	t.Run("Ordered", s.ordered)
	t.Run("ReconnectAfterRestart", s.reconnectAfterRestart)
	t.Run("InvalidConfig", invalidConfig(f.New, f.Invalid))
}

// sinkSuite holds what RunSink's checks share.
type sinkSuite struct {
	f     Sink
	r     Reader
	build func(*testing.T, map[string]any) api.Sink
}

// connected forgets what the reader saw, then connects a new sink.
func (s sinkSuite) connected(t *testing.T) api.Sink {
	t.Helper()
	s.r.Reset(t)
	return connected(t, s.build(t, s.f.Props(t)))
}

// write writes the messages of sequence numbers from to from+n-1.
func (s sinkSuite) write(t *testing.T, snk api.Sink, from, n int64) {
	t.Helper()
	ctx := ctxTimeout(t, Timeout)
	for i := from; i < from+n; i++ {
		if err := snk.Write(ctx, Message(i)); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
}

func (s sinkSuite) closeAfterFailedConnect(t *testing.T) {
	closeAfterFailedConnect(t, s.build, s.f.UnreachableProps, "write", func(snk api.Sink) error {
		err := snk.Write(ctxTimeout(t, 10*time.Second), Message(0))
		if err != nil && !errors.Is(err, api.ErrRetryable) {
			t.Fatalf("write without a server: %v is not retryable", err)
		}
		return err
	})
}

func (s sinkSuite) batch(t *testing.T) {
	snk := s.connected(t)
	s.write(t, snk, 0, 10)
	got := s.r.Seqs(t, 10, Timeout)
	seen := map[int64]bool{}
	for _, g := range got {
		if g < 0 || g >= 10 || seen[g] {
			t.Fatalf("unexpected or duplicate seq %d in %v", g, got)
		}
		seen[g] = true
	}
	if len(seen) != 10 {
		t.Fatalf("delivered %v, want 0..9", got)
	}
}

func (s sinkSuite) ordered(t *testing.T) {
	snk := s.connected(t)
	const n = 100
	s.write(t, snk, 1000, n)
	got := s.r.Seqs(t, n, Timeout)
	if len(got) != n {
		t.Fatalf("delivered %d records, want %d", len(got), n)
	}
	for i, g := range got {
		if g != int64(1000+i) {
			t.Fatalf("record %d is seq %d, want %d", i, g, 1000+i)
		}
	}
}

func (s sinkSuite) reconnectAfterRestart(t *testing.T) {
	rs, ok := s.r.(Restarter)
	if !ok {
		t.Skip("reader cannot restart its server")
	}
	snk := s.connected(t)
	s.write(t, snk, 1, 1)
	s.r.Seqs(t, 1, Timeout)
	rs.Restart(t)
	s.r.Reset(t)
	sinkRecovers(t, snk)
	const final = 777
	got := s.r.Seqs(t, 1, Timeout)
	if !slices.Contains(got, final) {
		t.Fatalf("after restart delivered %v, want %d among them", got, final)
	}
}

// sinkRecovers writes seq 777 until it succeeds; every failure must be
// retryable (the sink cache retries those with the same sink instance).
func sinkRecovers(t *testing.T, s api.Sink) {
	t.Helper()
	var lastErr error
	recovered := testwait.Poll(Timeout, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := s.Write(ctx, Message(777))
		cancel()
		if err != nil && !errors.Is(err, api.ErrRetryable) {
			t.Fatalf("write during restart: %v is not retryable", err)
		}
		lastErr = err
		return err == nil
	})
	if !recovered {
		t.Fatalf("sink did not recover after the server restarted: %v", lastErr)
	}
}
