package mqtt

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/output"
	"github.com/rekuiper/rekuiper/internal/value"
)

// SinkSpec is the mqtt sink's property spec.
func SinkSpec() connector.Spec {
	props := []connector.Prop{
		{Name: "topic", Type: connector.TypeString, Required: true, Target: true, Doc: "topic; a text/template such as alerts/{{.deviceId}} is rendered per row"},
		{Name: "qos", Type: connector.TypeInt, Default: int64(0), Enum: []any{int64(0), int64(1), int64(2)}},
		{Name: "retained", Type: connector.TypeBool, Default: false},
		{Name: "properties", Type: connector.TypeMap, Doc: "MQTT 5 user properties"},
		{Name: "maxInflight", Type: connector.TypeInt, Default: int64(defaultMaxInflight), Max: 65535, Doc: "QoS 1/2 publishes awaiting acknowledgement before Write blocks"},
	}
	return connector.Spec{Props: append(props, connProps()...), Ping: true}
}

// ErrNotConnected is returned (wrapped retryable) by Write while the broker
// connection is down.
var ErrNotConnected = errors.New("mqtt broker not connected")

// Sink publishes each SinkMessage.Payload. Publishing is pipelined: at QoS
// 0 Write returns once the message is written to the connection; at QoS 1
// and 2 Write returns once the publish is handed to the client, with up to
// maxInflight publishes awaiting acknowledgement (Write blocks for the
// oldest beyond that). A publish that fails for a transient reason
// (connection lost) is published again before the next message, so
// delivery is at least once; Flush waits until every publish is
// acknowledged. Failure classes: broker down or connection lost are
// api.Retryable (the message of that Write was not taken); a topic template
// that cannot render and a broker refusal (MQTT 5 reason code >= 0x80) are
// permanent. Write, Flush and Close are called from one goroutine.
type Sink struct {
	pool     *Pool
	cfg      connConfig
	topic    *output.PropTemplate
	qos      byte
	retained bool
	user     map[string]string
	window   int
	logger   *slog.Logger

	conn     *conn
	hold     bool // HoldWrites was called: qos 0 publishes wait for EndBatch
	inflight []flight
	redo     []outbound
	errs     []error // permanent failures of earlier publishes
}

type flight struct {
	msg outbound
	p   pending
	tr  transport
}

var (
	_ api.Sink          = (*Sink)(nil)
	_ api.PayloadOnly   = (*Sink)(nil)
	_ connector.Batcher = (*Sink)(nil)
)

// NewSink builds a sink from validated props; no network I/O.
func NewSink(pool *Pool, props map[string]any, deps connector.Deps) (*Sink, error) {
	cfg, err := pool.resolve(props)
	if err != nil {
		return nil, err
	}
	topic, err := output.NewPropTemplate("topic", connector.Get[string](props, "topic"))
	if err != nil {
		return nil, err
	}
	s := &Sink{pool: pool, cfg: cfg, topic: topic, qos: byte(connector.Get[int64](props, "qos")),
		retained: connector.Get[bool](props, "retained"), window: int(connector.Get[int64](props, "maxInflight")),
		logger: deps.Logger}
	if s.window < 1 {
		s.window = 1
	}
	if s.logger == nil {
		s.logger = pool.logger
	}
	if up := connector.Get[map[string]any](props, "properties"); len(up) > 0 {
		if cfg.version != 5 {
			return nil, errors.New("property properties: user properties need protocolVersion 5")
		}
		s.user = make(map[string]string, len(up))
		for k, v := range up {
			s.user[k] = value.ToString(v)
		}
	}
	return s, nil
}

// Connect joins the pooled sink connection. Like the source, an unreachable
// broker is not an error (Write returns retryable errors until it is up);
// TLS and credential failures are.
func (s *Sink) Connect(ctx context.Context) error {
	if s.conn != nil {
		return nil
	}
	c := s.pool.acquire(s.cfg, "sink")
	c.start()
	if err := c.waitFirst(ctx); err != nil {
		s.pool.release(c)
		return fmt.Errorf("connect to %s: %w", s.cfg.describe(), err)
	}
	s.conn = c
	return nil
}

// Write publishes msg.Payload to the rendered topic.
func (s *Sink) Write(ctx context.Context, msg *api.SinkMessage) error {
	if s.conn == nil {
		return errors.New("mqtt sink not connected")
	}
	topic, err := s.renderTopic(msg)
	if err != nil {
		return err
	}
	s.reap()
	if err := s.takeErrs(); err != nil {
		return err
	}
	if err := s.resend(ctx); err != nil {
		return err
	}
	out := outbound{topic: topic, qos: s.qos, retained: s.retained, payload: msg.Payload, user: s.user,
		hold: s.hold && s.qos == 0}
	return s.send(ctx, out)
}

// HoldWrites makes qos 0 publishes wait in the connection's buffer until
// EndBatch (connector.Batcher): the batch leaves in one write on the
// caller's goroutine, instead of waking the connection's flusher for every
// publish.
func (s *Sink) HoldWrites() { s.hold = true }

// EndBatch writes the publishes held since the last EndBatch.
func (s *Sink) EndBatch() error {
	if s.conn == nil {
		return nil
	}
	if tr := s.conn.current(); tr != nil {
		return tr.release()
	}
	return nil
}

// PayloadOnly reports whether Write reads only the payload and keeps
// nothing (api.PayloadOnly): with a fixed topic at qos 0, where a publish
// is written before Write returns and never resent.
func (s *Sink) PayloadOnly() bool { return s.topic.Static() && s.qos == 0 }

func (s *Sink) renderTopic(msg *api.SinkMessage) (string, error) {
	if s.topic.Static() {
		return s.topic.String(), nil
	}
	if len(msg.Rows) != 1 {
		return "", fmt.Errorf("property topic: a template needs exactly one row per message (got %d); set sendSingle", len(msg.Rows))
	}
	t, err := s.topic.Render(msg.Rows[0])
	if err != nil {
		return "", err
	}
	if t == "" {
		return "", errors.New("property topic: template rendered an empty topic")
	}
	return t, nil
}

// send publishes out, waiting for window room first.
func (s *Sink) send(ctx context.Context, out outbound) error {
	for len(s.inflight) >= s.window {
		if err := s.waitOldest(ctx); err != nil {
			return api.Retryable(err)
		}
	}
	tr := s.conn.current()
	if tr == nil {
		return api.Retryable(fmt.Errorf("publish to %s: %w", out.topic, ErrNotConnected))
	}
	p := tr.publish(out)
	if out.qos == 0 {
		if err := waitChan(ctx, p.Done()); err != nil {
			return api.Retryable(err)
		}
		if err := p.Error(); err != nil {
			return s.classify(out, err)
		}
		return nil
	}
	s.inflight = append(s.inflight, flight{msg: out, p: p, tr: tr})
	return nil
}

func (s *Sink) classify(out outbound, err error) error {
	err = fmt.Errorf("publish to %s: %w", out.topic, err)
	if errors.Is(err, errPermanent) {
		return err
	}
	return api.Retryable(err)
}

// reap collects completed publishes from the head of the window.
func (s *Sink) reap() {
	for len(s.inflight) > 0 {
		f := s.inflight[0]
		select {
		case <-f.p.Done():
			s.settle(f)
		case <-f.tr.dead():
			s.abandon(f)
		default:
			return
		}
		s.inflight = s.inflight[1:]
	}
}

func (s *Sink) waitOldest(ctx context.Context) error {
	f := s.inflight[0]
	select {
	case <-f.p.Done():
		s.settle(f)
	case <-f.tr.dead():
		s.abandon(f)
	case <-ctx.Done():
		return ctx.Err()
	}
	s.inflight = s.inflight[1:]
	return nil
}

// abandon handles a publish whose connection is gone: unless it completed
// after all, it is published again on the next connection.
func (s *Sink) abandon(f flight) {
	select {
	case <-f.p.Done():
		s.settle(f)
	default:
		s.redo = append(s.redo, f.msg)
	}
}

// settle records the outcome of a completed publish.
func (s *Sink) settle(f flight) {
	err := f.p.Error()
	if err == nil {
		return
	}
	if errors.Is(err, errPermanent) {
		s.logger.Error("mqtt publish refused", slog.String("topic", f.msg.topic), slog.String("error", err.Error()))
		s.errs = append(s.errs, fmt.Errorf("publish to %s: %w", f.msg.topic, err))
		return
	}
	s.redo = append(s.redo, f.msg)
}

func (s *Sink) takeErrs() error {
	if len(s.errs) == 0 {
		return nil
	}
	err := errors.Join(s.errs...)
	s.errs = nil
	return err
}

// resend publishes again the messages whose earlier publish failed.
func (s *Sink) resend(ctx context.Context) error {
	for len(s.redo) > 0 {
		if err := s.send(ctx, s.redo[0]); err != nil {
			return err
		}
		s.redo = s.redo[1:]
	}
	return nil
}

// Flush waits until every publish is acknowledged, publishing again those
// that failed. It returns a retryable error while the broker is down, and
// the permanent failures collected since the last Write or Flush.
func (s *Sink) Flush(ctx context.Context) error {
	if s.conn == nil {
		return nil
	}
	_ = s.EndBatch() // a write error shows in the next publish
	for {
		for len(s.inflight) > 0 {
			if err := s.waitOldest(ctx); err != nil {
				return api.Retryable(err)
			}
		}
		if len(s.redo) == 0 {
			return s.takeErrs()
		}
		if err := s.resend(ctx); err != nil {
			return err
		}
	}
}

// Close flushes within ctx and releases the connection. Publishes still
// unacknowledged when ctx ends are logged as lost.
func (s *Sink) Close(ctx context.Context) error {
	if s.conn == nil {
		return nil
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
	}
	err := s.Flush(ctx)
	if n := len(s.inflight) + len(s.redo); n > 0 {
		s.logger.Warn("mqtt sink closed with unacknowledged publishes", slog.Int("count", n))
	}
	s.inflight, s.redo = nil, nil
	s.pool.release(s.conn)
	s.conn = nil
	if err != nil && !errors.Is(err, api.ErrRetryable) {
		return err
	}
	return nil
}

// Status reports the connection state as Source.Status does.
func (s *Sink) Status() (state string, lastConnected, lastDisconnected time.Time, lastErr string) {
	if s.conn == nil {
		return StateDisconnected, time.Time{}, time.Time{}, ""
	}
	return s.conn.status()
}
