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
	build := builder(f.New, "sink")
	write := func(t *testing.T, s api.Sink, from, n int64) {
		t.Helper()
		ctx := ctxTimeout(t, Timeout)
		for i := from; i < from+n; i++ {
			if err := s.Write(ctx, Message(i)); err != nil {
				t.Fatalf("write %d: %v", i, err)
			}
		}
	}

	t.Run("OpenClose", func(t *testing.T) { openClose(t, build(t, f.Props(t))) })
	t.Run("CloseAfterFailedConnect", func(t *testing.T) {
		if f.UnreachableProps == nil {
			t.Skip("no unreachable configuration given")
		}
		s := build(t, f.UnreachableProps)
		if err := s.Connect(ctxTimeout(t, Timeout)); err == nil {
			err := s.Write(ctxTimeout(t, 10*time.Second), Message(0))
			if err == nil {
				t.Fatal("connect and write succeeded without a server")
			}
			if !errors.Is(err, api.ErrRetryable) {
				t.Fatalf("write without a server: %v is not retryable", err)
			}
		}
		if err := s.Close(context.Background()); err != nil {
			t.Fatalf("close after failed connect: %v", err)
		}
	})
	t.Run("Batch", func(t *testing.T) {
		r.Reset(t)
		s := connected(t, build(t, f.Props(t)))
		write(t, s, 0, 10)
		got := r.Seqs(t, 10, Timeout)
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
	})
	t.Run("Ordered", func(t *testing.T) {
		r.Reset(t)
		s := connected(t, build(t, f.Props(t)))
		const n = 100
		write(t, s, 1000, n)
		got := r.Seqs(t, n, Timeout)
		if len(got) != n {
			t.Fatalf("delivered %d records, want %d", len(got), n)
		}
		for i, g := range got {
			if g != int64(1000+i) {
				t.Fatalf("record %d is seq %d, want %d", i, g, 1000+i)
			}
		}
	})
	t.Run("ReconnectAfterRestart", func(t *testing.T) {
		rs, ok := r.(Restarter)
		if !ok {
			t.Skip("reader cannot restart its server")
		}
		r.Reset(t)
		s := connected(t, build(t, f.Props(t)))
		write(t, s, 1, 1)
		r.Seqs(t, 1, Timeout)
		rs.Restart(t)
		r.Reset(t)
		sinkRecovers(t, s)
		const final = 777
		got := r.Seqs(t, 1, Timeout)
		if !slices.Contains(got, final) {
			t.Fatalf("after restart delivered %v, want %d among them", got, final)
		}
	})
	t.Run("InvalidConfig", func(t *testing.T) {
		checkInvalid(t, f.Invalid, func(props map[string]any) error {
			_, err := f.New(props)
			return err
		})
	})
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
