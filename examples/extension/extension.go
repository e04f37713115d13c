// Package extension is an example rekuiper extension: a rewindable source
// and a sink that keeps user state. Both are plain implementations of the
// public api package; register them on the daemon's connector registry
// (connector.Registry.RegisterSource / RegisterSink) in your own build.
//
// The source, "ticker", emits {"n": 1}, {"n": 2}, ... . It is Rewindable:
// its offset is the next number, so after a crash the engine rewinds it to
// the offset of the last checkpoint and nothing is skipped or counted twice.
//
// The sink, "tally", counts the rows it delivered in the rule's user state
// (api.State). The state is part of the rule's checkpoints, so the tally
// survives restarts together with the rule's windows.
package extension

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/rekuiper/rekuiper/api"
)

// Ticker is a rewindable source of increasing numbers, up to Limit (then
// io.EOF-free: it simply blocks, like a quiet device).
type Ticker struct {
	Limit int64
	next  int64
}

var (
	_ api.Source     = (*Ticker)(nil)
	_ api.Rewindable = (*Ticker)(nil)
)

// Connect has nothing to connect to.
func (t *Ticker) Connect(context.Context) error {
	if t.next == 0 {
		t.next = 1
	}
	return nil
}

// Read returns the next number, or blocks until ctx ends after Limit.
func (t *Ticker) Read(ctx context.Context) (*api.Message, error) {
	if t.Limit > 0 && t.next > t.Limit {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	n := t.next
	t.next++
	return &api.Message{Data: map[string]any{"n": n}}, nil
}

// Close does nothing.
func (t *Ticker) Close(context.Context) error { return nil }

type tickerOffset struct {
	V    int   `json:"v"`
	Next int64 `json:"next"`
}

// Offset is the next number to emit, versioned.
func (t *Ticker) Offset() ([]byte, error) { return json.Marshal(tickerOffset{V: 1, Next: t.next}) }

// Rewind resumes at an offset; calling it twice with the same offset is the
// same as calling it once.
func (t *Ticker) Rewind(b []byte) error {
	var o tickerOffset
	if err := json.Unmarshal(b, &o); err != nil || o.V != 1 {
		return fmt.Errorf("ticker: bad offset %q", b)
	}
	t.next = o.Next
	return nil
}

// Tally is a sink that counts delivered rows in user state.
type Tally struct {
	State api.State
	// Deliver receives each message with the running tally.
	Deliver func(msg *api.SinkMessage, tally int64)
}

var _ api.Sink = (*Tally)(nil)

// Connect has nothing to connect to.
func (s *Tally) Connect(context.Context) error { return nil }

// Write adds the message's rows to the tally and hands both on.
func (s *Tally) Write(_ context.Context, msg *api.SinkMessage) error {
	n, err := s.State.Increment("rows", int64(len(msg.Rows)))
	if err != nil {
		return fmt.Errorf("tally: %w", err)
	}
	if s.Deliver != nil {
		s.Deliver(msg, n)
	}
	return nil
}

// Close does nothing.
func (s *Tally) Close(context.Context) error { return nil }
