package stream

import (
	"context"
	"strings"
	"testing"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/panics"
	"github.com/rekuiper/rekuiper/internal/row"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

type panickingSource struct{ fakeSource }

func (p *panickingSource) Read(context.Context) (*api.Message, error) {
	panic("driver bug")
}

// TestSourceReadPanicEndsEveryRule: a panic in a shared source's Read ends
// every rule on the subscription with the panic; the process goes on and
// Stop returns.
func TestSourceReadPanicEndsEveryRule(t *testing.T) {
	sub := NewSubscription("s", &panickingSource{}, jsonDecoder(t), clock.Wall{}, nil)
	a, b := newRecorder(), newRecorder()
	sub.Attach(a.consumer())
	sub.Attach(b.consumer())
	sub.Start()
	for _, r := range []*recorder{a, b} {
		err := <-r.ended
		if !panics.Is(err) || !strings.Contains(err.Error(), "panic: source s read: driver bug") {
			t.Fatalf("end error %v; want the read panic", err)
		}
	}
	if err := sub.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestPushPanicStaysOffTheSourceGoroutine: a panic while delivering pushed
// messages (engine code on the connector's goroutine) is recovered there;
// the rules end with it and later pushes are refused.
func TestPushPanicStaysOffTheSourceGoroutine(t *testing.T) {
	src := &pushFake{}
	sub := NewSubscription("s", src, jsonDecoder(t), clock.Wall{}, nil)
	ended := make(chan error, 1)
	sub.Attach(&Consumer{
		Deliver: func([]*row.Tuple) bool { panic("deliver bug") },
		End:     func(err error) { ended <- err },
	})
	sub.Start()
	testwait.Until(t, "the subscription to connect", func() bool { return sub.Status().State == "connected" })
	if src.push([]*api.Message{{Payload: []byte(`{"seq":1}`)}}) {
		t.Error("a push whose delivery panicked reported the messages taken")
	}
	if err := <-ended; !panics.Is(err) || !strings.Contains(err.Error(), "deliver bug") {
		t.Fatalf("end error %v", err)
	}
	if src.push([]*api.Message{{Payload: []byte(`{"seq":2}`)}}) {
		t.Error("a push after the panic was taken")
	}
	if err := sub.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}
