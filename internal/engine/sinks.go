package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/output"
	"github.com/rekuiper/rekuiper/internal/runtime"
)

// sinkNode adapts a connector sink to the runtime: it shapes each emission
// into messages (sendSingle, dataTemplate, fields, format ...) and writes
// them in order.
type sinkNode struct {
	name   string
	typ    string
	sink   api.Sink
	shaper *output.Shaper
}

var (
	_ runtime.Sink    = (*sinkNode)(nil)
	_ runtime.Flusher = (*sinkNode)(nil)
)

func (s *sinkNode) Name() string { return s.name }

// Collect shapes and writes one emission. A write error stops the emission
// at that message and is reported (counted by the runtime); retrying is the
// sink cache's job.
func (s *sinkNode) Collect(ctx context.Context, rows []map[string]any) error {
	msgs, err := s.shaper.Shape(rows)
	if err != nil {
		return fmt.Errorf("shape output for sink %s: %w", s.name, err)
	}
	for _, m := range msgs {
		if err := s.sink.Write(ctx, m); err != nil {
			if errors.Is(err, api.ErrRetryable) {
				return fmt.Errorf("sink %s (retryable): %w", s.name, err)
			}
			return fmt.Errorf("sink %s: %w", s.name, err)
		}
	}
	return nil
}

// Flush waits for pipelined writes when the connector pipelines.
func (s *sinkNode) Flush(ctx context.Context) error {
	if f, ok := s.sink.(runtime.Flusher); ok {
		return f.Flush(ctx)
	}
	return nil
}

// buildSink validates an action and constructs its sink (not connected).
func (rn *Runner) buildSink(index int, typ string, action map[string]any, state api.State) (*sinkNode, error) {
	entry, ok := rn.Registry.Sink(typ)
	if !ok {
		return nil, fmt.Errorf("action %d: %w: sink %q", index, connector.ErrUnknownType, typ)
	}
	props, err := rn.sinkProps(typ, action)
	if err != nil {
		return nil, fmt.Errorf("action %d: %w", index, err)
	}
	shaper, err := output.NewShaper(props)
	if err != nil {
		return nil, fmt.Errorf("action %d (%s): %w", index, typ, err)
	}
	valid, err := entry.Spec.Validate(props)
	if err != nil {
		return nil, fmt.Errorf("action %d (%s): %w", index, typ, err)
	}
	deps := rn.Deps
	deps.State = state
	sink, err := entry.New(valid, deps)
	if err != nil {
		return nil, fmt.Errorf("action %d (%s): %w", index, typ, err)
	}
	return &sinkNode{name: fmt.Sprintf("%s_%d", typ, index), typ: typ, sink: sink, shaper: shaper}, nil
}
