package rulemgr

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/panics"
	"github.com/rekuiper/rekuiper/internal/rule"
	"github.com/rekuiper/rekuiper/internal/sql/parser"
)

// Config configures a Manager. Catalog and Runner are required.
type Config struct {
	Catalog *catalog.Catalog
	Runner  Runner
	// Clock drives restart backoff and cron scheduling. Default wall clock.
	Clock  clock.Clock
	Logger *slog.Logger
	// Defaults are the rule option defaults (rule.OptionsFromConfig).
	Defaults rule.Options
	// Cleanup, when set, is called after a rule is deleted to remove its
	// state and sink cache. Its error is logged, not returned.
	Cleanup func(ctx context.Context, id string) error
	// Rand returns a number in [0, 1) for restart jitter. Default math/rand.
	Rand func() float64
	// StartTimeout bounds Runner.Start. Default 30s.
	StartTimeout time.Duration
	// StopTimeout bounds Running.Stop when the rule's forceExitTimeout is
	// unset. Default 5s.
	StopTimeout time.Duration
	// StartSettle is how long a rule must run before its start marker is
	// cleared (see Load), rounded up to a whole second of the clock so
	// that markers are cleared in groups. Default 5s.
	StartSettle time.Duration
	// Crashed is the first line of the crash report the previous process
	// left ("fatal error: runtime: out of memory"), "" when it did not crash
	// (a clean stop, kill -9, power loss).
	Crashed string
	// NodeID names this daemon; its rule start markers carry it, so that
	// daemons sharing a catalog read only their own.
	NodeID string
	// Placement, when set, decides which rules run here (daemons sharing
	// a catalog): a rule wanted running runs only while this node holds
	// its lease. Nil: every rule wanted running runs here.
	Placement Placement
}

// Manager runs the rules of a catalog. Each rule has a mailbox owned by the
// Manager whose commands are applied in arrival order by one goroutine at a
// time (started when a command arrives, gone when none is pending), so concurrent calls
// never interleave transitions of the same rule. Every command that changes
// the wanted state writes it to the catalog before acting; when that write
// fails the command returns the error and nothing changes. Close stops
// every rule without changing wanted states.
type Manager struct {
	cfg Config
	log *slog.Logger

	mu     sync.Mutex
	actors map[string]*actor
	closed bool
	wg     sync.WaitGroup
}

// New returns a Manager; call Load to converge to the catalog.
func New(cfg Config) *Manager {
	if cfg.Clock == nil {
		cfg.Clock = clock.Wall{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Float64
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = 30 * time.Second
	}
	if cfg.StopTimeout <= 0 {
		cfg.StopTimeout = 5 * time.Second
	}
	if cfg.StartSettle <= 0 {
		cfg.StartSettle = 5 * time.Second
	}
	return &Manager{cfg: cfg, log: cfg.Logger, actors: map[string]*actor{}}
}

// Defaults returns the rule option defaults.
func (m *Manager) Defaults() rule.Options { return m.cfg.Defaults }

// ParseDef decodes a rule with the manager's option defaults.
func (m *Manager) ParseDef(data []byte) (*rule.Def, error) {
	return rule.ParseDef(data, m.cfg.Defaults)
}

// Load creates the actor of every rule in the catalog and starts those
// whose wanted state is running; stopped rules stay stopped. Starts happen
// in the background. A stored definition that no longer decodes leaves its
// rule stopped by error with the reason.
//
// A rule whose start marker is still in the catalog was starting when the
// process died. When the process crashed (Config.Crashed), that rule is not
// started again, which could crash the daemon in a loop: its wanted state
// becomes stopped and its status says why; starting it by hand works as
// usual. When the process was killed from outside (kill -9, power loss)
// the markers are cleared and the rules start as usual.
func (m *Manager) Load(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	marks, err := m.cfg.Catalog.RuleStartMarks(ctx, m.cfg.NodeID)
	if err != nil {
		return fmt.Errorf("load rules: %w", err)
	}
	var begin []*actor
	for _, r := range m.cfg.Catalog.Rules() {
		if _, ok := m.actors[r.ID]; ok {
			continue
		}
		def, err := rule.ParseDef(r.Definition, m.cfg.Defaults)
		if err != nil {
			def = &rule.Def{ID: r.ID, Raw: r.Definition, Tags: r.Tags, Version: r.Version}
			err = fmt.Errorf("load rule %s: %w", r.ID, err)
		}
		crashed, wasStarting := marks[r.ID]
		wasStarting = wasStarting && m.cfg.Crashed != ""
		if wasStarting && r.State == catalog.RuleRunning {
			if _, perr := m.cfg.Catalog.SetRuleState(ctx, r.ID, catalog.RuleStopped); perr != nil {
				return fmt.Errorf("load rule %s: %w", r.ID, perr)
			}
			r.State = catalog.RuleStopped
		}
		a := m.spawnLocked(def, r.State, err)
		if wasStarting {
			msg := fmt.Sprintf("not started at boot: the daemon crashed (%s) while this rule was starting (at %s); start it again once the cause is fixed",
				m.cfg.Crashed, crashed.UTC().Format(time.RFC3339))
			m.log.Error("rule left stopped: the daemon crashed while it was starting", "rule", r.ID, "since", crashed, "crash", m.cfg.Crashed)
			a.set(func() { a.state, a.message = StateStoppedByError, msg })
		}
		if r.State == catalog.RuleRunning {
			begin = append(begin, a)
		}
	}
	if err := m.premark(ctx, marks, begin); err != nil {
		return fmt.Errorf("load rules: %w", err)
	}
	for _, a := range begin {
		a.post(command{kind: cmdBegin})
	}
	return nil
}

// premark replaces the start markers left from the last run by those of
// the rules about to start now, in one transaction: a boot costs one
// durable write, not one per rule, and every marker is in the catalog
// before any of these rules starts. Rules that wait for a schedule get
// none; a rule that then begins without starting (placement changed)
// clears its own.
func (m *Manager) premark(ctx context.Context, left map[string]time.Time, begin []*actor) error {
	changes := make([]catalog.RuleStart, 0, len(left)+len(begin))
	for id := range left {
		changes = append(changes, catalog.RuleStart{ID: id, Clear: true})
	}
	now := m.cfg.Clock.Now()
	var marked []*actor
	for _, a := range begin {
		if a.loadErr == nil && m.startsAtOnce(a.def) {
			changes = append(changes, catalog.RuleStart{ID: a.id, At: now})
			marked = append(marked, a)
		}
	}
	if err := m.cfg.Catalog.WriteRuleStarts(ctx, m.cfg.NodeID, changes); err != nil {
		return err
	}
	for _, a := range marked {
		a.marked = true // before its first command: the draining goroutine sees it
	}
	return nil
}

// startsAtOnce reports whether a rule wanted running starts as soon as it
// begins: it runs on this node and waits for no schedule.
func (m *Manager) startsAtOnce(def *rule.Def) bool {
	sched, _ := def.Schedule()
	return sched == nil && m.placed(def.ID)
}

// Validate checks a rule without creating it: the SQL parses, every stream
// or table it reads exists, and the Runner accepts it. Errors wrap
// rule.ErrInvalid.
func (m *Manager) Validate(ctx context.Context, def *rule.Def) error {
	if _, err := Sources(def.SQL, m.cfg.Catalog); err != nil {
		return err
	}
	var err error
	if perr := panics.Call("validate rule "+def.ID, func() { err = m.cfg.Runner.Validate(ctx, def) }); perr != nil {
		m.log.Error("rule validation panicked", "rule", def.ID, "err", perr.Error(), "stack", string(perr.Stack))
		err = perr
	}
	if err != nil {
		if errors.Is(err, rule.ErrInvalid) {
			return err
		}
		return fmt.Errorf("%w: %v", rule.ErrInvalid, err)
	}
	return nil
}

// Sources parses a rule's SQL and returns the streams and tables it reads,
// in order of appearance, checking that each exists in cat. Errors wrap
// rule.ErrInvalid.
func Sources(sql string, cat *catalog.Catalog) ([]string, error) {
	stmt, err := parser.ParseSelect(sql)
	if err != nil {
		return nil, fmt.Errorf("%w: parse sql: %v", rule.ErrInvalid, err)
	}
	names := []string{stmt.From.Name}
	for _, j := range stmt.Joins {
		if !slices.Contains(names, j.Name) {
			names = append(names, j.Name)
		}
	}
	for _, n := range names {
		if _, err := cat.Stream(n); err != nil {
			return nil, fmt.Errorf("%w: stream or table %s is not found", rule.ErrInvalid, n)
		}
	}
	return names, nil
}

// Create validates def, stores it with wanted state running (or stopped
// when def.Triggered is false) and, when running, starts it and waits for
// the start attempt to finish. A start failure does not fail Create: the
// rule stays stopped by error (see Status). An existing id gives an error
// wrapping catalog.ErrConflict.
func (m *Manager) Create(ctx context.Context, def *rule.Def) error {
	if err := m.Validate(ctx, def); err != nil {
		return err
	}
	return m.create(ctx, def)
}

func (m *Manager) create(ctx context.Context, def *rule.Def) error {
	state := catalog.RuleStopped
	if def.Triggered {
		state = catalog.RuleRunning
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return ErrClosed
	}
	if _, ok := m.actors[def.ID]; ok {
		m.mu.Unlock()
		return fmt.Errorf("create rule %s: %w", def.ID, catalog.ErrConflict)
	}
	// The start marker is queued first, so the rule's own write carries
	// it: a create costs one durable write, and the marker is committed
	// before the rule starts.
	var mark *catalog.QueuedStarts
	if state == catalog.RuleRunning && m.startsAtOnce(def) {
		mark = m.cfg.Catalog.QueueRuleStarts(m.cfg.NodeID, []catalog.RuleStart{{ID: def.ID, At: m.cfg.Clock.Now()}})
	}
	_, err := m.cfg.Catalog.PutRule(ctx, catalog.Rule{
		ID: def.ID, Definition: def.Raw, State: state, Version: def.Version, Tags: def.Tags,
	}, catalog.Create)
	if err != nil {
		m.mu.Unlock()
		m.withdraw(mark, def.ID)
		return fmt.Errorf("create rule %s: %w", def.ID, err)
	}
	marked := mark != nil
	if err := mark.Wait(ctx); err != nil {
		m.log.Warn("write rule start marker", "rule", def.ID, "err", err)
		marked = false // the start writes it again
	}
	a := m.spawnLocked(def, state, nil)
	a.marked = marked // before its first command: the draining goroutine sees it
	m.mu.Unlock()
	m.log.Info("rule created", "rule", def.ID)
	if state == catalog.RuleRunning {
		return a.call(ctx, command{kind: cmdBegin})
	}
	return nil
}

// withdraw undoes a queued start marker of rule id that is no longer
// wanted (its create failed): dropped while still queued, cleared when a
// transaction took it.
func (m *Manager) withdraw(mark *catalog.QueuedStarts, id string) {
	if mark.Drop() {
		return
	}
	if err := mark.Wait(context.Background()); err != nil {
		return // not written
	}
	if err := m.cfg.Catalog.ClearRuleStarting(context.Background(), m.cfg.NodeID, id); err != nil {
		m.log.Warn("clear rule start marker", "rule", id, "err", err)
	}
}

// Upsert creates the rule (created true) or replaces its definition. A
// replaced rule that was wanted running restarts on the new definition and
// stays running; a stopped one stays stopped. When both the stored and the
// new definition carry a version the new one must be lexically greater
// (ErrVersion otherwise). Masked secrets ("******") in the new actions keep
// the stored values.
func (m *Manager) Upsert(ctx context.Context, def *rule.Def) (created bool, err error) {
	if err := m.Validate(ctx, def); err != nil {
		return false, err
	}
	a, err := m.lookup(def.ID)
	if err != nil {
		if err := m.create(ctx, def); err != nil {
			return false, err
		}
		return true, nil
	}
	return false, a.call(ctx, command{kind: cmdUpdate, def: def})
}

// Delete stops the rule, removes it from the catalog and calls the cleanup
// hook. The catalog delete happens first: when it fails nothing changes.
func (m *Manager) Delete(ctx context.Context, id string) error {
	return m.send(ctx, id, command{kind: cmdDelete})
}

// Start persists wanted state running and starts the rule (or schedules it
// when it has a cron). It waits for the start attempt; a start failure is
// reported in Status, not returned.
func (m *Manager) Start(ctx context.Context, id string) error {
	return m.send(ctx, id, command{kind: cmdStart})
}

// Stop persists wanted state stopped and stops the rule, draining it.
func (m *Manager) Stop(ctx context.Context, id string) error {
	return m.send(ctx, id, command{kind: cmdStop})
}

// Restart persists wanted state running, stops the rule if it runs and
// starts it again.
func (m *Manager) Restart(ctx context.Context, id string) error {
	return m.send(ctx, id, command{kind: cmdRestart})
}

// TagOp says how SetTags combines tags with the stored ones.
type TagOp int

// Tag operations.
const (
	TagsReplace TagOp = iota
	TagsAdd
	TagsRemove
)

// SetTags replaces, adds or removes tags of a rule.
func (m *Manager) SetTags(ctx context.Context, id string, op TagOp, tags []string) error {
	return m.send(ctx, id, command{kind: cmdTags, tagOp: op, tags: tags})
}

func (m *Manager) send(ctx context.Context, id string, c command) error {
	a, err := m.lookup(id)
	if err != nil {
		return err
	}
	return a.call(ctx, c)
}

func (m *Manager) lookup(id string) (*actor, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	a, ok := m.actors[id]
	if !ok {
		return nil, fmt.Errorf("rule %s: %w", id, catalog.ErrNotFound)
	}
	return a, nil
}

// Status returns a snapshot of the rule, with metrics when it runs.
func (m *Manager) Status(id string) (Status, error) {
	a, err := m.lookup(id)
	if err != nil {
		return Status{}, err
	}
	return m.overlay(a.status(true)), nil
}

// Def returns the rule's current definition.
func (m *Manager) Def(id string) (*rule.Def, error) {
	a, err := m.lookup(id)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	d := *a.def
	return &d, nil
}

// Topo returns the topology of a running rule (ErrNotRunning otherwise).
func (m *Manager) Topo(id string) (map[string]any, error) {
	run, err := m.running(id)
	if err != nil {
		return nil, err
	}
	return run.Topo(), nil
}

// running returns the running instance of rule id (ErrNotRunning when
// there is none).
func (m *Manager) running(id string) (Running, error) {
	a, err := m.lookup(id)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	run := a.run
	a.mu.Unlock()
	if run == nil {
		return nil, fmt.Errorf("rule %s: %w", id, ErrNotRunning)
	}
	return run, nil
}

// ScanTables returns at most limit rows of the scan tables a running rule
// joins (ErrNotRunning when it is not running, ErrNoScanTable when it joins
// none).
func (m *Manager) ScanTables(id string, limit int) ([]TableRow, error) {
	run, err := m.running(id)
	if err != nil {
		return nil, err
	}
	st, ok := run.(ScanTabler)
	if !ok {
		return nil, fmt.Errorf("rule %s: %w", id, ErrNoScanTable)
	}
	rows, err := st.ScanTables(limit)
	if err != nil {
		return nil, fmt.Errorf("rule %s: %w", id, err)
	}
	return rows, nil
}

// List returns the status of every rule, by id, without metrics.
func (m *Manager) List() []Status {
	m.mu.Lock()
	as := make([]*actor, 0, len(m.actors))
	for _, a := range m.actors {
		as = append(as, a)
	}
	m.mu.Unlock()
	out := make([]Status, 0, len(as))
	for _, a := range as {
		out = append(out, m.overlay(a.status(false)))
	}
	slices.SortFunc(out, func(x, y Status) int {
		switch {
		case x.ID < y.ID:
			return -1
		case x.ID > y.ID:
			return 1
		}
		return 0
	})
	return out
}

// Close stops every rule (draining within ctx, then aborting) without
// changing wanted states, and waits for every rule's actor to exit. Later
// calls return ErrClosed.
func (m *Manager) Close(ctx context.Context) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return ErrClosed
	}
	m.closed = true
	as := make([]*actor, 0, len(m.actors))
	for _, a := range m.actors {
		as = append(as, a)
	}
	m.mu.Unlock()
	for _, a := range as {
		a.post(command{kind: cmdShutdown, ctx: ctx})
	}
	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("close rule manager: %w", ctx.Err())
	}
}

func (m *Manager) spawnLocked(def *rule.Def, wanted catalog.RuleState, loadErr error) *actor {
	a := &actor{
		m:       m,
		id:      def.ID,
		quit:    make(chan struct{}),
		def:     def,
		wanted:  wanted,
		loadErr: loadErr,
	}
	if loadErr != nil {
		a.state, a.message = StateStoppedByError, loadErr.Error()
	}
	m.actors[def.ID] = a
	m.wg.Add(1) // done when the actor exits
	return a
}

func (m *Manager) remove(id string) {
	m.mu.Lock()
	delete(m.actors, id)
	m.mu.Unlock()
}
