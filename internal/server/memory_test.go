package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/client"
	"github.com/rekuiper/rekuiper/internal/connector/membus"
	"github.com/rekuiper/rekuiper/internal/server"
)

func TestMemoryEvents(t *testing.T) {
	bus := membus.New()
	s := newServerWith(t, t.TempDir(), func(o *server.Options) { o.Memory = bus })
	s.run([]step{
		{"no topic", "GET", "/memory/events", "", 400, "topic is required"},
		{"bad filter", "GET", "/memory/events?topic=a/%23/b", "", 400, "topic"},
	})
	c := client.New(s.url, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got := make(chan string, 10)
	done := make(chan error, 1)
	go func() {
		done <- c.Events(ctx, "/memory/events?topic=q/%2B", func(event, data string) { got <- event + "|" + data })
	}()
	// Publish until the stream is subscribed and delivers: the first rows
	// may go out before the subscription exists.
	for first := ""; first == ""; {
		if err := bus.Publish(ctx, membus.Message{Topic: "q/1", Data: map[string]any{"a": 1}}); err != nil {
			t.Fatal(err)
		}
		select {
		case first = <-got:
			if first != `|{"a":1}` {
				t.Fatalf("event %q", first)
			}
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			t.Fatal("no event from the stream")
		}
	}
	if err := bus.Publish(ctx, membus.Message{Topic: "other", Data: map[string]any{"x": 1}}); err != nil {
		t.Fatal(err)
	}
	if err := bus.Publish(ctx, membus.Message{Topic: "q/2", Data: map[string]any{"b": "two"}}); err != nil {
		t.Fatal(err)
	}
	for {
		e := <-got
		if e == `|{"a":1}` { // more of the warm-up rows
			continue
		}
		if e != `|{"b":"two"}` {
			t.Fatalf("event %q, want the q/2 row (the other topic is filtered out)", e)
		}
		break
	}
	// Rows published together arrive as one event, a JSON array.
	if err := bus.Publish(ctx, membus.Message{Topic: "q/3", Rows: []map[string]any{{"v": 1}, {"v": 2}}}); err != nil {
		t.Fatal(err)
	}
	if e := <-got; e != `|[{"v":1},{"v":2}]` {
		t.Fatalf("event %q, want the two rows as one array", e)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("stream ended with %v", err)
	}
}
