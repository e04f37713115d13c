package engine

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/panics"
)

// panickySink fails its first write retryably (so that the sink cache
// holds it), then panics on every write.
type panickySink struct{ writes atomic.Int64 }

func (s *panickySink) Connect(context.Context) error { return nil }
func (s *panickySink) Close(context.Context) error   { return nil }
func (s *panickySink) Write(context.Context, *api.SinkMessage) error {
	if s.writes.Add(1) == 1 {
		return fmt.Errorf("broker busy: %w", api.ErrRetryable)
	}
	panic("sink driver bug")
}

// registerPanicky registers the panickySink as the sink type "panicky".
func registerPanicky(t *testing.T, e *testEnv) {
	t.Helper()
	if err := e.runner.cfg.Registry.RegisterSink("panicky", connector.Spec{}, func(map[string]any, connector.Deps) (api.Sink, error) {
		return &panickySink{}, nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestSinkPanicStopsOnlyItsRule: a sink that panics, written directly by
// the rule's sink goroutine or replayed by the sink cache's goroutine,
// stops its rule with the panic as the error; a rule on the same stream
// keeps delivering.
func TestSinkPanicStopsOnlyItsRule(t *testing.T) {
	for _, cache := range []bool{false, true} {
		t.Run(fmt.Sprintf("enableCache=%v", cache), func(t *testing.T) {
			e := newTestEnv(t)
			registerPanicky(t, e)
			bad := e.start(t, mustParseDef(t, fmt.Sprintf(`{"id":"bad","sql":"SELECT v FROM s","actions":[{"panicky":{"enableCache":%v,"resendInterval":"1ms"}}]}`, cache)))
			startRule(t, e, `{"id":"good","sql":"SELECT v FROM s","actions":[{"counting":{}}]}`)
			// Without the cache the second write panics on the sink
			// goroutine; with it, only the cache's replay writes again.
			e.publish(t, 1)
			if !cache {
				e.publish(t, 2)
			}
			select {
			case <-bad.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("the rule with the panicking sink did not stop")
			}
			where := "panic: sink panicky_0: sink driver bug"
			if cache {
				where = "panic: sink cache: sink driver bug"
			}
			if err := bad.Err(); !panics.Is(err) || !strings.Contains(err.Error(), where) {
				t.Fatalf("bad rule error %v; want %q", err, where)
			}
			e.publish(t, 10, 11)
			msgs, _ := e.out.wait(t, 3)
			if !cache {
				msgs, _ = e.out.wait(t, 4)
			}
			if last := msgs[len(msgs)-1]; last != `[{"v":11}]` {
				t.Fatalf("good rule's last delivery %s; want v 11", last)
			}
		})
	}
}
