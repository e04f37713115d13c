// Package stream connects sources to rules. A subscription owns one source
// connection and its read loop, decodes each message once, and fans the
// decoded tuples out to every rule attached to it. Rules at qos 0 on the
// same stream share one subscription; a rule at qos >= 1 gets its own, so
// that its offsets and rewinds are its own.
//
// The read loop is the only goroutine that delivers records and barriers of
// a subscription, so a barrier is injected between two records and the
// offset it records is exactly the position after the last delivered record.
package stream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/format"
	"github.com/rekuiper/rekuiper/internal/panics"
	"github.com/rekuiper/rekuiper/internal/row"
	"github.com/rekuiper/rekuiper/internal/value"
)

// Consumer is a rule's end of a subscription. Its functions are called from
// the subscription's read loop.
type Consumer struct {
	// Deliver hands tuples to the rule, blocking while the rule's buffer is
	// full (backpressure). It returns false once the rule is stopped.
	Deliver func(tuples []*row.Tuple) bool
	// Barrier injects checkpoint barrier id; offset is the source position
	// after the last delivered record (nil for non-rewindable sources).
	Barrier func(id uint64, offset []byte)
	// Error reports a record that could not be decoded.
	Error func(err error)
	// End reports that the source ended (nil: a bounded source reached its
	// end) or failed for good.
	End func(err error)
	// Delivered, when set, is called on Deliver's goroutine once the
	// delivery that called Deliver has been handed to every consumer: a
	// rule may hold its output until then, so that the output of all the
	// rules a delivery reached leaves together.
	Delivered func()
	// Kept, when set, is called on Deliver's goroutine after Delivered
	// (and after the Error calls of the same batch of records): it
	// reports whether the consumer may still hold or read anything of
	// the tuples and values it was given since it was last asked. When
	// every consumer of a delivery answers false, the decoder reuses
	// their memory for the next records (format.TupleRecycler); so false
	// is a promise that nothing the consumer was given, nor anything
	// reachable from it, is referenced any more. A consumer without Kept
	// is taken to keep everything.
	Kept func() bool
	// Match, when set, lets the subscription leave out of Deliver the
	// tuples the rule would drop at its first condition (see Match);
	// Skipped counts the deliveries spared. Barriers, errors and End
	// still reach the consumer.
	Match *Match
}

// Status is a subscription's connection state for rule status.
type Status struct {
	State            string // connected, connecting, disconnected
	LastConnected    int64  // ms
	LastDisconnected int64  // ms
	LastError        string
	RecordsIn        int64
	// DecodeErrors counts records that could not be decoded, and records
	// the source dropped because it could not turn them into a payload
	// (DropReporter). LastDecodeError is the last one, at
	// LastDecodeErrorTime (ms).
	DecodeErrors        int64
	LastDecodeError     string
	LastDecodeErrorTime int64
}

// DropReporter is implemented by sources that drop records they cannot
// hand on, such as an MQTT payload that does not decompress: how many, the
// last error and when. They count as decode errors.
type DropReporter interface {
	Dropped() (n int64, lastErr string, at time.Time)
}

// decodeLogEvery is the least time between two warnings about records that
// did not decode; the ones in between are counted in the next warning.
const decodeLogEvery = 10 * time.Second

// Pusher is implemented by push sources that can hand messages to the
// subscription from their own receive goroutine instead of through Read,
// which saves two goroutine hand-offs per batch (MQTT at rule qos 0; at
// qos >= 1 the source log wraps the source and is read).
type Pusher interface {
	// PushTo makes the source hand every message it receives to fn, in
	// order, instead of queueing it for Read. It is called once, before
	// Connect. Messages that arrived together come in one call. fn
	// blocks while the rules are full (backpressure) and acknowledges
	// the messages it took; it returns false when it took none (the
	// subscription is stopping), and the source then treats them as it
	// treats messages buffered and not read at Close. fn does not keep
	// msgs or the messages.
	PushTo(fn func(msgs []*api.Message) bool)
}

// PayloadReleaser is implemented by Pusher sources that can reuse the
// memory of the payloads they pushed (MQTT 3.1.1 reads them into a
// reusable buffer). ReleaseWith is called once, before Connect; the
// source calls free on its pushing goroutine right after a call of the
// PushTo function returned, and free reports whether nothing of that
// call's messages, their payloads included, is referenced any more: the
// call was taken, every record of it decoded, and the decoded memory
// recycled (every consumer kept nothing; see Consumer.Kept).
type PayloadReleaser interface {
	ReleaseWith(free func() bool)
}

// Drainer is implemented by sources that can stop their upstream from
// sending while still handing over what it had sent (MQTT shared
// subscriptions, whose broker gives what a leaving member did not take to
// no other member). Drain returns once the upstream sends no more and
// everything it sent was pushed or is queued for Read; Read then returns
// what is queued, then io.EOF. Drain runs while the read loop goes on, and
// before Close. A wrapper whose wrapped source cannot drain returns
// errors.ErrUnsupported, and Read goes on as before.
type Drainer interface {
	Drain(ctx context.Context) error
}

type readResult struct {
	msg    *api.Message
	offset []byte
	err    error
}

// Subscription reads one source for one or more rules.
type Subscription struct {
	name    string
	src     api.Source
	rewind  api.Rewindable
	pusher  Pusher
	decoder format.Decoder
	// recycler is the decoder when it can reuse the memory of decoded
	// tuples; spare is the slice of the last delivery that was recycled,
	// reused by the next. Delivering goroutine only.
	recycler format.TupleRecycler
	spare    []*row.Tuple
	clock    clock.Clock
	logger   *slog.Logger

	mu        sync.Mutex
	consumers map[int]*member
	nextID    int
	// fan is the fan-out of the consumers, rebuilt by the delivering
	// goroutine when changed is set. deliveries counts the deliveries
	// routed through an index (for Skipped).
	fan        *fanout
	changed    bool
	deliveries int64
	status     Status
	// lastDecodeLog and unloggedDecode rate-limit decode warnings.
	lastDecodeLog  time.Time
	unloggedDecode int64
	barriers       chan barrierReq
	cancel         context.CancelFunc
	done           chan struct{}
	started        bool

	// deliverMu orders pushed deliveries and barriers: a barrier goes
	// between two pushed batches.
	deliverMu sync.Mutex
	pushBuf   []readResult // reused under deliverMu
	// pushWhere and onPushPanic guard a push; pushPanicked is set when
	// one panicked. Under deliverMu.
	pushWhere string
	// pushFree is what pushFreed reports: the last push was taken and
	// all of it recycled (set by pushed and deliverBatch, under
	// deliverMu, on the pushing goroutine).
	pushFree     bool
	onPushPanic  func(*panics.Error)
	pushPanicked bool
	stopping     atomic.Bool   // pushed messages are refused
	draining     atomic.Bool   // Drain ran: io.EOF from Read is not the end
	drained      chan struct{} // closed when the read loop met that io.EOF
	ended        atomic.Bool   // the source ended (io.EOF) or panicked: nothing more comes
	endErr       error         // why it ended (nil at io.EOF); guarded by mu

	// Owned by the delivering goroutine (the read loop, or a push under
	// deliverMu): the current routed delivery and scratch lists.
	gen     uint64
	matches []*member
	touched []*member
}

type barrierReq struct {
	consumer int
	id       uint64
}

// NewSubscription wraps a constructed (not yet connected) source of the
// named stream. decoder is nil for sources that deliver decoded records.
func NewSubscription(name string, src api.Source, decoder format.Decoder, clk clock.Clock, logger *slog.Logger) *Subscription {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Subscription{
		name: name, src: src, decoder: decoder, clock: clk, logger: logger,
		consumers: map[int]*member{},
		fan:       &fanout{},
		barriers:  make(chan barrierReq, 16),
		done:      make(chan struct{}),
		drained:   make(chan struct{}),
	}
	s.rewind, _ = src.(api.Rewindable)
	s.recycler, _ = decoder.(format.TupleRecycler)
	s.pushWhere = "source " + name
	s.onPushPanic = func(e *panics.Error) {
		s.pushPanicked = true
		s.panicked(e)
	}
	if p, ok := src.(Pusher); ok && s.rewind == nil {
		s.pusher = p
	}
	s.status.State = "connecting"
	return s
}

// Rewindable reports whether the source can resume from an offset.
func (s *Subscription) Rewindable() bool { return s.rewind != nil }

// Rewind positions the source at offset before Start.
func (s *Subscription) Rewind(offset []byte) error {
	if s.rewind == nil {
		return fmt.Errorf("stream %s: source is not rewindable", s.name)
	}
	if err := s.rewind.Rewind(offset); err != nil {
		return fmt.Errorf("stream %s: rewind: %w", s.name, err)
	}
	return nil
}

// Attach adds a consumer and returns its id. It gets the deliveries that
// start after Attach returns. When the source has already ended, the
// consumer's End is called before Attach returns, on the caller's
// goroutine.
func (s *Subscription) Attach(c *Consumer) int {
	s.mu.Lock()
	s.nextID++
	id := s.nextID
	s.consumers[id] = newMember(id, c)
	s.changed = true
	late, err := s.ended.Load(), s.endErr
	s.mu.Unlock()
	if late && c.End != nil {
		c.End(err)
	}
	return id
}

// Detach removes a consumer; it reports whether none is left. A delivery
// under way when Detach is called may still reach it.
func (s *Subscription) Detach(id int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.consumers, id)
	s.changed = true
	return len(s.consumers) == 0
}

// Indexed reports whether consumer id is served through the index: its
// Match was usable.
func (s *Subscription) Indexed(id int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.consumers[id]
	return m != nil && m.col != ""
}

// Skipped returns how many deliveries the index spared consumer id: those
// in which none of the tuples could pass its Match. A consumer without an
// index gets every delivery (0).
func (s *Subscription) Skipped(id int) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.consumers[id]
	if m == nil || !m.inFan || m.col == "" {
		return 0
	}
	return s.deliveries - m.base - m.delivered
}

// fanout returns the current fan-out, rebuilt if consumers came or went.
// Delivering goroutine only.
func (s *Subscription) fanout() *fanout {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changed {
		s.fan = newFanout(s.consumers)
		for _, m := range s.fan.members {
			if !m.inFan {
				m.inFan, m.base = true, s.deliveries
			}
		}
		s.changed = false
	}
	return s.fan
}

// InjectBarrier asks the read loop to inject barrier id into consumer's rule
// between two records.
func (s *Subscription) InjectBarrier(consumer int, id uint64) {
	select {
	case s.barriers <- barrierReq{consumer: consumer, id: id}:
	case <-s.done:
	}
}

// ConnStatus is implemented by sources that track their own connection
// (MQTT connects in the background and reconnects by itself).
type ConnStatus interface {
	Status() (state string, lastConnected, lastDisconnected time.Time, lastErr string)
}

// Status returns the connection state and counters. A source that tracks
// its own connection reports it; otherwise the read loop's view is used.
func (s *Subscription) Status() Status {
	s.mu.Lock()
	st := s.status
	s.mu.Unlock()
	src := s.src
	if w, ok := src.(interface{ Inner() api.Source }); ok {
		src = w.Inner()
	}
	if cs, ok := src.(ConnStatus); ok {
		state, conn, disc, msg := cs.Status()
		st.State, st.LastError = state, msg
		st.LastConnected, st.LastDisconnected = millis(conn), millis(disc)
	}
	if dr, ok := src.(DropReporter); ok {
		n, msg, at := dr.Dropped()
		st.DecodeErrors += n
		if n > 0 && millis(at) >= st.LastDecodeErrorTime {
			st.LastDecodeError, st.LastDecodeErrorTime = msg, millis(at)
		}
	}
	return st
}

func millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// Start runs the read loop until Stop. Connection failures are retried with
// exponential backoff and jitter; they never end the subscription.
func (s *Subscription) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return
	}
	s.started = true
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	go s.loop(ctx)
}

// Drain lets a Drainer source stop its upstream and waits until the read
// loop has delivered, to the consumers still attached, every record the
// upstream had sent, or until ctx ends. Stop follows; without Drain, what
// the upstream had sent and the loop had not delivered is dropped at Stop.
// Other sources drain nothing.
func (s *Subscription) Drain(ctx context.Context) error {
	d, ok := s.src.(Drainer)
	s.mu.Lock()
	started := s.started
	s.mu.Unlock()
	if !ok || !started || s.ended.Load() || s.draining.Swap(true) {
		return nil
	}
	if err := d.Drain(ctx); errors.Is(err, errors.ErrUnsupported) {
		s.draining.Store(false)
		return nil
	} else if err != nil {
		return fmt.Errorf("drain stream %s: %w", s.name, err)
	}
	if s.pusher != nil {
		return nil // pushes are delivered before they return
	}
	select {
	case <-s.drained:
	case <-s.done:
	case <-ctx.Done():
		return fmt.Errorf("drain stream %s: %w", s.name, ctx.Err())
	}
	return nil
}

// Stop ends the read loop and closes the source.
func (s *Subscription) Stop(ctx context.Context) error {
	s.mu.Lock()
	started := s.started
	cancel := s.cancel
	s.mu.Unlock()
	if !started {
		return s.src.Close(ctx)
	}
	s.stopping.Store(true)
	cancel()
	select {
	case <-s.done:
	case <-ctx.Done():
		return fmt.Errorf("stop stream %s: %w", s.name, ctx.Err())
	}
	return nil
}

func (s *Subscription) retryState() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.status.LastConnected == 0 {
		return "disconnected"
	}
	return "connecting"
}

func (s *Subscription) setState(state string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := clock.NowMilli(s.clock)
	prev := s.status.State
	s.status.State = state
	switch {
	case state == "connected":
		s.status.LastConnected = now
	case err != nil || prev == "connected":
		s.status.LastDisconnected = now
	}
	if err != nil {
		s.status.LastError = err.Error()
	}
}

func (s *Subscription) loop(ctx context.Context) {
	defer close(s.done)
	defer s.src.Close(context.Background())
	defer panics.Catch("source "+s.name, s.panicked)
	backoff := newBackoff()
	if s.pusher != nil {
		s.pusher.PushTo(s.pushed)
		if r, ok := s.pusher.(PayloadReleaser); ok {
			r.ReleaseWith(s.pushFreed)
		}
	}
	var lastOffset []byte
	if s.rewind != nil {
		lastOffset, _ = s.rewind.Offset()
	}
	for ctx.Err() == nil {
		if err := s.connect(ctx); err != nil {
			// The loop retries: connecting once the source has worked,
			// disconnected while it never has, as eKuiper reports them.
			s.setState(s.retryState(), err)
			s.logger.Warn("source connect failed", "stream", s.name, "err", err)
			if !s.sleep(ctx, backoff.next()) {
				return
			}
			continue
		}
		backoff.reset()
		s.setState("connected", nil)
		err := s.run(ctx, &lastOffset)
		if pe := (*panics.Error)(nil); errors.As(err, &pe) {
			s.panicked(pe)
			s.waitStop(ctx, &lastOffset)
			return
		}
		if errors.Is(err, io.EOF) && s.draining.Load() {
			close(s.drained)
			s.waitStop(ctx, &lastOffset)
			return
		}
		if errors.Is(err, io.EOF) {
			s.end(nil)
			s.waitStop(ctx, &lastOffset)
			return
		}
		if ctx.Err() != nil {
			return
		}
		s.setState("connecting", err)
		s.logger.Warn("source read failed, reconnecting", "stream", s.name, "err", err)
		s.src.Close(context.Background())
		if !s.sleep(ctx, backoff.next()) {
			return
		}
	}
}

// waitStop serves barriers after a bounded source ended, until Stop.
func (s *Subscription) waitStop(ctx context.Context, lastOffset *[]byte) {
	for {
		select {
		case req := <-s.barriers:
			s.barrier(req, *lastOffset)
		case <-ctx.Done():
			return
		}
	}
}

func (s *Subscription) connect(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return s.src.Connect(cctx)
}

// run reads until an error. A reader goroutine does the blocking Reads and
// captures the offset right after each one, so that barriers can be served
// while no record arrives.
func (s *Subscription) run(ctx context.Context, lastOffset *[]byte) error {
	if s.pusher != nil {
		return s.runPushed(ctx)
	}
	rctx, cancel := context.WithCancel(ctx)
	// Buffered, so that records arriving together are delivered to the
	// rules as one batch.
	results := make(chan readResult, maxBatch)
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		// A panic in the source's Read ends the subscription's rules.
		defer panics.Catch("source "+s.name+" read", func(e *panics.Error) {
			select {
			case results <- readResult{err: e}:
			case <-rctx.Done():
			}
		})
		s.reader(rctx, results)
	}()
	// The reader must be out of Read before the source is closed or
	// reconnected.
	defer func() {
		cancel()
		<-readerDone
	}()
	for {
		select {
		case req := <-s.barriers:
			s.barrier(req, *lastOffset)
		case res := <-results:
			batch := []readResult{res}
			for len(batch) < maxBatch && res.err == nil {
				select {
				case res = <-results:
					batch = append(batch, res)
					continue
				default:
				}
				break
			}
			if err := s.deliverBatch(s.fanout(), batch, lastOffset); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// runPushed serves barriers while the source pushes records (a push source
// reconnects by itself, so only Stop ends it).
func (s *Subscription) runPushed(ctx context.Context) error {
	for {
		select {
		case req := <-s.barriers:
			s.pushedBarrier(req)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (s *Subscription) pushedBarrier(req barrierReq) {
	s.deliverMu.Lock()
	defer s.deliverMu.Unlock()
	s.barrier(req, nil)
}

// panicked ends every rule of the subscription with a panic recovered in
// its read loop, its reader or a push callback (decoding included); the
// stack goes to the log. The rules stop; the process does not.
func (s *Subscription) panicked(e *panics.Error) {
	s.stopping.Store(true)
	s.setState("disconnected", e)
	s.logger.Error("source goroutine panicked", "stream", s.name, "err", e.Error(), "stack", string(e.Stack))
	s.end(e)
}

// pushed delivers messages a Pusher source received, on its goroutine. A
// panic while decoding or delivering them is contained here, so that the
// source's goroutine survives; the subscription's rules stop.
func (s *Subscription) pushed(msgs []*api.Message) bool {
	s.deliverMu.Lock()
	defer s.deliverMu.Unlock()
	s.pushFree = false
	if s.stopping.Load() {
		return false
	}
	fan := s.fanout()
	if len(fan.members) == 0 {
		return false
	}
	s.pushPanicked = false
	s.pushFree = true
	s.deliverPushed(fan, msgs)
	if s.pushPanicked {
		s.pushFree = false
	}
	return !s.pushPanicked
}

// pushFreed reports whether nothing of the last push's messages is
// referenced any more (PayloadReleaser). It is called on the pushing
// goroutine right after pushed returned.
func (s *Subscription) pushFreed() bool {
	s.deliverMu.Lock()
	defer s.deliverMu.Unlock()
	return s.pushFree
}

// deliverPushed delivers msgs in batches; a panic sets pushPanicked. The
// guard's text and function are built once (NewSubscription), so that a
// push allocates nothing. Under deliverMu.
func (s *Subscription) deliverPushed(fan *fanout, msgs []*api.Message) {
	defer panics.Catch(s.pushWhere, s.onPushPanic)
	for len(msgs) > 0 {
		n := min(len(msgs), maxBatch)
		batch := s.pushBuf[:0]
		for _, m := range msgs[:n] {
			batch = append(batch, readResult{msg: m})
		}
		_ = s.deliverBatch(fan, batch, nil)
		clear(batch)
		s.pushBuf = batch[:0]
		msgs = msgs[n:]
	}
}

func (s *Subscription) reader(ctx context.Context, out chan<- readResult) {
	for {
		msg, err := s.src.Read(ctx)
		var res readResult
		if err != nil {
			res.err = err
		} else {
			res.msg = msg
			if s.rewind != nil {
				res.offset, _ = s.rewind.Offset()
			}
		}
		select {
		case out <- res:
		case <-ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

func (s *Subscription) barrier(req barrierReq, offset []byte) {
	if sy, ok := s.src.(interface{ Sync() error }); ok {
		// A durable source log writes its batch out first, so the
		// checkpoint never refers to a record not in the log. If it
		// cannot, no barrier: the checkpoint is abandoned, not wrong.
		if err := sy.Sync(); err != nil {
			s.logger.Error("sync source log for checkpoint", "stream", s.name, "checkpoint", req.id, "err", err)
			return
		}
	}
	s.mu.Lock()
	m := s.consumers[req.consumer]
	s.mu.Unlock()
	if m != nil && m.c.Barrier != nil {
		m.c.Barrier(req.id, append([]byte(nil), offset...))
	}
}

func (s *Subscription) consumersSnapshot() []*Consumer {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*Consumer, 0, len(s.consumers))
	for _, m := range s.consumers {
		out = append(out, m.c)
	}
	return out
}

// maxBatch bounds how many records that arrived together are delivered to
// the rules in one item.
const maxBatch = 128

// deliverBatch decodes the records read so far, hands their tuples to every
// consumer in one delivery (an indexed consumer gets the ones its Match may
// keep, if any), then acknowledges them and advances the offset. A read
// error ends the batch: what came before it is delivered first.
func (s *Subscription) deliverBatch(fan *fanout, batch []readResult, lastOffset *[]byte) error {
	// Every delivery gets a fresh slice, as consumers may keep theirs,
	// unless the last one was recycled (see recycle).
	tuples := s.spare
	if tuples == nil {
		tuples = make([]*row.Tuple, 0, len(batch))
	}
	s.spare = nil
	var first []*row.Tuple
	flush := func() {
		if len(tuples) > 0 {
			if first == nil {
				first = tuples
			}
			for _, m := range fan.plain {
				m.c.Deliver(tuples)
			}
			if len(fan.cols) > 0 {
				s.route(fan, tuples)
			}
			for _, m := range fan.plain {
				if m.c.Delivered != nil {
					m.c.Delivered()
				}
			}
			tuples = nil
		}
	}
	var readErr, lastBad error
	n, bad := 0, 0
	for _, res := range batch {
		if res.err != nil {
			readErr = res.err
			break
		}
		n++
		var err error
		tuples, err = s.decode(tuples, res.msg)
		if err != nil {
			// Keep the order: records before the bad one go first.
			bad++
			lastBad = err
			flush()
			for _, m := range fan.members {
				if m.c.Error != nil {
					m.c.Error(err)
				}
			}
			continue
		}
	}
	flush()
	if !s.recycle(fan, first) || bad > 0 || readErr != nil {
		s.pushFree = false
	}
	s.mu.Lock()
	s.status.RecordsIn += int64(n)
	s.status.DecodeErrors += int64(bad)
	var logBad bool
	var unlogged int64
	if bad > 0 {
		now := s.clock.Now()
		s.status.LastDecodeError, s.status.LastDecodeErrorTime = lastBad.Error(), now.UnixMilli()
		if logBad = s.lastDecodeLog.IsZero() || now.Sub(s.lastDecodeLog) >= decodeLogEvery; logBad {
			s.lastDecodeLog, unlogged, s.unloggedDecode = now, s.unloggedDecode, 0
		}
		s.unloggedDecode += int64(bad)
		if logBad {
			s.unloggedDecode-- // the one logged now
		}
	}
	s.mu.Unlock()
	if logBad {
		s.logger.Warn("record dropped: cannot decode", "stream", s.name, "err", lastBad, "not_logged_since_last_warning", unlogged)
	}
	for _, res := range batch[:n] {
		if res.msg.Ack != nil {
			res.msg.Ack()
		}
		if res.offset != nil && lastOffset != nil {
			*lastOffset = res.offset
		}
	}
	return readErr
}

// recycle ends the decoder's window of tuples after a batch: their memory
// is reused when every consumer of the fan-out reported that it kept
// nothing of what the batch gave it (Consumer.Kept), and left to the GC
// otherwise. The fan-out was taken under s.mu for this batch, so a
// consumer attached since got none of it; each consumer is asked, so that
// none carries a stale answer into the next batch. first is the batch's
// first delivered slice, reused with the memory. It reports whether it
// recycled.
func (s *Subscription) recycle(fan *fanout, first []*row.Tuple) bool {
	if s.recycler == nil {
		return false
	}
	kept := !fan.reports
	for _, m := range fan.members {
		if m.c.Kept == nil || m.c.Kept() {
			kept = true
		}
	}
	if kept {
		s.recycler.Keep()
		return false
	}
	s.recycler.Recycle()
	if first != nil && cap(first) <= 4*maxBatch {
		clear(first[:cap(first)])
		s.spare = first[:0]
	}
	return true
}

// route delivers tuples to the indexed consumers: each gets, in order, the
// tuples whose column value its Match may keep or fail on, in one delivery,
// or no delivery when there is none.
func (s *Subscription) route(fan *fanout, tuples []*row.Tuple) {
	s.gen++
	touched := s.touched[:0]
	for i, t := range tuples {
		for _, c := range fan.cols {
			v, _ := t.Value("", c.name)
			s.matches = c.appendMatches(s.matches[:0], v)
			for _, m := range s.matches {
				if m.mark != s.gen {
					m.mark, m.n = s.gen, 0
					touched = append(touched, m)
				}
				if m.pending == nil && m.n == i {
					m.n++ // every tuple so far: a prefix of tuples
					continue
				}
				if m.pending == nil {
					m.pending = append(make([]*row.Tuple, 0, m.n+1), tuples[:m.n]...)
				}
				m.pending = append(m.pending, t)
				m.n++
			}
		}
	}
	for _, m := range touched {
		// The consumer keeps what it is given: a prefix of tuples is
		// capped so that an append cannot write into the rest.
		ts := tuples[:m.n:m.n]
		if m.pending != nil {
			ts, m.pending = m.pending, nil
		}
		m.c.Deliver(ts)
	}
	for _, m := range touched {
		if m.c.Delivered != nil {
			m.c.Delivered()
		}
	}
	s.mu.Lock()
	s.deliveries++
	for _, m := range touched {
		m.delivered++
	}
	s.mu.Unlock()
	// Detached members must not stay reachable from the scratch lists.
	clear(s.matches[:cap(s.matches)])
	clear(touched[:cap(touched)])
	s.touched = touched[:0]
}

// decode appends the tuples of msg to dst. Tuples of one delivery share
// dst; a failed message leaves it unchanged.
func (s *Subscription) decode(dst []*row.Tuple, msg *api.Message) ([]*row.Tuple, error) {
	ts := msg.Time.UnixMilli()
	if msg.Time.IsZero() {
		ts = clock.NowMilli(s.clock)
	}
	n := len(dst)
	switch td, _ := s.decoder.(format.TupleDecoder); {
	case msg.Data != nil:
		m, _ := value.Normalize(msg.Data).(map[string]any)
		dst = append(dst, &row.Tuple{Message: m})
	case td != nil:
		var err error
		if dst, err = td.DecodeTuples(dst, msg.Payload); err != nil {
			return dst, fmt.Errorf("decode message of stream %s: %w", s.name, err)
		}
	case s.decoder != nil:
		records, err := s.decoder.Decode(msg.Payload)
		if err != nil {
			return dst, fmt.Errorf("decode message of stream %s: %w", s.name, err)
		}
		for _, r := range records {
			dst = append(dst, &row.Tuple{Message: r})
		}
	default:
		return dst, fmt.Errorf("stream %s: message has no data and the stream no format", s.name)
	}
	for _, t := range dst[n:] {
		t.Emitter, t.Metadata, t.Timestamp = s.name, msg.Meta, ts
	}
	return dst, nil
}

// Ended reports whether the source has ended (a bounded source read to
// its end, or a panic): a consumer attached now gets only its End.
func (s *Subscription) Ended() bool { return s.ended.Load() }

// end tells every consumer that the source ended. The consumers are taken
// under the lock that Attach holds, so that each gets End exactly once:
// from here, or from Attach when it came later.
func (s *Subscription) end(err error) {
	s.mu.Lock()
	s.ended.Store(true)
	s.endErr = err
	cs := make([]*Consumer, 0, len(s.consumers))
	for _, m := range s.consumers {
		cs = append(cs, m.c)
	}
	s.mu.Unlock()
	for _, c := range cs {
		if c.End != nil {
			c.End(err)
		}
	}
}

// sleep waits d on the engine clock; false if ctx ended first.
func (s *Subscription) sleep(ctx context.Context, d time.Duration) bool {
	done := make(chan struct{})
	t := s.clock.AfterFunc(d, func() { close(done) })
	select {
	case <-done:
		return true
	case <-ctx.Done():
		t.Stop()
		return false
	}
}

// backoff is exponential from 100 ms to 30 s with ±20 % jitter.
type backoff struct{ d time.Duration }

func newBackoff() *backoff { return &backoff{} }

func (b *backoff) reset() { b.d = 0 }

func (b *backoff) next() time.Duration {
	switch {
	case b.d == 0:
		b.d = 100 * time.Millisecond
	case b.d < 30*time.Second:
		b.d *= 2
		if b.d > 30*time.Second {
			b.d = 30 * time.Second
		}
	}
	jitter := 1 + (rand.Float64()*0.4 - 0.2)
	return time.Duration(float64(b.d) * jitter)
}
