package mqtt

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

func newTestPool(t *testing.T) *Pool {
	t.Helper()
	p := NewPool(nil, clock.Wall{})
	p.minBackoff, p.maxBackoff, p.connectTimeout = 50*time.Millisecond, 400*time.Millisecond, 5*time.Second
	t.Cleanup(func() { _ = p.Close() })
	return p
}

var topicSeq struct {
	sync.Mutex
	n int
}

// uniqueTopic returns a topic prefix no other test uses.
func uniqueTopic(t *testing.T) string {
	topicSeq.Lock()
	defer topicSeq.Unlock()
	topicSeq.n++
	name := strings.NewReplacer("/", "_", " ", "_", "#", "_", "+", "_", ".", "_").Replace(t.Name())
	return fmt.Sprintf("rk/%s/%d", name, topicSeq.n)
}

func newSource(t *testing.T, p *Pool, props map[string]any) (*Source, error) {
	t.Helper()
	return openSource(t, p, props, nil)
}

// openSource builds and connects a source; with push set it pushes its
// messages there instead of queueing them for Read.
func openSource(t *testing.T, p *Pool, props map[string]any, push func([]*api.Message) bool) (*Source, error) {
	t.Helper()
	v, err := SourceSpec().Validate(props)
	if err != nil {
		t.Fatalf("validate: %v", err)
	}
	s, err := NewSource(p, v, connector.Deps{})
	if err != nil {
		return nil, err
	}
	if push != nil {
		s.PushTo(push)
	}
	if err := connectOrClose(t, s); err != nil {
		return nil, err
	}
	return s, nil
}

// connectOrClose connects c within 10 s and closes it at the end of the
// test; when Connect fails it closes c at once and returns the error.
func connectOrClose(t *testing.T, c interface {
	Connect(context.Context) error
	Close(context.Context) error
}) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Connect(ctx); err != nil {
		_ = c.Close(context.Background())
		return err
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return nil
}

func mustSource(t *testing.T, p *Pool, props map[string]any) *Source {
	t.Helper()
	s, err := newSource(t, p, props)
	if err != nil {
		t.Fatalf("source: %v", err)
	}
	return s
}

// mustPushSource connects a source that pushes its messages to fn and
// waits until it is connected.
func mustPushSource(t *testing.T, p *Pool, props map[string]any, fn func([]*api.Message) bool) *Source {
	t.Helper()
	s, err := openSource(t, p, props, fn)
	if err != nil {
		t.Fatalf("push source: %v", err)
	}
	waitConnected(t, s.Status)
	return s
}

func newSink(t *testing.T, p *Pool, props map[string]any) (*Sink, error) {
	t.Helper()
	v, err := SinkSpec().Validate(props)
	if err != nil {
		t.Fatalf("validate: %v", err)
	}
	s, err := NewSink(p, v, connector.Deps{})
	if err != nil {
		return nil, err
	}
	if err := connectOrClose(t, s); err != nil {
		return nil, err
	}
	return s, nil
}

func mustSink(t *testing.T, p *Pool, props map[string]any) *Sink {
	t.Helper()
	s, err := newSink(t, p, props)
	if err != nil {
		t.Fatalf("sink: %v", err)
	}
	return s
}

// waitConnected waits until Status reads connected.
func waitConnected(t *testing.T, status func() (string, time.Time, time.Time, string)) {
	t.Helper()
	if !testwait.Poll(testwait.Limit, func() bool { st, _, _, _ := status(); return st == StateConnected }) {
		st, _, _, e := status()
		t.Fatalf("not connected: state %s, last error %q", st, e)
	}
}

// retry calls op until it succeeds or fails with an error that is not
// retryable (the connection is down or reconnecting), and returns its last
// error.
func retry(op func() error) error {
	var err error
	testwait.Poll(testwait.Limit, func() bool {
		err = op()
		return err == nil || !isRetryable(err)
	})
	return err
}

// write publishes payload, retrying retryable errors.
func write(t *testing.T, s *Sink, payload string, rows ...map[string]any) {
	t.Helper()
	if err := retry(func() error {
		return s.Write(context.Background(), &api.SinkMessage{Payload: []byte(payload), Rows: rows})
	}); err != nil {
		t.Fatalf("write %q: %v", payload, err)
	}
}

func isRetryable(err error) bool {
	return errorsIsRetryable(err)
}

// flush waits for the sink's outstanding acknowledgements, retrying
// retryable errors.
func flush(t *testing.T, s *Sink) {
	t.Helper()
	if err := retry(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return s.Flush(ctx)
	}); err != nil {
		t.Fatalf("flush: %v", err)
	}
}

// read returns the next message or fails after timeout.
func read(t *testing.T, s *Source, timeout time.Duration) *api.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	m, err := s.Read(ctx)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return m
}

// readNone asserts that nothing arrives within d.
func readNone(t *testing.T, s *Source, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if m, err := s.Read(ctx); err == nil {
		t.Fatalf("unexpected message %q on %v", m.Payload, m.Meta["topic"])
	}
}

// collect reads and acks messages until n distinct payloads were seen or
// timeout; it returns how many distinct payloads arrived.
func collect(s *Source, n int, timeout time.Duration) map[string]int {
	seen := map[string]int{}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for len(seen) < n {
		m, err := s.Read(ctx)
		if err != nil {
			break
		}
		seen[string(m.Payload)]++
		if m.Ack != nil {
			m.Ack()
		}
	}
	return seen
}

func errorsIsRetryable(err error) bool { return errors.Is(err, api.ErrRetryable) }
