package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"strings"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/checkpoint"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/format"
	"github.com/rekuiper/rekuiper/internal/guard"
	"github.com/rekuiper/rekuiper/internal/output"
	"github.com/rekuiper/rekuiper/internal/panics"
	"github.com/rekuiper/rekuiper/internal/payload"
	"github.com/rekuiper/rekuiper/internal/row"
	"github.com/rekuiper/rekuiper/internal/rule"
	"github.com/rekuiper/rekuiper/internal/runtime"
	"github.com/rekuiper/rekuiper/internal/sinkcache"
	"github.com/rekuiper/rekuiper/internal/stream"
)

// sinkNode adapts a connector sink to the runtime: it shapes each emission
// into messages (sendSingle, dataTemplate, fields, format ...) and writes
// them in order.
type sinkNode struct {
	name   string
	typ    string
	sink   api.Sink
	shaper *output.Shaper
	// transform compresses and encrypts each payload (nil: neither).
	transform *payload.Transformer
	cache     *sinkcache.Cache // set when enableCache is on
	// conn reports the connector's connection, when it tracks one.
	conn   stream.ConnStatus
	logger *slog.Logger
	// fail stops the rule after a panic in the sink cache's goroutine; set
	// by Start before the sink is connected.
	fail func(*panics.Error)
	// slots is set when emissions in slots are encoded straight into the
	// shaper's buffer: the shaper can (SlotsOK), nothing transforms or
	// caches the payload, and the connector reads only payloads and keeps
	// none (api.PayloadOnly).
	slots bool
	// batcher is the connector sink when it holds its writes until the
	// end of each batch (connector.Batcher); nil otherwise.
	batcher connector.Batcher
}

// PerRow: with sendSingle the sink's records count rows (runtime.PerRowSink).
func (s *sinkNode) PerRow() bool { return s.shaper != nil && s.shaper.SendSingle() }

func (s *sinkNode) panicked(e *panics.Error) {
	if s.fail != nil {
		s.fail(e)
	}
}

var (
	_ runtime.Sink       = (*sinkNode)(nil)
	_ runtime.Flusher    = (*sinkNode)(nil)
	_ runtime.SlotSink   = (*sinkNode)(nil)
	_ runtime.BatchEnder = (*sinkNode)(nil)
	_ runtime.InlineSink = (*sinkNode)(nil)
)

// Inline reports whether the rule's operator goroutine may deliver to this
// sink itself (runtime.InlineSink): the connector holds its writes for the
// batch (connector.Batcher) and takes payloads encoded from slots without
// keeping them (a fixed-topic qos 0 mqtt sink), so a write only appends to
// its connection's buffer.
func (s *sinkNode) Inline() bool { return s.batcher != nil && s.slots }

// EndBatch sends what the connector held back during the batch.
func (s *sinkNode) EndBatch() error {
	if s.batcher == nil {
		return nil
	}
	if err := s.batcher.EndBatch(); err != nil {
		return fmt.Errorf("sink %s: %w", s.name, err)
	}
	return nil
}

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
		if s.transform != nil {
			if m.Payload, err = s.transform.Apply(m.Payload); err != nil {
				return fmt.Errorf("sink %s: %w", s.name, err)
			}
		}
		if err := s.write(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

// CollectSlots is Collect for an emission in slots: encoded straight into
// a reused buffer when the sink allows (see sinkNode.slots), else shaped
// from the rows' maps.
func (s *sinkNode) CollectSlots(ctx context.Context, rows *row.SlotRows) error {
	if !s.slots {
		return s.Collect(ctx, rows.Maps())
	}
	err := s.shaper.ShapeSlots(rows, func(m *api.SinkMessage) error { return s.write(ctx, m) })
	var werr writeError
	if err != nil && !errors.As(err, &werr) {
		return fmt.Errorf("shape output for sink %s: %w", s.name, err)
	}
	return err
}

// writeError is a connector's write failure, wrapped with the sink's name.
type writeError struct{ error }

func (e writeError) Unwrap() error { return e.error }

func (s *sinkNode) write(ctx context.Context, m *api.SinkMessage) error {
	if err := s.sink.Write(ctx, m); err != nil {
		if errors.Is(err, api.ErrRetryable) {
			return writeError{fmt.Errorf("sink %s (retryable): %w", s.name, err)}
		}
		return writeError{fmt.Errorf("sink %s: %w", s.name, err)}
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

// transactional is what Kafka and SQL sinks implement at qos 2.
type transactional interface {
	PreCommit(ctx context.Context, id uint64) error
	Commit(ctx context.Context, id uint64) error
}

// PreCommit flushes a transactional sink's open transaction at barrier id;
// other sinks are flushed.
func (s *sinkNode) PreCommit(ctx context.Context, id uint64) error {
	if t, ok := s.sink.(transactional); ok {
		return t.PreCommit(ctx, id)
	}
	return s.Flush(ctx)
}

// CheckpointCommitted commits a transactional sink's transaction once the
// checkpoint is durable (checkpoint.Committer).
func (s *sinkNode) CheckpointCommitted(cp *checkpoint.Checkpoint) error {
	if t, ok := s.sink.(transactional); ok {
		if err := t.Commit(context.Background(), cp.ID); err != nil {
			return fmt.Errorf("commit sink %s for checkpoint %d: %w", s.name, cp.ID, err)
		}
	}
	return nil
}

// buildSink validates an action and constructs its sink (not connected),
// wrapped in the sink cache when enableCache is on.
func (rn *Engine) buildSink(ruleID string, qos rule.QoS, index int, typ string, action map[string]any, state api.State) (*sinkNode, error) {
	entry, ok := rn.cfg.Registry.Sink(typ)
	if !ok {
		return nil, fmt.Errorf("action %d: %w: sink %q", index, connector.ErrUnknownType, typ)
	}
	props, err := rn.sinkProps(typ, action)
	if err != nil {
		return nil, fmt.Errorf("action %d: %w", index, err)
	}
	shaperProps := props
	if entry.Spec.Has(output.PropHasHeader) {
		// The sink writes the header once per file itself (the file
		// sink); the encoder must not repeat it in every payload.
		shaperProps = maps.Clone(props)
		delete(shaperProps, output.PropHasHeader)
	}
	shaper, err := output.NewShaperWith(shaperProps, rn.cfg.Schemas)
	if err != nil {
		return nil, fmt.Errorf("action %d (%s): %w", index, typ, err)
	}
	transform, err := payloadTransform(entry.Spec, typ, props, rn.cfg.Deps.AESKey)
	if err != nil {
		return nil, fmt.Errorf("action %d (%s): %w", index, typ, err)
	}
	name := fmt.Sprintf("%s_%d", typ, index)
	cacheBase := sinkcache.FromDefaults(rn.cfg.SinkDefaults)
	cacheBase.Dir = filepath.Join(rn.cfg.Paths.Data, "cache", guard.PathElem(ruleID), guard.PathElem(name))
	cacheCfg, err := cacheBase.WithProps(props) // validates
	if err != nil {
		return nil, fmt.Errorf("action %d (%s): %w", index, typ, err)
	}
	if transform != nil && cacheCfg.EnableCache && cacheCfg.ResendIndicatorField != "" {
		// Replays re-encode the rows with the indicator field as JSON.
		return nil, fmt.Errorf("action %d (%s): resendIndicatorField cannot be combined with compression or encryption", index, typ)
	}
	if qos.Aligned() && entry.Spec.Has("transactionalID") {
		if _, set := props["transactionalID"]; !set {
			// Exactly once end to end: the sink writes in transactions
			// committed with the rule's checkpoints.
			props["transactionalID"] = "rekuiper-" + ruleID + "-" + name
		}
	}
	deps := rn.cfg.Deps
	deps.State = state
	newSink := func(p map[string]any) (api.Sink, error) {
		valid, err := entry.Spec.Validate(p)
		if err != nil {
			return nil, err
		}
		return entry.New(valid, deps)
	}
	sink, err := newSink(props)
	if err != nil {
		return nil, fmt.Errorf("action %d (%s): %w", index, typ, err)
	}
	node := &sinkNode{name: name, typ: typ, sink: sink, shaper: shaper, transform: transform, logger: rn.cfg.Logger}
	node.conn, _ = sink.(stream.ConnStatus)
	if !cacheCfg.EnableCache {
		po, ok := sink.(api.PayloadOnly)
		node.slots = ok && po.PayloadOnly() && transform == nil && shaper.SlotsOK()
		if b, ok := sink.(connector.Batcher); ok {
			// The rule's sink goroutine ends every batch (runtime.BatchEnder).
			b.HoldWrites()
			node.batcher = b
		}
		return node, nil
	}
	cdeps := sinkcache.Deps{Clock: rn.cfg.Clock, Logger: rn.cfg.Logger, Reshape: reshape, OnPanic: node.panicked}
	if cacheCfg.ResendAlterQueue && cacheCfg.ResendDestination != "" {
		alt, err := newSink(withDestination(props, cacheCfg.ResendDestination))
		if err != nil {
			return nil, fmt.Errorf("action %d (%s): resendDestination: %w", index, typ, err)
		}
		cdeps.Alternate = alt
	}
	cache, err := sinkcache.Wrap(sink, cacheCfg, cdeps)
	if err != nil {
		return nil, fmt.Errorf("action %d (%s): %w", index, typ, err)
	}
	node.sink, node.cache = cache, cache
	return node, nil
}

// payloadTransform returns what compresses and encrypts an action's
// payloads: its compression and encryption properties, except those the
// connector declares and applies itself (the file sink's stream, Kafka's
// batch compression). Sinks that write rows refuse both.
func payloadTransform(spec connector.Spec, typ string, props map[string]any, key []byte) (*payload.Transformer, error) {
	var methods [2]string
	for i, name := range []string{"compression", "encryption"} {
		v, ok := props[name]
		if !ok || v == nil || v == "" {
			continue
		}
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("sink property %s: must be a string, got %T", name, v)
		}
		if spec.WritesRows {
			return nil, fmt.Errorf("sink property %s: the %s sink writes rows, not encoded payloads; %s does not apply", name, typ, name)
		}
		if !spec.Has(name) {
			methods[i] = strings.ToLower(s)
		}
	}
	return payload.NewTransformer(methods[0], methods[1], key)
}

// withDestination points a copy of a sink's properties at the replay
// destination: its topic, URL or table, whichever the sink has.
func withDestination(props map[string]any, dest string) map[string]any {
	out := make(map[string]any, len(props))
	for k, v := range props {
		out[k] = v
	}
	for _, key := range []string{"topic", "url", "table", "channel", "key", "path"} {
		if _, ok := out[key]; ok {
			out[key] = dest
			return out
		}
	}
	out["topic"] = dest
	return out
}

// reshape re-encodes a replayed message's rows after the resend indicator
// field was added: an array payload stays an array, an object payload (one
// row, sendSingle) stays an object.
func reshape(m *api.SinkMessage) (*api.SinkMessage, error) {
	var v any = m.Rows
	if len(m.Payload) > 0 && m.Payload[0] == '{' && len(m.Rows) == 1 {
		v = m.Rows[0]
	}
	b, err := format.AppendJSON(nil, v)
	if err != nil {
		return nil, err
	}
	out := *m
	out.Payload = b
	return &out, nil
}
