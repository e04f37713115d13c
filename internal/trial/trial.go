// Package trial runs eKuiper's rule tests (/ruletest): a temporary rule
// fed with mock records instead of its streams' sources, whose results go
// to the clients listening to its event stream. Runs are bounded: a
// lifetime after which the run is deleted, a cap on the mock records fed,
// and a cap on the number of runs; a run whose last listener leaves is
// deleted too. Nothing of a run is stored.
//
// A run is built by the engine the daemon and `kuiper test` share
// (engine.Build), on the daemon's clock, function registry and schemas.
package trial

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/engine"
	"github.com/rekuiper/rekuiper/internal/format"
	"github.com/rekuiper/rekuiper/internal/function"
	"github.com/rekuiper/rekuiper/internal/output"
	"github.com/rekuiper/rekuiper/internal/planner"
	"github.com/rekuiper/rekuiper/internal/rule"
	"github.com/rekuiper/rekuiper/internal/runtime"
	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/sql/parser"
)

// Errors of the manager; the REST layer maps them to statuses.
var (
	// ErrInvalid: the definition cannot run (400).
	ErrInvalid = errors.New("invalid rule test")
	// ErrNotFound: no run has that id (404).
	ErrNotFound = errors.New("rule test not found")
	// ErrState: the run was started already, or too many runs exist (409).
	ErrState = errors.New("rule test state")
)

// Defaults of Options.
const (
	DefaultLifetime   = 10 * time.Minute
	DefaultMaxRuns    = 16
	DefaultMaxRecords = 100_000
	// DefaultInterval is the time between two mock records of a stream.
	DefaultInterval = time.Second
	// maxMockRecords bounds the records of one mock source.
	maxMockRecords = 10_000
	// listenerBuffer is the payloads a listener may lag behind before
	// the rule waits for it.
	listenerBuffer = 64
)

// Options configure a Manager. Streams is required.
type Options struct {
	// Streams resolves the definition of a stream or table the SQL reads.
	Streams func(name string) (*ast.CreateStreamStmt, error)
	Funcs   *function.Registry
	// Schemas resolves the JSON schema of a mock stream with a SCHEMAID.
	Schemas format.Schemas
	Clock   clock.Clock
	Logger  *slog.Logger
	// Lifetime is how long a run lives after it is created.
	Lifetime time.Duration
	// MaxRuns bounds the runs that exist at once.
	MaxRuns int
	// MaxRecords bounds the mock records fed to one run.
	MaxRecords int
}

// Def is eKuiper's rule test definition (the body of POST /ruletest).
type Def struct {
	ID        string          `json:"id"`
	SQL       string          `json:"sql"`
	Mock      map[string]Mock `json:"mockSource"`
	SinkProps map[string]any  `json:"sinkProps"`
}

// Mock is the mock source of one stream or table: its records, the time
// between two (milliseconds, or a duration such as "100ms"; default 1s)
// and whether to start over after the last.
type Mock struct {
	Data     []json.RawMessage `json:"data"`
	Interval any               `json:"interval"`
	Loop     bool              `json:"loop"`
}

// Manager holds the runs. It is safe for concurrent use.
type Manager struct {
	opts Options

	mu     sync.Mutex
	runs   map[string]*Run
	closed bool
}

// New returns a manager with opts (zero limits take the defaults).
func New(opts Options) *Manager {
	if opts.Clock == nil {
		opts.Clock = clock.Wall{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Funcs == nil {
		opts.Funcs = function.Builtins()
	}
	if opts.Lifetime <= 0 {
		opts.Lifetime = DefaultLifetime
	}
	if opts.MaxRuns <= 0 {
		opts.MaxRuns = DefaultMaxRuns
	}
	if opts.MaxRecords <= 0 {
		opts.MaxRecords = DefaultMaxRecords
	}
	return &Manager{opts: opts, runs: map[string]*Run{}}
}

// Create builds the run of d, replacing (and stopping) a run of the same
// id, as eKuiper does. The run expires after the lifetime even if it is
// never started.
func (m *Manager) Create(d Def) error {
	if d.ID == "" || d.SQL == "" {
		return fmt.Errorf("%w: id and sql are required", ErrInvalid)
	}
	r, err := m.build(d)
	if err != nil {
		return err
	}
	m.mu.Lock()
	old := m.runs[d.ID]
	if m.closed || (old == nil && len(m.runs) >= m.opts.MaxRuns) {
		m.mu.Unlock()
		r.stop()
		return fmt.Errorf("%w: %d rule tests exist already; delete one first", ErrState, len(m.runs))
	}
	m.runs[d.ID] = r
	r.expiry = m.opts.Clock.AfterFunc(m.opts.Lifetime, func() { m.remove(r) })
	m.mu.Unlock()
	if old != nil {
		old.stop()
	}
	return nil
}

// Start starts feeding the mock records of run id.
func (m *Manager) Start(id string) error {
	r, err := m.get(id)
	if err != nil {
		return err
	}
	return r.start()
}

// Delete stops and removes run id.
func (m *Manager) Delete(id string) error {
	r, err := m.get(id)
	if err != nil {
		return err
	}
	m.remove(r)
	return nil
}

// Listen attaches a listener to run id: it receives the run's result
// payloads until the run ends (the channel is then closed) or leave is
// called. When the last listener of a started run leaves, the run is
// deleted.
func (m *Manager) Listen(id string) (payloads <-chan []byte, leave func(), err error) {
	r, err := m.get(id)
	if err != nil {
		return nil, nil, err
	}
	l := r.listen()
	if l == nil {
		return nil, nil, fmt.Errorf("rule test %s: %w", id, ErrNotFound)
	}
	return l.ch, func() {
		if r.leave(l) {
			m.remove(r)
		}
	}, nil
}

// Close stops every run; later creations are refused.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	runs := m.runs
	m.runs = map[string]*Run{}
	m.mu.Unlock()
	for _, r := range runs {
		r.stop()
	}
}

func (m *Manager) get(id string) (*Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.runs[id]
	if !ok {
		return nil, fmt.Errorf("rule test %s: %w", id, ErrNotFound)
	}
	return r, nil
}

// remove stops r and forgets it, unless a newer run took its id.
func (m *Manager) remove(r *Run) {
	m.mu.Lock()
	if m.runs[r.id] == r {
		delete(m.runs, r.id)
	}
	m.mu.Unlock()
	r.stop()
}

// build checks d and builds its rule (not started).
func (m *Manager) build(d Def) (*Run, error) {
	stmt, err := parser.ParseSelect(d.SQL)
	if err != nil {
		return nil, fmt.Errorf("%w: parse sql: %w", ErrInvalid, err)
	}
	defs := map[string]*ast.CreateStreamStmt{}
	for _, n := range readNames(stmt) {
		def, err := m.opts.Streams(n)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		defs[n] = def
	}
	for n := range d.Mock {
		if defs[n] == nil {
			return nil, fmt.Errorf("%w: mockSource %s: the rule reads no stream or table %s", ErrInvalid, n, n)
		}
	}
	shaper, err := output.NewShaperWith(d.SinkProps, m.opts.Schemas)
	if err != nil {
		return nil, fmt.Errorf("%w: sinkProps: %w", ErrInvalid, err)
	}
	opts, err := rule.ParseOptions(rule.Options{}, nil)
	if err != nil {
		return nil, err
	}
	opts.SendError = true
	r := &Run{id: d.ID, clock: m.opts.Clock, maxRecords: m.opts.MaxRecords, done: make(chan struct{}), logger: m.opts.Logger}
	r.sink = &sink{run: r, shaper: shaper}
	built, err := engine.Build(engine.Spec{
		ID: "$$test_" + d.ID, SQL: d.SQL, Options: opts, Defs: defs, Funcs: m.opts.Funcs,
		Clock: m.opts.Clock, Sinks: []runtime.Sink{r.sink}, Logger: m.opts.Logger, OnPanic: r.panicked,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	r.rule = built.Rule
	for _, in := range built.Plan.Inputs {
		if in.Lookup {
			return nil, fmt.Errorf("%w: %s is a lookup table; rule tests feed streams and scan tables only", ErrInvalid, in.Name)
		}
		mock, ok := d.Mock[in.Name]
		if !ok {
			return nil, fmt.Errorf("%w: mockSource %s is required: rule tests read mock records, not the stream's source", ErrInvalid, in.Name)
		}
		f, err := m.feed(in, mock)
		if err != nil {
			return nil, err
		}
		r.feeds = append(r.feeds, f)
	}
	return r, nil
}

func readNames(stmt *ast.SelectStmt) []string {
	names := []string{stmt.From.Name}
	for _, j := range stmt.Joins {
		names = append(names, j.Name)
	}
	return names
}

// feed checks the mock of input in: each record decodes as the stream's
// JSON records do (declared fields in slots; its JSON schema, if any).
func (m *Manager) feed(in planner.Input, mock Mock) (*feed, error) {
	if len(mock.Data) == 0 {
		return nil, fmt.Errorf("%w: mockSource %s: data is empty", ErrInvalid, in.Name)
	}
	if len(mock.Data) > maxMockRecords {
		return nil, fmt.Errorf("%w: mockSource %s: more than %d records", ErrInvalid, in.Name, maxMockRecords)
	}
	interval, err := parseInterval(mock.Interval)
	if err != nil {
		return nil, fmt.Errorf("%w: mockSource %s: interval: %w", ErrInvalid, in.Name, err)
	}
	f := &feed{name: in.Name, port: in.Port, table: in.Table, loop: mock.Loop && !in.Table, interval: interval, data: mock.Data}
	if f.opts, err = codecOptions(in.Def, m.opts.Schemas); err != nil {
		return nil, fmt.Errorf("%w: mockSource %s: %w", ErrInvalid, in.Name, err)
	}
	codec, err := format.New(format.JSON, f.opts)
	if err != nil {
		return nil, fmt.Errorf("%w: mockSource %s: %w", ErrInvalid, in.Name, err)
	}
	for i, rec := range mock.Data {
		if _, err := codec.Decode(rec); err != nil {
			return nil, fmt.Errorf("%w: mockSource %s: record %d: %w", ErrInvalid, in.Name, i, err)
		}
	}
	return f, nil
}

// codecOptions decode mock records as JSON records of def: its declared
// fields, and its JSON schema when it is a JSON stream with a SCHEMAID.
func codecOptions(def *ast.CreateStreamStmt, schemas format.Schemas) (format.Options, error) {
	var opts format.Options
	for _, f := range def.Fields {
		opts.Fields = append(opts.Fields, f.Name)
	}
	if f, _ := def.Option("FORMAT"); f == "" || strings.EqualFold(f, format.JSON) {
		opts.SchemaID, _ = def.Option("SCHEMAID")
		opts.Schemas = schemas
	}
	return opts, nil
}

func parseInterval(v any) (time.Duration, error) {
	switch x := v.(type) {
	case nil:
		return DefaultInterval, nil
	case json.Number:
		ms, err := x.Int64()
		if err != nil || ms < 0 {
			return 0, fmt.Errorf("%s is not a whole number of milliseconds", x)
		}
		return time.Duration(ms) * time.Millisecond, nil
	case float64:
		if x < 0 || x != float64(int64(x)) {
			return 0, fmt.Errorf("%v is not a whole number of milliseconds", x)
		}
		return time.Duration(x) * time.Millisecond, nil
	case string:
		d, err := time.ParseDuration(x)
		if err != nil || d < 0 {
			return 0, fmt.Errorf("%q is not a duration", x)
		}
		return d, nil
	}
	return 0, fmt.Errorf("%v: want milliseconds or a duration", v)
}
