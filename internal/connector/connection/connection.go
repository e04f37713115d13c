// Package connection tracks the clients that connectors hold to external
// servers (MQTT brokers, Kafka clusters, Redis and SQL servers) and lets
// connectors with the same connection settings share one client. The
// daemon creates one Registry, hands it to connectors through
// connector.Deps and to the REST server, which reports for each named
// connection the state of the clients opened with its settings and how many
// sources, sinks and lookup tables use them right now.
//
// A connection is identified by a key: a digest of its connection settings
// (server, credentials, TLS) prefixed with the connector family, built with
// Digest. The engine merges a named connection's properties into every rule
// that selects it (connectionSelector), so such a rule's connector computes
// the same key as the KeyFunc registered for the connection's type does
// from the connection's properties. Rules with the same settings but no
// selector use, and are counted under, the same connection: they share
// its client.
//
// Three parts:
//   - Use: one connector instance using a connection, from Join to Leave.
//     The number of Uses is the connection's reference count.
//   - Tracker: one live client (a broker connection, a database pool, a
//     Kafka client) and its state.
//   - Shared: the client kept under a key for every Use that asks for it,
//     opened by the first and closed when the last of them leaves.
//
// A nil *Registry is valid: its Uses are counted nowhere, a Use's shared
// client is private to it, and its trackers report nowhere.
package connection

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/clock"
)

// Connection states, as eKuiper reports them.
const (
	StateConnecting   = "connecting"
	StateConnected    = "connected"
	StateDisconnected = "disconnected"
)

// ErrNoKeyFunc is returned by Status for a connection type whose
// connectors do not report their connections.
var ErrNoKeyFunc = errors.New("connection type does not report status")

// KeyFunc computes the key of a connection from its properties (the
// properties of a named connection, as stored). It validates what it reads
// and ignores properties that are not connection settings.
type KeyFunc func(props map[string]any) (string, error)

// Status is the state of the clients of one connection.
type Status struct {
	// State is the worst state among the live clients: disconnected if any
	// is disconnected, else connecting if any is connecting, else
	// connected. Without a live client it is disconnected.
	State string
	// Clients is the number of live clients (0: none is open).
	Clients int
	// Users is the number of sources, sinks and lookup tables using the
	// connection now (the reference count).
	Users int
	// LastConnected and LastDisconnected are the last times a client
	// connected and stopped being connected (zero: never).
	LastConnected, LastDisconnected time.Time
	// LastError is the most recent failure reported, kept after the last
	// client closed; empty while State is connected.
	LastError string
}

// Registry tracks connections by key. It is safe for concurrent use.
// Entries stay after their last client closed so that the last error
// remains visible: there is one per distinct connection settings used
// since the daemon started.
type Registry struct {
	clock clock.Clock

	mu      sync.Mutex
	keyFns  map[string]KeyFunc // by lower-cased connection type
	entries map[string]*entry
}

type entry struct {
	users    int
	trackers map[*Tracker]struct{}
	shared   *shared
	lastConn time.Time
	lastDisc time.Time
	lastErr  string
}

// NewRegistry returns an empty registry; times come from c (the wall
// clock when nil).
func NewRegistry(c clock.Clock) *Registry {
	if c == nil {
		c = clock.Wall{}
	}
	return &Registry{clock: c, keyFns: map[string]KeyFunc{}, entries: map[string]*entry{}}
}

// SetKeyFunc registers how the key of a named connection of type typ
// (case-insensitive) is computed. It refuses an empty type, a nil func and
// a type already registered.
func (r *Registry) SetKeyFunc(typ string, f KeyFunc) error {
	typ = strings.ToLower(strings.TrimSpace(typ))
	if typ == "" {
		return errors.New("set connection key func: empty type")
	}
	if f == nil {
		return fmt.Errorf("set connection key func %q: nil func", typ)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.keyFns[typ]; ok {
		return fmt.Errorf("set connection key func %q: already set", typ)
	}
	r.keyFns[typ] = f
	return nil
}

// Types returns the connection types with a KeyFunc, sorted.
func (r *Registry) Types() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.keyFns))
	for typ := range r.keyFns {
		out = append(out, typ)
	}
	slices.Sort(out)
	return out
}

// Status reports the connection of type typ with properties props. It
// fails with ErrNoKeyFunc for an untracked type, or with the KeyFunc's
// error for properties that are not a valid connection.
func (r *Registry) Status(typ string, props map[string]any) (Status, error) {
	r.mu.Lock()
	f := r.keyFns[strings.ToLower(typ)]
	r.mu.Unlock()
	if f == nil {
		return Status{State: StateDisconnected}, fmt.Errorf("%s: %w", typ, ErrNoKeyFunc)
	}
	key, err := f(props)
	if err != nil {
		return Status{State: StateDisconnected}, err
	}
	return r.StatusOf(key), nil
}

// StatusOf reports the connection with key.
func (r *Registry) StatusOf(key string) Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.entries[key]
	if e == nil {
		return Status{State: StateDisconnected}
	}
	st := Status{Users: e.users, Clients: len(e.trackers), LastConnected: e.lastConn, LastDisconnected: e.lastDisc}
	worst := int32(stateConnected)
	for t := range e.trackers {
		worst = max(worst, t.state.Load())
	}
	if len(e.trackers) == 0 {
		worst = stateDisconnected
	}
	st.State = stateNames[worst]
	if worst != stateConnected {
		st.LastError = e.lastErr
	}
	return st
}

// entry returns the entry of key, creating it; r.mu is held.
func (r *Registry) entry(key string) *entry {
	e := r.entries[key]
	if e == nil {
		e = &entry{trackers: map[*Tracker]struct{}{}}
		r.entries[key] = e
	}
	return e
}

// Tracker states, ordered from best to worst.
const (
	stateConnected int32 = iota
	stateConnecting
	stateDisconnected
	stateClosed
)

var stateNames = [...]string{StateConnected, StateConnecting, StateDisconnected, StateDisconnected}

// Track registers a live client under key, in state connecting. Its owner
// reports state changes and calls Close when the client is closed. A nil
// registry returns a nil Tracker, whose methods do nothing.
func (r *Registry) Track(key string) *Tracker {
	if r == nil {
		return nil
	}
	t := &Tracker{r: r, key: key}
	t.state.Store(stateConnecting)
	r.mu.Lock()
	r.entry(key).trackers[t] = struct{}{}
	r.mu.Unlock()
	return t
}

// Tracker reports the state of one client. Its methods may be called from
// any goroutine; Connected costs one atomic load when nothing changes, so
// connectors may call it after every successful operation.
type Tracker struct {
	r     *Registry
	key   string
	state atomic.Int32
}

// Connected reports that the client works.
func (t *Tracker) Connected() {
	if t == nil || t.state.Load() == stateConnected {
		return
	}
	t.set(stateConnected, nil)
}

// Connecting reports that the client is (re)connecting.
func (t *Tracker) Connecting() {
	if t == nil || t.state.Load() == stateConnecting {
		return
	}
	t.set(stateConnecting, nil)
}

// Retrying reports that the client is connecting again after err (nil: no
// new error), as a client waiting out its backoff does.
func (t *Tracker) Retrying(err error) {
	if t == nil {
		return
	}
	if err == nil && t.state.Load() == stateConnecting {
		return
	}
	t.set(stateConnecting, err)
}

// Failed reports that the client is disconnected because of err (nil: no
// new error).
func (t *Tracker) Failed(err error) {
	if t == nil {
		return
	}
	t.set(stateDisconnected, err)
}

// Report records the outcome of an operation and returns err: success
// means connected, a retryable failure (api.ErrRetryable) disconnected;
// other errors (bad data, a refused statement) say nothing about the
// connection.
func (t *Tracker) Report(err error) error {
	switch {
	case err == nil:
		t.Connected()
	case errors.Is(err, api.ErrRetryable):
		t.Failed(err)
	}
	return err
}

// Close removes the client; later reports are ignored.
func (t *Tracker) Close() {
	if t == nil {
		return
	}
	t.set(stateClosed, nil)
}

func (t *Tracker) set(s int32, err error) {
	r := t.r
	r.mu.Lock()
	defer r.mu.Unlock()
	prev := t.state.Load()
	if prev == stateClosed {
		return
	}
	e := r.entry(t.key)
	now := r.clock.Now()
	if s == stateConnected && prev != stateConnected {
		e.lastConn = now
	}
	if prev == stateConnected && s != stateConnected {
		e.lastDisc = now
	}
	if err != nil {
		e.lastErr = err.Error()
	}
	t.state.Store(s)
	if s == stateClosed {
		delete(e.trackers, t)
	}
}

// Join starts a use of the connection with key: it counts as a user until
// Leave. A Use belongs to one connector instance and is not safe for
// concurrent use.
func (r *Registry) Join(key string) *Use {
	u := &Use{r: r, key: key}
	if r != nil {
		r.mu.Lock()
		r.entry(key).users++
		r.mu.Unlock()
	}
	return u
}

// Use is one connector instance's use of a connection.
type Use struct {
	r    *Registry
	key  string
	sh   *shared // the shared client held, if any
	left bool
}

// Key is the connection's key.
func (u *Use) Key() string { return u.key }

// Track registers a client private to this use (a Kafka client, a
// transactional SQL sink's database) under the use's key.
func (u *Use) Track() *Tracker { return u.r.Track(u.key) }

// Leave ends the use. When it held the shared client and was its last
// holder, the client is closed and the close error returned. Leave is
// idempotent.
func (u *Use) Leave() error {
	if u == nil || u.left {
		return nil
	}
	u.left = true
	sh := u.sh
	u.sh = nil
	last := sh != nil
	if u.r != nil {
		u.r.mu.Lock()
		e := u.r.entry(u.key)
		e.users--
		if sh != nil {
			sh.holders--
			last = sh.holders == 0
			if last && e.shared == sh {
				e.shared = nil
			}
		}
		u.r.mu.Unlock()
	}
	if last {
		return sh.close()
	}
	return nil
}

// shared is the client kept under one key.
type shared struct {
	holders int // guarded by Registry.mu

	mu      sync.Mutex // serialises open and close
	opened  bool
	closed  bool
	client  any
	closeFn func() error
	tracker *Tracker
}

func (s *shared) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || !s.opened {
		s.closed = true
		return nil
	}
	s.closed = true
	s.tracker.Close()
	return s.closeFn()
}

// Shared returns the client shared under u's key and its tracker. The
// first caller's open creates it, given the tracker to report into (for
// example from a dial hook); open must not do blocking I/O: callers check
// the client themselves (a ping) and report the outcome on the tracker.
// closeFn closes the client when the last holder leaves. A failed open is
// retried by the next call. Every use of a key must ask for the same
// client type T.
func Shared[T any](u *Use, open func(*Tracker) (T, error), closeFn func(T) error) (T, *Tracker, error) {
	var zero T
	if u.left {
		return zero, nil, fmt.Errorf("connection %s: use already ended", u.key)
	}
	if u.sh == nil {
		if u.r == nil {
			u.sh = &shared{holders: 1}
		} else {
			u.r.mu.Lock()
			e := u.r.entry(u.key)
			if e.shared == nil {
				e.shared = &shared{}
			}
			e.shared.holders++
			u.sh = e.shared
			u.r.mu.Unlock()
		}
	}
	sh := u.sh
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if !sh.opened {
		t := u.r.Track(u.key)
		c, err := open(t)
		if err != nil {
			t.Failed(err)
			t.Close()
			return zero, nil, err
		}
		sh.client, sh.tracker, sh.opened = c, t, true
		sh.closeFn = func() error { return closeFn(c) }
	}
	c, ok := sh.client.(T)
	if !ok {
		return zero, nil, fmt.Errorf("connection %s: shared client is a %T", u.key, sh.client)
	}
	return c, sh.tracker, nil
}

// Digest builds a connection key: family, a colon and a digest of parts
// (so that keys hold no secrets in the clear).
func Digest(family string, parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return family + ":" + hex.EncodeToString(h.Sum(nil)[:16])
}

// Pick returns the entries of props whose names are among names, matched
// case-insensitively (as connector property names are), under the names
// given.
func Pick(props map[string]any, names ...string) map[string]any {
	byLower := make(map[string]string, len(names))
	for _, n := range names {
		byLower[strings.ToLower(n)] = n
	}
	out := map[string]any{}
	for k, v := range props {
		if n, ok := byLower[strings.ToLower(k)]; ok {
			out[n] = v
		}
	}
	return out
}
