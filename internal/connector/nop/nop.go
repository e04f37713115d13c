// Package nop provides the nop sink, which discards every result (for
// benchmarks and tests), optionally logging it.
package nop

import (
	"context"
	"log/slog"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/connector"
)

// Type is the connector type name.
const Type = "nop"

// Spec is the nop sink's property spec.
func Spec() connector.Spec {
	return connector.Spec{Props: []connector.Prop{
		{Name: "log", Type: connector.TypeBool, Default: false, Doc: "log each discarded payload at info level"},
	}}
}

// Register adds the nop sink to r.
func Register(r *connector.Registry) error {
	return r.RegisterSink(Type, Spec(), New)
}

// Sink discards messages. It starts no goroutines, never fails a Write, and
// holds nothing that needs closing.
type Sink struct {
	logger *slog.Logger
	count  int64
}

var (
	_ api.Sink        = (*Sink)(nil)
	_ api.PayloadOnly = (*Sink)(nil)
)

// New builds a nop sink. With log=true it logs to deps.Logger (when set).
func New(props map[string]any, deps connector.Deps) (api.Sink, error) {
	s := &Sink{}
	if connector.Get[bool](props, "log") {
		s.logger = deps.Logger
	}
	return s, nil
}

// Connect does nothing.
func (s *Sink) Connect(context.Context) error { return nil }

// Write counts msg and, with log=true, logs its payload.
func (s *Sink) Write(ctx context.Context, msg *api.SinkMessage) error {
	s.count++
	if s.logger != nil {
		s.logger.LogAttrs(ctx, slog.LevelInfo, "nop sink", slog.String("payload", string(msg.Payload)))
	}
	return nil
}

// PayloadOnly reports true: Write reads only the payload and keeps nothing.
func (s *Sink) PayloadOnly() bool { return true }

// Count returns how many messages were written. Like Write, it must be
// called from the sink's owner goroutine.
func (s *Sink) Count() int64 { return s.count }

// Close does nothing.
func (s *Sink) Close(context.Context) error { return nil }
