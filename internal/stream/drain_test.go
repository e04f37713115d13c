package stream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// drainSource queues payloads for Read; Drain queues the ones "the
// upstream had sent" and makes Read end with io.EOF once they are read.
type drainSource struct {
	mu       sync.Mutex
	queue    []string
	more     chan struct{} // closed and replaced when the queue grows
	drained  bool
	late     []string // what Drain hands over
	closed   bool
	closedAt int // records read when Close was called
	read     int
}

func newDrainSource(first, late []string) *drainSource {
	return &drainSource{queue: first, late: late, more: make(chan struct{})}
}

func (d *drainSource) Connect(context.Context) error { return nil }

func (d *drainSource) Close(context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed, d.closedAt = true, d.read
	return nil
}

func (d *drainSource) Drain(context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.queue = append(d.queue, d.late...)
	d.drained = true
	close(d.more)
	d.more = make(chan struct{})
	return nil
}

func (d *drainSource) Read(ctx context.Context) (*api.Message, error) {
	for {
		d.mu.Lock()
		if len(d.queue) > 0 {
			p := d.queue[0]
			d.queue = d.queue[1:]
			d.read++
			d.mu.Unlock()
			return &api.Message{Payload: []byte(p)}, nil
		}
		if d.drained {
			d.mu.Unlock()
			return nil, io.EOF
		}
		more := d.more
		d.mu.Unlock()
		select {
		case <-more:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func seqs(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf(`{"seq":%d}`, i))
	}
	return out
}

// TestReleaseDrainsBeforeStop: the last release of a subscription over a
// Drainer delivers what the source drains to the still attached consumer
// before the source is closed, and io.EOF after a drain is not the
// stream's end.
func TestReleaseDrainsBeforeStop(t *testing.T) {
	src := newDrainSource(seqs(0, 5), seqs(5, 12))
	rec := acquireAndRelease(t, src, 5)
	rec.mu.Lock()
	got := append([]int64(nil), rec.seqs...)
	rec.mu.Unlock()
	if len(got) != 12 {
		t.Fatalf("delivered %v, want seq 0 to 11", got)
	}
	for i, s := range got {
		if s != int64(i) {
			t.Fatalf("delivered %v, want seq 0 to 11 in order", got)
		}
	}
	src.mu.Lock()
	closed, closedAt := src.closed, src.closedAt
	src.mu.Unlock()
	if !closed || closedAt != 12 {
		t.Fatalf("source closed %v after %d reads, want closed after 12", closed, closedAt)
	}
	select {
	case err := <-rec.ended:
		t.Fatalf("End(%v) called: a drained source is stopped, not ended", err)
	default:
	}
}

// undrainable wraps a source that cannot drain, as a source log wraps an
// HTTP push source.
type undrainable struct{ *fakeSource }

func (undrainable) Drain(context.Context) error { return errors.ErrUnsupported }

// TestReleaseOfUndrainableSourceDoesNotWait: a Drainer that reports
// errors.ErrUnsupported is stopped at once, without waiting for an io.EOF
// that never comes.
func TestReleaseOfUndrainableSourceDoesNotWait(t *testing.T) {
	src := undrainable{&fakeSource{payloads: seqs(0, 3)}}
	acquireAndRelease(t, src, 3)
}

// acquireAndRelease acquires a subscription over src through a Manager,
// attaches a recorder, waits for the first n records and releases the
// subscription (its last release), then detaches the recorder.
func acquireAndRelease(t *testing.T, src api.Source, n int) *recorder {
	t.Helper()
	m := NewManager()
	sub, release, err := m.Acquire("k", func() (*Subscription, error) {
		return NewSubscription("s", src, jsonDecoder(t), clock.Wall{}, nil), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	id := sub.Attach(rec.consumer())
	sub.Start()
	testwait.Until(t, "every record delivered", func() bool { return rec.count() == n })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := release(ctx); err != nil {
		t.Fatalf("release: %v", err)
	}
	sub.Detach(id)
	return rec
}
