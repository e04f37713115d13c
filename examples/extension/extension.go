// Package extension is an example rekuiper extension module, built into a
// custom kuiperd with
//
//	kuiper build --with example.com/rekuiper-extension=./examples/extension -o kuiperd
//
// It registers three things (see Register):
//
//   - source "ticker": emits {"n": 1}, {"n": 2}, ... up to its "limit"
//     property. It is Rewindable: its offset is the next number, so after a
//     crash the engine rewinds it to the last checkpoint and nothing is
//     skipped or counted twice.
//   - sink "tally": appends each row, with the running count of delivered
//     rows, as a JSON line to the file of its "path" property. The count is
//     kept in the rule's user state (api.State), which is part of the
//     rule's checkpoints, so it survives restarts with the rule's windows.
//   - function "label(n, prefix)": prefix followed by n; the engine checks
//     at rule creation that prefix is a string literal.
package extension

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/sdk"
)

// Register adds the source, the sink and the function to a daemon.
func Register(r *sdk.Registry) error {
	err := r.RegisterSource("ticker", sdk.Spec{Props: []sdk.Prop{
		{Name: "limit", Type: sdk.TypeInt, Default: 0, Doc: "last number emitted; 0 means no end"},
	}}, func(p map[string]any, _ sdk.Deps) (api.Source, error) {
		limit := p["limit"].(int64)
		if limit < 0 {
			return nil, fmt.Errorf("ticker: limit %d is negative", limit)
		}
		return &Ticker{Limit: limit}, nil
	})
	if err != nil {
		return err
	}
	err = r.RegisterSink("tally", sdk.Spec{Props: []sdk.Prop{
		{Name: "path", Type: sdk.TypeString, Required: true, Doc: "file the rows are appended to, one JSON object a line"},
	}}, func(p map[string]any, d sdk.Deps) (api.Sink, error) {
		if d.State == nil {
			return nil, errors.New("tally: needs the rule's user state")
		}
		return &Tally{Path: p["path"].(string), State: d.State}, nil
	})
	if err != nil {
		return err
	}
	return r.RegisterScalar("label", sdk.FuncSpec{MinArgs: 2, MaxArgs: 2, Check: func(args []sdk.Arg) error {
		if _, ok := args[1].Value.(string); !ok {
			return fmt.Errorf("label: prefix must be a string literal, got %s", args[1].SQL)
		}
		return nil
	}}, func(_ sdk.FuncContext, args []any) (any, error) {
		return fmt.Sprint(args[1], args[0]), nil
	})
}

// Ticker is a rewindable source of increasing numbers, up to Limit (then it
// blocks, like a quiet device).
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

// Tally is a sink that counts delivered rows in user state and appends
// them, with the count, to a file.
type Tally struct {
	Path  string
	State api.State

	mu sync.Mutex
	f  *os.File
}

var _ api.Sink = (*Tally)(nil)

// Connect opens the file for appending.
func (s *Tally) Connect(context.Context) error {
	f, err := os.OpenFile(s.Path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("tally: %w", err)
	}
	s.mu.Lock()
	s.f = f
	s.mu.Unlock()
	return nil
}

// Write appends the message's rows with the running tally.
func (s *Tally) Write(_ context.Context, msg *api.SinkMessage) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return api.Retryable(errors.New("tally: not connected"))
	}
	for _, row := range msg.Rows {
		n, err := s.State.Increment("tally.rows", 1)
		if err != nil {
			return fmt.Errorf("tally: %w", err)
		}
		b, err := json.Marshal(map[string]any{"row": row, "tally": n})
		if err != nil {
			return fmt.Errorf("tally: %w", err)
		}
		if _, err := s.f.Write(append(b, '\n')); err != nil {
			return api.Retryable(fmt.Errorf("tally: %w", err))
		}
	}
	return nil
}

// Close closes the file; it works after a failed Connect.
func (s *Tally) Close(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	return err
}
