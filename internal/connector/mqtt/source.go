package mqtt

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/connector"
)

// maxDecompressed bounds a decompressed payload (64 MiB).
const maxDecompressed = 64 << 20

// SourceSpec is the mqtt source's property spec.
func SourceSpec() connector.Spec {
	props := []connector.Prop{
		{Name: "datasource", Type: connector.TypeString, Required: true, Target: true, Doc: "topic filters, comma-separated; + and # wildcards; $share/group/filter"},
		{Name: "qos", Type: connector.TypeInt, Default: int64(1), Enum: []any{int64(0), int64(1), int64(2)}},
		{Name: "decompression", Type: connector.TypeString, Default: "", Enum: []any{"", "gzip", "zlib", "flate", "zstd"}, Doc: "decompress each payload before decoding"},
	}
	return connector.Spec{Props: append(props, connProps()...), Ping: true}
}

// Source subscribes to topic filters on a pooled connection. Connect
// registers the subscription and returns without waiting for the broker:
// when the broker is unreachable the connection keeps retrying in the
// background and Read blocks until messages arrive. Connect fails only for
// errors retrying cannot fix (TLS verification, refused credentials,
// refused subscription). For QoS 1 and 2 each Message carries Ack: the
// broker's acknowledgement is sent only when the engine calls it, so a
// message not acknowledged before a disconnect is redelivered by a
// persistent session. Read is called from one goroutine.
type Source struct {
	pool    *Pool
	cfg     connConfig
	filters map[string]byte
	decomp  string
	logger  *slog.Logger
	clock   clock.Clock

	push func([]*api.Message) bool
	free func() bool // see ReleaseWith

	conn *conn
	sub  *subscription
	// live is conn for Status and liveSub is sub for Dropped, which other
	// goroutines (rule status requests) call while Connect and Close run
	// on the read loop.
	live    atomic.Pointer[conn]
	liveSub atomic.Pointer[subscription]
}

var _ api.Source = (*Source)(nil)

// PushTo makes the source hand received messages to fn on the
// connection's reader instead of queueing them for Read (stream.Pusher).
// It must be called before Connect.
func (s *Source) PushTo(fn func([]*api.Message) bool) { s.push = fn }

// ReleaseWith lets the source reuse the memory of pushed payloads once
// free reports, right after a push, that nothing of it is referenced
// (stream.PayloadReleaser). It must be called before Connect.
func (s *Source) ReleaseWith(free func() bool) { s.free = free }

// NewSource builds a source from validated props. It loads TLS material but
// does no network I/O.
func NewSource(pool *Pool, props map[string]any, deps connector.Deps) (*Source, error) {
	cfg, err := pool.resolve(props)
	if err != nil {
		return nil, err
	}
	qos := byte(connector.Get[int64](props, "qos"))
	filters, err := parseFilters(connector.Get[string](props, "datasource"), qos)
	if err != nil {
		return nil, err
	}
	if qos > 0 {
		cfg = cfg.withDerivedSession(deps.SessionID, filters)
	}
	s := &Source{pool: pool, cfg: cfg, filters: filters, decomp: connector.Get[string](props, "decompression"),
		logger: deps.Logger, clock: deps.Clock}
	if s.logger == nil {
		s.logger = pool.logger
	}
	if s.clock == nil {
		s.clock = pool.clock
	}
	return s, nil
}

// parseFilters splits a comma-separated list of topic filters and checks
// each.
func parseFilters(list string, qos byte) (map[string]byte, error) {
	out := map[string]byte{}
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if err := checkFilter(f); err != nil {
			return nil, fmt.Errorf("property datasource: %w", err)
		}
		out[f] = qos
	}
	if len(out) == 0 {
		return nil, errors.New("property datasource: no topic")
	}
	return out, nil
}

// Connect joins the pooled connection and subscribes. ctx bounds only the
// wait for the first connection attempt.
func (s *Source) Connect(ctx context.Context) error {
	if s.conn != nil {
		return nil
	}
	c := s.pool.acquire(s.cfg, "source")
	sub := newSubscription(s.filters, s.decomp, s.pool.bufferLength, s.clock, s.logger)
	sub.push, sub.free = s.push, s.free
	if err := c.addSub(ctx, sub); err != nil {
		c.removeSub(sub)
		s.pool.release(c)
		return fmt.Errorf("subscribe on %s: %w", s.cfg.describe(), err)
	}
	c.start()
	if err := c.waitFirst(ctx); err != nil {
		sub.close(false)
		c.removeSub(sub)
		s.pool.release(c)
		return fmt.Errorf("connect to %s: %w", s.cfg.describe(), err)
	}
	s.conn, s.sub = c, sub
	s.live.Store(c)
	s.liveSub.Store(sub)
	return nil
}

// Read returns the next message, blocking until one arrives or ctx ends.
// After Drain it returns the messages still queued, then io.EOF.
func (s *Source) Read(ctx context.Context) (*api.Message, error) {
	if s.sub == nil {
		return nil, errors.New("mqtt source not connected")
	}
	if s.push != nil {
		return nil, errors.New("mqtt source pushes its messages; Read is not used")
	}
	select {
	case m := <-s.sub.ch:
		return m, nil
	case <-s.sub.drained:
		// Drain ran: what is queued, then the end.
		select {
		case m := <-s.sub.ch:
			return m, nil
		default:
			return nil, io.EOF
		}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close unsubscribes (unless the session is persistent) and releases the
// connection. Messages buffered but not read are acknowledged when the
// connection stays in use by other sources (so they do not stall it), and
// left unacknowledged otherwise (a persistent session redelivers them).
func (s *Source) Close(context.Context) error {
	if s.conn == nil {
		return nil
	}
	s.sub.close(s.pool.shared(s.conn))
	s.conn.removeSub(s.sub)
	s.pool.release(s.conn)
	s.conn = nil
	s.live.Store(nil)
	return nil
}

// Status reports the connection state: "connected" (once the broker
// acknowledged the subscription: the source receives), "connecting" or
// "disconnected", when it last connected and disconnected, and the last
// error text.
func (s *Source) Status() (state string, lastConnected, lastDisconnected time.Time, lastErr string) {
	c, sub := s.live.Load(), s.liveSub.Load()
	if c == nil || sub == nil {
		return StateDisconnected, time.Time{}, time.Time{}, ""
	}
	return c.subStatus(sub)
}

// subscription is one source's view of a connection.
type subscription struct {
	filters map[string]byte
	match   []string // filters without the $share/group/ prefix
	decomp  string
	clock   clock.Clock
	logger  *slog.Logger
	ch      chan *api.Message // Read's queue, without push

	// push, when set, takes batches of messages instead of ch. batch and
	// dirty belong to the connection's dispatch and flush (conn.recvMu).
	push  func([]*api.Message) bool
	batch []*api.Message
	dirty bool
	// free reports, right after push returned, whether nothing of the
	// messages pushed is referenced any more (nil: never). arenas are
	// the body arenas the batch's payloads lie in, marked kept unless
	// the push freed them; spare are message structs to reuse (push
	// keeps none). Same discipline as batch.
	free   func() bool
	arenas []*bodyArena
	spare  []*api.Message
	// held are the acknowledgements of batches push refused; close
	// sends them when the connection stays in use.
	heldMu sync.Mutex
	held   []func()

	// drops counts payloads that did not decompress; dropLog limits
	// their warnings to one per dropLogEvery.
	dropMu      sync.Mutex
	drops       int64
	lastDrop    string
	lastDropAt  time.Time
	lastDropLog time.Time
	unlogged    int64

	closeOnce sync.Once
	closed    chan struct{}
	// drained is closed by Source.Drain (drain.go). unsubscribed are the
	// filters Drain unsubscribed, which removeSub leaves alone; guarded
	// by the connection's mu.
	drainOnce    sync.Once
	drained      chan struct{}
	unsubscribed map[string]bool
	// received counts the messages delivered, unacked those of them not
	// yet acknowledged (Drain waits for both to settle).
	received   atomic.Int64
	unacked    atomic.Int64
	releaseAck atomic.Bool
	// meta is the metadata of the last message without a message id or
	// user properties (QoS 0): consecutive messages on one topic share it.
	// Metadata is read-only once delivered, so sharing is safe.
	meta atomic.Pointer[sharedMeta]
}

type sharedMeta struct {
	topic    string
	qos      byte
	retained bool
	m        map[string]any
}

func newSubscription(filters map[string]byte, decomp string, buf int, c clock.Clock, l *slog.Logger) *subscription {
	s := &subscription{filters: filters, decomp: decomp, clock: c, logger: l,
		ch: make(chan *api.Message, buf), closed: make(chan struct{}), drained: make(chan struct{})}
	for f := range filters {
		s.match = append(s.match, stripShare(f))
	}
	return s
}

func (s *subscription) matches(topic string) bool {
	for _, f := range s.match {
		if topicMatches(f, topic) {
			return true
		}
	}
	return false
}

// maxPushBatch bounds a batch handed to push.
const maxPushBatch = 128

// deliver converts m and queues it, blocking while the buffer is full, or,
// for a push subscription, adds it to the batch and returns true.
func (s *subscription) deliver(m inbound, ack func()) bool {
	payload := m.payload
	if s.decomp != "" {
		p, err := decompress(s.decomp, payload)
		if err != nil {
			s.dropped(m.topic, err)
			if ack != nil {
				ack()
			}
			return false
		}
		payload = p
	}
	var msg *api.Message
	if s.push != nil && len(s.spare) > 0 {
		msg = s.spare[len(s.spare)-1]
		s.spare = s.spare[:len(s.spare)-1]
	} else {
		msg = new(api.Message)
	}
	*msg = api.Message{Payload: payload, Meta: s.metadata(m), Time: s.clock.Now()}
	if ack != nil {
		var once sync.Once
		s.unacked.Add(1)
		msg.Ack = func() {
			once.Do(func() {
				ack()
				s.unacked.Add(-1)
			})
		}
	}
	s.received.Add(1)
	if s.push != nil {
		s.batch = append(s.batch, msg)
		if m.arena != nil && s.decomp == "" && (len(s.arenas) == 0 || s.arenas[len(s.arenas)-1] != m.arena) {
			s.arenas = append(s.arenas, m.arena)
		}
		return true
	}
	// Queued for Read: kept for as long as the reader pleases.
	m.arena.keep()
	select {
	case s.ch <- msg:
	case <-s.closed:
		if s.releaseAck.Load() && msg.Ack != nil {
			msg.Ack()
		}
	}
	return false
}

// dropLogEvery is the least time between two warnings about payloads that
// did not decompress; the ones in between are counted in the next warning.
const dropLogEvery = 10 * time.Second

// dropped counts a payload that did not decompress and logs it, at most
// once per dropLogEvery.
func (s *subscription) dropped(topic string, err error) {
	now := s.clock.Now()
	s.dropMu.Lock()
	s.drops++
	s.lastDrop, s.lastDropAt = fmt.Sprintf("topic %s: cannot decompress (%s): %v", topic, s.decomp, err), now
	logIt := s.lastDropLog.IsZero() || now.Sub(s.lastDropLog) >= dropLogEvery
	suppressed := s.unlogged
	if logIt {
		s.lastDropLog, s.unlogged = now, 0
	} else {
		s.unlogged++
	}
	s.dropMu.Unlock()
	if logIt {
		s.logger.Warn("mqtt message dropped: cannot decompress", slog.String("topic", topic),
			slog.String("error", err.Error()), slog.Int64("not_logged_since_last_warning", suppressed))
	}
}

// Dropped reports the payloads that did not decompress: how many, the last
// error and when (stream.DropReporter).
func (s *Source) Dropped() (int64, string, time.Time) {
	sub := s.liveSub.Load()
	if sub == nil {
		return 0, "", time.Time{}
	}
	sub.dropMu.Lock()
	defer sub.dropMu.Unlock()
	return sub.drops, sub.lastDrop, sub.lastDropAt
}

// flush hands the batch to push. A batch push refuses, or one gathered
// after close, is treated like messages buffered and not read at close.
func (s *subscription) flush() {
	if len(s.batch) == 0 {
		return
	}
	batch := s.batch
	took := !isClosed(s.closed) && s.push(batch)
	if !took {
		s.hold(batch)
	}
	if !took || s.free == nil || !s.free() {
		for _, a := range s.arenas {
			a.keep()
		}
	}
	clear(s.arenas)
	s.arenas = s.arenas[:0]
	// push keeps no message (stream.Pusher): their structs are reused.
	if len(s.spare) < 2*maxPushBatch {
		for _, m := range batch {
			*m = api.Message{}
			s.spare = append(s.spare, m)
		}
	}
	clear(batch)
	s.batch = batch[:0]
}

// hold keeps the acknowledgements of msgs for close, or, once closed,
// sends them if close released acknowledgements.
func (s *subscription) hold(msgs []*api.Message) {
	s.heldMu.Lock()
	defer s.heldMu.Unlock()
	closed := isClosed(s.closed)
	for _, m := range msgs {
		switch {
		case m.Ack == nil:
		case !closed:
			s.held = append(s.held, m.Ack)
		case s.releaseAck.Load():
			m.Ack()
		}
	}
}

// metadata returns meta(topic), meta(qos), meta(messageId), meta(retained)
// and v5 user properties of m; messages that differ in none of them share
// one map.
func (s *subscription) metadata(m inbound) map[string]any {
	shareable := m.id == 0 && m.user == nil
	if shareable {
		if c := s.meta.Load(); c != nil && c.topic == m.topic && c.qos == m.qos && c.retained == m.retained {
			return c.m
		}
	}
	meta := map[string]any{
		"topic": m.topic, "qos": int64(m.qos), "messageId": int64(m.id), "retained": m.retained,
	}
	if m.user != nil {
		meta["userProperties"] = m.user
	}
	if shareable {
		s.meta.Store(&sharedMeta{topic: m.topic, qos: m.qos, retained: m.retained, m: meta})
	}
	return meta
}

// close stops deliveries. With releaseAcks, buffered and later messages are
// acknowledged so a shared connection is not stalled.
func (s *subscription) close(releaseAcks bool) {
	s.releaseAck.Store(releaseAcks)
	s.heldMu.Lock()
	s.closeOnce.Do(func() { close(s.closed) })
	held := s.held
	s.held = nil
	s.heldMu.Unlock()
	if releaseAcks {
		for _, ack := range held {
			ack()
		}
	}
	for {
		select {
		case m := <-s.ch:
			if releaseAcks && m.Ack != nil {
				m.Ack()
			}
		default:
			return
		}
	}
}

// stripShare turns "$share/group/filter" into "filter".
func stripShare(f string) string {
	if rest, ok := strings.CutPrefix(f, "$share/"); ok {
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			return rest[i+1:]
		}
	}
	return f
}

// checkFilter validates an MQTT topic filter.
func checkFilter(f string) error {
	if strings.HasPrefix(f, "$share/") {
		rest := strings.TrimPrefix(f, "$share/")
		i := strings.IndexByte(rest, '/')
		if i <= 0 || i == len(rest)-1 {
			return fmt.Errorf("shared subscription %q must be $share/<group>/<filter>", f)
		}
		if strings.ContainsAny(rest[:i], "+#") {
			return fmt.Errorf("shared subscription %q: group name must not contain wildcards", f)
		}
		f = rest[i+1:]
	}
	levels := strings.Split(f, "/")
	for i, l := range levels {
		switch {
		case l == "#" && i != len(levels)-1:
			return fmt.Errorf("topic filter %q: # must be the last level", f)
		case l != "#" && l != "+" && strings.ContainsAny(l, "+#"):
			return fmt.Errorf("topic filter %q: a wildcard must occupy a whole level", f)
		}
	}
	return nil
}

// topicMatches reports whether topic matches filter (MQTT 4.7 rules; a
// topic starting with $ is not matched by a leading wildcard).
func topicMatches(filter, topic string) bool {
	if strings.HasPrefix(topic, "$") && (strings.HasPrefix(filter, "+") || strings.HasPrefix(filter, "#")) {
		return false
	}
	for {
		fl, frest, fmore := strings.Cut(filter, "/")
		if fl == "#" {
			return true
		}
		tl, trest, tmore := strings.Cut(topic, "/")
		if fl != "+" && fl != tl {
			return false
		}
		if !fmore || !tmore {
			// "a/#" also matches "a".
			return fmore == tmore || (fmore && frest == "#")
		}
		filter, topic = frest, trest
	}
}

func decompress(method string, p []byte) ([]byte, error) {
	var (
		r   io.Reader
		err error
	)
	switch method {
	case "gzip":
		r, err = gzip.NewReader(bytes.NewReader(p))
	case "zlib":
		r, err = zlib.NewReader(bytes.NewReader(p))
	case "flate":
		r = flate.NewReader(bytes.NewReader(p))
	case "zstd":
		var d *zstd.Decoder
		d, err = zstd.NewReader(bytes.NewReader(p), zstd.WithDecoderConcurrency(1))
		if err == nil {
			defer d.Close()
			r = d
		}
	default:
		return nil, fmt.Errorf("unknown decompression %q", method)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	out, err := io.ReadAll(io.LimitReader(r, maxDecompressed+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	if len(out) > maxDecompressed {
		return nil, fmt.Errorf("%s: output exceeds %d bytes", method, maxDecompressed)
	}
	return out, nil
}
