package mqtt

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/eclipse/paho.golang/paho/session"
	"github.com/eclipse/paho.golang/paho/session/state"

	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/connector/connection"
	"github.com/rekuiper/rekuiper/internal/panics"
)

// Connection states reported by Status.
const (
	StateConnecting   = "connecting"
	StateConnected    = "connected"
	StateDisconnected = "disconnected"
)

// Pool shares broker connections: all sources (and, separately, all sinks)
// with the same broker, identity, session and TLS settings use one
// connection. It also holds named connections for connectionSelector.
// The daemon creates one Pool, passes it to Register, and calls Close at
// shutdown. It is safe for concurrent use.
type Pool struct {
	logger *slog.Logger
	clock  clock.Clock

	mu    sync.Mutex
	conns map[string]*conn
	named map[string]map[string]any
	reg   *connection.Registry

	// Tunables; tests shorten them.
	minBackoff, maxBackoff time.Duration
	connectTimeout         time.Duration
	bufferLength           int
	// wrapTransport, when set, wraps every transport (tests inject faults).
	wrapTransport func(transport) transport
}

// NewPool returns an empty pool. Reconnect backoff runs on c.
func NewPool(logger *slog.Logger, c clock.Clock) *Pool {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if c == nil {
		c = clock.Wall{}
	}
	return &Pool{
		logger: logger, clock: c,
		conns: map[string]*conn{}, named: map[string]map[string]any{},
		minBackoff: 100 * time.Millisecond, maxBackoff: 10 * time.Second,
		connectTimeout: defaultConnectTimeout, bufferLength: defaultBufferLength,
	}
}

// ReportTo makes the pool report every connection it opens from now on,
// with its state and its users (sources and sinks), into reg under the
// key ConnectionKey computes from the connection properties. Source and
// sink connections to the same broker with the same settings report under
// one key.
func (p *Pool) ReportTo(reg *connection.Registry) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reg = reg
}

// ConnectionKey is the connection.KeyFunc of named MQTT connections.
func ConnectionKey(props map[string]any) (string, error) {
	spec := ConnectionSpec()
	names := make([]string, 0, len(spec.Props))
	for _, p := range spec.Props {
		names = append(names, p.Name)
	}
	v, err := spec.Validate(connection.Pick(props, names...))
	if err != nil {
		return "", err
	}
	cfg, err := parseConn(v)
	if err != nil {
		return "", err
	}
	return statusKey(cfg), nil
}

func statusKey(cfg connConfig) string { return connection.Digest("mqtt", cfg.key("")) }

// ConnectionSpec is the property spec of a named MQTT connection.
func ConnectionSpec() connector.Spec {
	var props []connector.Prop
	for _, p := range connProps() {
		if p.Name != "connectionSelector" {
			props = append(props, p)
		}
	}
	return connector.Spec{Props: props}
}

// Define adds or replaces the named connection name (eKuiper's
// connectionSelector target). props are validated against ConnectionSpec
// and checked (TLS material is loaded). Sources and sinks created later
// with connectionSelector=name use these properties instead of their own
// connection properties.
func (p *Pool) Define(name string, props map[string]any) error {
	v, err := ConnectionSpec().Validate(props)
	if err != nil {
		return fmt.Errorf("connection %s: %w", name, err)
	}
	if _, err := parseConn(v); err != nil {
		return fmt.Errorf("connection %s: %w", name, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.named[name] = v
	return nil
}

// Remove deletes the named connection. Connectors already created keep
// their connection.
func (p *Pool) Remove(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.named, name)
}

// resolve applies connectionSelector: it returns the connection config of
// props, or of the named connection they select.
func (p *Pool) resolve(props map[string]any) (connConfig, error) {
	sel := connector.Get[string](props, "connectionSelector")
	if sel == "" {
		return parseConn(props)
	}
	p.mu.Lock()
	named, ok := p.named[sel]
	p.mu.Unlock()
	if !ok {
		return connConfig{}, fmt.Errorf("property connectionSelector: unknown connection %q", sel)
	}
	return parseConn(named)
}

// ConnectionStatus describes one pooled connection.
type ConnectionStatus struct {
	Server           string
	ClientID         string
	Role             string // "source" or "sink"
	Refs             int
	State            string
	LastConnected    time.Time
	LastDisconnected time.Time
	LastError        string
}

// Connections lists the pooled connections, sorted by server and client id.
func (p *Pool) Connections() []ConnectionStatus {
	p.mu.Lock()
	conns := make([]*conn, 0, len(p.conns))
	refs := map[*conn]int{}
	for _, c := range p.conns {
		conns = append(conns, c)
		refs[c] = c.refs
	}
	p.mu.Unlock()
	out := make([]ConnectionStatus, 0, len(conns))
	for _, c := range conns {
		st, lc, ld, le := c.status()
		out = append(out, ConnectionStatus{Server: c.cfg.server.Redacted(), ClientID: c.clientID, Role: c.role,
			Refs: refs[c], State: st, LastConnected: lc, LastDisconnected: ld, LastError: le})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Server != out[j].Server {
			return out[i].Server < out[j].Server
		}
		return out[i].ClientID < out[j].ClientID
	})
	return out
}

// Close stops every connection. Connectors still holding one see it as
// disconnected.
func (p *Pool) Close() error {
	p.mu.Lock()
	conns := make([]*conn, 0, len(p.conns))
	for k, c := range p.conns {
		conns = append(conns, c)
		delete(p.conns, k)
	}
	p.mu.Unlock()
	for _, c := range conns {
		c.shutdown()
	}
	return nil
}

// acquire returns the shared connection for cfg and role and takes a
// reference. The caller registers its subscription, then calls start: a
// persistent session delivers queued messages right after connecting, and
// they must find their subscription.
func (p *Pool) acquire(cfg connConfig, role string) *conn {
	key := cfg.key(role)
	p.mu.Lock()
	defer p.mu.Unlock()
	c, ok := p.conns[key]
	if ok && c.finished() {
		ok = false
	}
	if !ok {
		c = newConn(p, cfg, role, key)
		c.tracker = p.reg.Track(statusKey(cfg))
		p.conns[key] = c
	}
	c.refs++
	c.uses = append(c.uses, p.reg.Join(statusKey(cfg)))
	return c
}

// release drops a reference; the last one stops the connection.
func (p *Pool) release(c *conn) {
	p.mu.Lock()
	c.refs--
	var use *connection.Use
	if n := len(c.uses); n > 0 {
		use, c.uses = c.uses[n-1], c.uses[:n-1]
	}
	last := c.refs <= 0
	if last && p.conns[c.key] == c {
		delete(p.conns, c.key)
	}
	p.mu.Unlock()
	use.Leave()
	if last {
		c.shutdown()
	}
}

// shared reports whether c has other users than the caller.
func (p *Pool) shared(c *conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return c.refs > 1
}

// backoff is the delay before reconnect attempt n (n >= 1): exponential
// from minBackoff, capped at maxBackoff, with jitter in [d/2, d].
func (p *Pool) backoff(n int) time.Duration {
	d := p.minBackoff
	for i := 1; i < n && d < p.maxBackoff; i++ {
		d *= 2
	}
	d = min(d, p.maxBackoff)
	half := d / 2
	return half + rand.N(half+1)
}

// conn is one logical broker connection with its reconnect loop. The loop
// goroutine is owned by the conn and ends at shutdown, or after a permanent
// failure of the very first attempt.
type conn struct {
	pool      *Pool
	cfg       connConfig
	role      string
	key       string
	clientID  string
	refs      int                 // guarded by pool.mu
	uses      []*connection.Use   // one per reference; guarded by pool.mu
	tracker   *connection.Tracker // reports state to the pool's registry
	sess      session.SessionManager
	startOnce sync.Once

	stopCtx context.Context
	stop    context.CancelFunc
	done    chan struct{}
	first   chan struct{} // closed after the first attempt
	// firstErr is the permanent error of the first attempt (read after first).
	firstErr error

	mu       sync.Mutex
	tr       transport // nil while not connected
	up       chan struct{}
	state    string
	lastConn time.Time
	lastDisc time.Time
	lastErr  string
	subs     map[*subscription]struct{}
	// acked holds the filters the broker acknowledged (SUBACK) on the
	// current transport, with their granted QoS request; a source reads
	// as connected only once all its filters are in it (subStatus).
	acked     map[string]byte
	subList   []*subscription // subs as a slice, rebuilt on every change
	attempted bool

	// recvMu serializes dispatch and flush: they run on the reader of the
	// current transport, but an old transport's reader may still be in
	// its handler after a reconnect.
	recvMu  sync.Mutex
	dirty   []*subscription // subscriptions holding an unflushed batch
	targets []*subscription // dispatch's scratch
}

func newConn(p *Pool, cfg connConfig, role, key string) *conn {
	if role != "source" {
		// A sink reads only acknowledgements: pacing would only slow
		// its round trips.
		cfg.readPace = 0
	}
	c := &conn{pool: p, cfg: cfg, role: role, key: key, clientID: cfg.clientID,
		done: make(chan struct{}), first: make(chan struct{}), up: make(chan struct{}),
		state: StateDisconnected, subs: map[*subscription]struct{}{}}
	if c.clientID == "" {
		b := make([]byte, 8)
		_, _ = crand.Read(b)
		c.clientID = "rekuiper-" + hex.EncodeToString(b)
	}
	if cfg.version == 5 {
		c.sess = state.NewInMemory()
	}
	c.stopCtx, c.stop = context.WithCancel(context.Background())
	return c
}

// start runs the connection loop once; later calls do nothing.
func (c *conn) start() { c.startOnce.Do(func() { go c.run() }) }

func (c *conn) finished() bool { return isClosed(c.done) }

func (c *conn) shutdown() {
	c.stop()
	c.start() // a conn never started still closes done
	<-c.done
	c.tracker.Close()
}

func (c *conn) newTransport() transport {
	var tr transport
	if c.cfg.version == 5 {
		t := newV5(c.cfg, c.clientID, c.sess, c.dispatch, c.pool.connectTimeout)
		t.flush = c.flush
		tr = t
	} else {
		t := newV3(c.cfg, c.clientID, c.dispatch, c.pool.connectTimeout)
		t.flush = c.flush
		tr = t
	}
	if c.pool.wrapTransport != nil {
		tr = c.pool.wrapTransport(tr)
	}
	return tr
}

func (c *conn) run() {
	defer close(c.done)
	log := c.pool.logger.With(slog.String("server", c.cfg.describe()), slog.String("role", c.role))
	attempt := 0
	for !c.serve(log, &attempt) {
		attempt++
		if connector.Wait(c.stopCtx, c.pool.clock, c.pool.backoff(attempt)) != nil {
			c.setState(StateDisconnected, nil)
			return
		}
	}
}

// serve connects, and reconnects after failures, until the conn is shut
// down (true). A panic on the way (in a transport, a TLS layer) is the
// connection's error, in its status and in the log with its stack: serve
// returns false and run retries after a backoff, as after a failed
// connect, so that the sources and sinks sharing the connection see a
// connection error, not the process's end.
func (c *conn) serve(log *slog.Logger, attempt *int) (stopped bool) {
	var tr transport // the current attempt's
	defer panics.Catch("mqtt connection", func(e *panics.Error) {
		log.Error("mqtt connection panicked", slog.String("error", e.Error()), slog.String("stack", string(e.Stack)))
		c.mu.Lock()
		attached := tr != nil && c.tr == tr
		c.mu.Unlock()
		if attached {
			c.detach(e)
		}
		if tr != nil {
			if perr := panics.Call("mqtt close", tr.close); perr != nil {
				log.Error("mqtt close panicked", slog.String("error", perr.Error()))
			}
		}
		c.setState(c.retryState(), e)
		c.signalFirst(nil)
		stopped = false
	})
	for {
		c.setState(StateConnecting, nil)
		tr = c.newTransport()
		ctx, cancel := context.WithTimeout(c.stopCtx, c.pool.connectTimeout)
		err := classify(tr.connect(ctx))
		if err == nil {
			err = c.attach(ctx, tr)
		}
		cancel()
		if c.stopCtx.Err() != nil {
			if err == nil {
				tr.close()
			}
			c.setState(StateDisconnected, nil)
			c.signalFirst(nil)
			return true
		}
		if err != nil {
			if !c.attempted && errors.Is(err, errPermanent) {
				c.setState(StateDisconnected, err)
				c.signalFirst(err)
				return true
			}
			// Waiting to retry reads connecting once the connection has
			// worked (it was lost), disconnected while it never has, as
			// eKuiper reports them; the failure is the last error.
			c.setState(c.retryState(), err)
			c.signalFirst(nil)
			*attempt++
			d := c.pool.backoff(*attempt)
			log.Warn("mqtt connect failed", slog.String("error", err.Error()), slog.Duration("retry_in", d))
			if connector.Wait(c.stopCtx, c.pool.clock, d) != nil {
				c.setState(StateDisconnected, nil)
				return true
			}
			continue
		}
		*attempt = 0
		c.signalFirst(nil)
		log.Info("mqtt connected")
		select {
		case err = <-tr.lost():
			c.detach(err)
			tr.close()
			if pe := (*panics.Error)(nil); errors.As(err, &pe) {
				log.Error("mqtt connection lost: a goroutine of it panicked", slog.String("error", pe.Error()), slog.String("stack", string(pe.Stack)))
			} else {
				log.Warn("mqtt connection lost", slog.String("error", fmt.Sprint(err)))
			}
		case <-c.stopCtx.Done():
			c.detach(nil)
			tr.close()
			return true
		}
	}
}

// attach makes tr the current transport and subscribes every filter in
// use. Publishing to tr and subscribing new sources may start before the
// resubscription completes.
func (c *conn) attach(ctx context.Context, tr transport) error {
	c.mu.Lock()
	c.tr = tr
	c.acked = map[string]byte{}
	filters := c.filtersLocked(nil)
	c.mu.Unlock()
	if len(filters) > 0 {
		if err := tr.subscribe(ctx, filters); err != nil {
			c.mu.Lock()
			c.tr = nil
			c.mu.Unlock()
			tr.close()
			return err
		}
	}
	c.mu.Lock()
	c.state, c.lastConn, c.lastErr = StateConnected, c.pool.clock.Now(), ""
	for f, q := range filters {
		c.acked[f] = max(c.acked[f], q)
	}
	close(c.up)
	c.mu.Unlock()
	c.tracker.Connected()
	return nil
}

func (c *conn) detach(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tr = nil
	c.acked = nil
	c.up = make(chan struct{})
	c.state, c.lastDisc = StateDisconnected, c.pool.clock.Now()
	if err != nil {
		c.lastErr = err.Error()
	}
	c.tracker.Failed(err)
}

func (c *conn) signalFirst(err error) {
	if c.attempted {
		return
	}
	c.attempted = true
	c.firstErr = err
	close(c.first)
}

// retryState is the state of a connection waiting to retry.
func (c *conn) retryState() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lastConn.IsZero() {
		return StateDisconnected
	}
	return StateConnecting
}

func (c *conn) setState(s string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if (s == StateDisconnected && c.state != StateDisconnected) || (s != StateConnected && err != nil) {
		c.lastDisc = c.pool.clock.Now()
	}
	c.state = s
	if err != nil {
		c.lastErr = err.Error()
	}
	if s == StateConnecting {
		c.tracker.Retrying(err)
	} else {
		c.tracker.Failed(err)
	}
}

// status returns the state, the last connect and disconnect times and the
// last error text.
func (c *conn) status() (string, time.Time, time.Time, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state, c.lastConn, c.lastDisc, c.lastErr
}

// subStatus is status as seen by subscription s: connected only once the
// broker acknowledged every filter of s on the current connection, so that
// "connected" means "receiving"; connecting until then.
func (c *conn) subStatus(s *subscription) (string, time.Time, time.Time, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	state := c.state
	if state == StateConnected {
		for f, q := range s.filters {
			if got, ok := c.acked[f]; !ok || got < q {
				state = StateConnecting
				break
			}
		}
	}
	return state, c.lastConn, c.lastDisc, c.lastErr
}

// waitFirst waits for the outcome of the first connect attempt and returns
// its permanent error, if any. A broker that is merely unreachable is not
// an error. ctx bounds the wait only.
func (c *conn) waitFirst(ctx context.Context) error {
	select {
	case <-c.first:
		return c.firstErr
	case <-ctx.Done():
		return nil
	}
}

// current returns the connected transport, or nil.
func (c *conn) current() transport {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tr
}

// filtersLocked returns the union of the subscriptions' filters with the
// highest QoS of each, leaving out except.
func (c *conn) filtersLocked(except *subscription) map[string]byte {
	out := map[string]byte{}
	for s := range c.subs {
		if s == except {
			continue
		}
		for f, q := range s.filters {
			if q >= out[f] {
				out[f] = q
			}
		}
	}
	return out
}

// subsChangedLocked rebuilds subList; dispatch reads it without copying.
func (c *conn) subsChangedLocked() {
	list := make([]*subscription, 0, len(c.subs))
	for s := range c.subs {
		list = append(list, s)
	}
	c.subList = list
}

// addSub registers s and subscribes its filters if connected; otherwise the
// next connection subscribes them. A failed subscribe unregisters s.
func (c *conn) addSub(ctx context.Context, s *subscription) error {
	c.mu.Lock()
	before := c.filtersLocked(s)
	c.subs[s] = struct{}{}
	c.subsChangedLocked()
	tr := c.tr
	c.mu.Unlock()
	need := map[string]byte{}
	for f, q := range s.filters {
		if old, ok := before[f]; !ok || q > old {
			need[f] = q
		}
	}
	if tr == nil || len(need) == 0 {
		return nil
	}
	err := tr.subscribe(ctx, need)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil && c.tr == tr {
		for f, q := range need {
			c.acked[f] = max(c.acked[f], q)
		}
	}
	if err != nil {
		// Refused, or not acknowledged in time: the caller fails its
		// Connect (and retries) rather than hold a subscription that
		// receives nothing.
		delete(c.subs, s)
		c.subsChangedLocked()
		return err
	}
	return nil
}

// removeSub unregisters s. Without a persistent session, filters no longer
// used are unsubscribed; with one they stay, so the broker keeps queueing.
func (c *conn) removeSub(s *subscription) {
	c.mu.Lock()
	delete(c.subs, s)
	c.subsChangedLocked()
	left := c.filtersLocked(nil)
	tr := c.tr
	c.mu.Unlock()
	if tr == nil || c.cfg.session {
		return
	}
	var drop []string
	c.mu.Lock()
	for f := range s.filters {
		if _, ok := left[f]; !ok && !s.unsubscribed[f] {
			drop = append(drop, f)
		}
	}
	c.mu.Unlock()
	if len(drop) == 0 {
		return
	}
	c.mu.Lock()
	for _, f := range drop {
		delete(c.acked, f)
	}
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(c.stopCtx, 2*time.Second)
	defer cancel()
	_ = tr.unsubscribe(ctx, drop)
}

// dispatch hands one received message to every subscription whose filter
// matches. Subscriptions read through Read get it queued, blocking while
// their buffer is full; push subscriptions batch it until flush, which
// the transport calls once it has no complete packet left to read (or
// after every message, for paho). Either way backpressure reaches the
// broker through TCP and, for QoS >= 1, the unacknowledged window. The
// broker's acknowledgement is sent once every receiving subscription has
// acknowledged.
func (c *conn) dispatch(m inbound) {
	c.recvMu.Lock()
	defer c.recvMu.Unlock()
	c.mu.Lock()
	subs := c.subList
	c.mu.Unlock()
	targets := c.targets[:0]
	for _, s := range subs {
		if s.matches(m.topic) {
			targets = append(targets, s)
		}
	}
	defer func() {
		clear(targets)
		c.targets = targets[:0]
	}()
	if len(targets) == 0 {
		// Not acknowledging would stall the connection's in-order acks.
		c.pool.logger.Warn("mqtt message matches no subscription; dropped", slog.String("topic", m.topic))
		if m.ack != nil {
			m.ack()
		}
		return
	}
	ack := m.ack
	if ack != nil && len(targets) > 1 {
		var mu sync.Mutex
		n := len(targets)
		inner := m.ack
		ack = func() {
			mu.Lock()
			n--
			last := n == 0
			mu.Unlock()
			if last {
				inner()
			}
		}
	}
	for _, s := range targets {
		if !s.deliver(m, ack) {
			continue
		}
		if len(s.batch) >= maxPushBatch {
			s.flush()
		} else if !s.dirty {
			s.dirty = true
			c.dirty = append(c.dirty, s)
		}
	}
}

// flush hands the batches gathered by dispatch to their push subscriptions.
func (c *conn) flush() {
	c.recvMu.Lock()
	defer c.recvMu.Unlock()
	for _, s := range c.dirty {
		s.dirty = false
		s.flush()
	}
	clear(c.dirty)
	c.dirty = c.dirty[:0]
}
