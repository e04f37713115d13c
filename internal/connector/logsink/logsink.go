// Package logsink provides the log sink, which writes every result to the
// daemon's logger at info level. It is meant for debugging rules.
package logsink

import (
	"context"
	"errors"
	"log/slog"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/connector"
)

// Type is the connector type name.
const Type = "log"

// Spec is the log sink's property spec: it has no properties of its own.
func Spec() connector.Spec { return connector.Spec{} }

// Register adds the log sink to r.
func Register(r *connector.Registry) error {
	return r.RegisterSink(Type, Spec(), New)
}

// Sink logs each message's payload. It starts no goroutines, never fails a
// Write, and holds nothing that needs closing.
type Sink struct{ logger *slog.Logger }

var _ api.Sink = (*Sink)(nil)

// New builds a log sink writing to deps.Logger.
func New(_ map[string]any, deps connector.Deps) (api.Sink, error) {
	if deps.Logger == nil {
		return nil, errors.New("logger not available")
	}
	return &Sink{logger: deps.Logger}, nil
}

// Connect does nothing.
func (s *Sink) Connect(context.Context) error { return nil }

// Write logs msg.Payload as a string at info level, with the row count and
// whether the message was resent from the sink cache.
func (s *Sink) Write(ctx context.Context, msg *api.SinkMessage) error {
	s.logger.LogAttrs(ctx, slog.LevelInfo, "sink result",
		slog.String("payload", string(msg.Payload)),
		slog.Int("rows", len(msg.Rows)),
		slog.Bool("resent", msg.Resent))
	return nil
}

// Close does nothing.
func (s *Sink) Close(context.Context) error { return nil }
