package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/checkpoint"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/config"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/format"
	"github.com/rekuiper/rekuiper/internal/function"
	"github.com/rekuiper/rekuiper/internal/rule"
	"github.com/rekuiper/rekuiper/internal/rulemgr"
	"github.com/rekuiper/rekuiper/internal/runtime"
	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/sql/parser"
	"github.com/rekuiper/rekuiper/internal/stream"
	"github.com/rekuiper/rekuiper/internal/tap"
	"github.com/rekuiper/rekuiper/internal/tracing"
	"github.com/rekuiper/rekuiper/internal/userstate"
)

// Runner runs the daemon's rules: it resolves stream definitions from the
// catalog, builds sinks from actions, plans the rule, restores its last
// checkpoint (qos >= 1), attaches sources and starts the checkpoint
// coordinator. It implements rulemgr.Runner.
type Runner struct {
	Catalog  *catalog.Catalog
	Registry *connector.Registry
	Deps     connector.Deps
	Paths    config.Paths
	Environ  []string
	Clock    clock.Clock
	Location *time.Location
	// IgnoreCase matches column names case-insensitively (kuiper.yaml
	// basic.ignoreCase).
	IgnoreCase bool
	Logger     *slog.Logger
	Funcs      *function.Registry
	Streams    *stream.Manager
	// Checkpoints keeps the checkpoints of rules at qos >= 1: the local
	// files of the data folder, or the cluster's shared database.
	Checkpoints checkpoint.Storage
	// DefaultCheckpointInterval applies when a rule's is zero.
	DefaultCheckpointInterval time.Duration
	// SinkDefaults are the sink cache defaults of kuiper.yaml `sink:`.
	SinkDefaults config.SinkDefaults
	// NodeID identifies this daemon in names kept by other systems (the
	// derived MQTT client id of a rule at qos >= 1); it must be the same
	// after a restart. Empty uses the data folder's path.
	NodeID string
	// ClusterNode is set when several nodes share the rules and their
	// checkpoints: the offsets of local source logs are then recorded
	// under this node's id, so that another node does not rewind its own
	// log to them.
	ClusterNode string
	// SessionScope, when set, replaces NodeID in the derived MQTT client
	// id of a rule at qos >= 1: on a cluster it names the cluster, so the
	// node that takes a rule over resumes the broker session its
	// previous node left.
	SessionScope string
	// Schemas resolves the SCHEMAID of protobuf streams and sinks; nil
	// refuses FORMAT="protobuf".
	Schemas format.Schemas
	// Taps, when set, receives every running rule's emissions for the
	// live output tap (GET /rules/{id}/tap).
	Taps *tap.Hub
	// Tracing records the data traces of the rules it is turned on for;
	// nil traces nothing.
	Tracing *tracing.Service

	memTables memoryTables
	confFiles config.ConfKeyFiles // etc/ confKey files, parsed once per change
}

var _ rulemgr.Runner = (*Runner)(nil)

// ErrInvalid marks definitions that do not validate (rule SQL, streams,
// actions); the REST layer answers 422.
var ErrInvalid = rule.ErrInvalid

type prepared struct {
	stmt  *ast.SelectStmt
	defs  map[string]*ast.CreateStreamStmt
	sinks []*sinkNode
	fp    string
	state *userstate.Store
}

// Validate plans the rule and checks its actions without running it.
func (rn *Runner) Validate(ctx context.Context, def *rule.Def) error {
	p, err := rn.prepare(def)
	if err != nil {
		return err
	}
	_, err = BuildStmt(rn.spec(def, p, nil), p.stmt)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return nil
}

func (rn *Runner) prepare(def *rule.Def) (*prepared, error) {
	stmt, names, err := parseRule(def)
	if err != nil {
		return nil, err
	}
	p := &prepared{stmt: stmt, defs: map[string]*ast.CreateStreamStmt{}, state: userstate.New()}
	h := sha256.New()
	fmt.Fprintf(h, "sql:%s\n", def.SQL)
	for _, n := range names {
		cs, sql, err := rn.streamDef(def.ID, n)
		if err != nil {
			return nil, err
		}
		if err := rn.CheckStream(context.Background(), cs); err != nil {
			return nil, fmt.Errorf("%w: rule %s reads %w", ErrInvalid, def.ID, err)
		}
		p.defs[n] = cs
		fmt.Fprintf(h, "stream:%s\n", sql)
	}
	o := def.Options
	fmt.Fprintf(h, "opts:%v/%v/%v/%v/%v\n", o.IsEventTime, time.Duration(o.LateTolerance), o.SendError, o.SendNilField, o.SendMetaToSink)
	if def.Task != nil && def.Task.Generation != "" {
		// A new first stage of a repartitioned rule starts both stages
		// afresh (rule.Repartition).
		fmt.Fprintf(h, "generation:%s\n", def.Task.Generation)
	}
	p.fp = hex.EncodeToString(h.Sum(nil))
	for i, a := range def.Actions {
		sn, err := rn.buildSink(def.ID, def.Options.Qos, i, a.Type, a.Props, p.state)
		if err != nil {
			return nil, fmt.Errorf("%w: rule %s: %w", ErrInvalid, def.ID, err)
		}
		p.sinks = append(p.sinks, sn)
	}
	return p, nil
}

// parseRule parses a rule's SQL and returns the streams and tables it
// reads, in FROM/JOIN order.
func parseRule(def *rule.Def) (*ast.SelectStmt, []string, error) {
	stmt, err := parser.ParseSelect(def.SQL)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: parse rule %s: %w", ErrInvalid, def.ID, err)
	}
	names := []string{stmt.From.Name}
	for _, j := range stmt.Joins {
		names = append(names, j.Name)
	}
	return stmt, names, nil
}

// streamDef reads the definition of stream or table name, read by rule
// ruleID, from the catalog, and returns it with its SQL.
func (rn *Runner) streamDef(ruleID, name string) (*ast.CreateStreamStmt, string, error) {
	s, err := rn.Catalog.Stream(name)
	if err != nil {
		return nil, "", fmt.Errorf("%w: rule %s reads stream %s: %w", ErrInvalid, ruleID, name, err)
	}
	st, err := parser.ParseStatement(s.SQL)
	if err != nil {
		return nil, "", fmt.Errorf("%w: stream %s: %w", ErrInvalid, name, err)
	}
	cs, ok := st.(*ast.CreateStreamStmt)
	if !ok {
		return nil, "", fmt.Errorf("%w: stream %s is not a CREATE STREAM statement", ErrInvalid, name)
	}
	return cs, s.SQL, nil
}

func (rn *Runner) spec(def *rule.Def, p *prepared, coord *checkpoint.Coordinator) Spec {
	sinks := make([]runtime.Sink, len(p.sinks))
	for i, s := range p.sinks {
		sinks[i] = s
	}
	inputs := 0
	for _, d := range p.defs {
		if d.Kind == ast.KindStream {
			inputs++
		}
	}
	s := Spec{
		ID: def.ID, SQL: def.SQL, Options: def.Options, Defs: p.defs, Funcs: rn.Funcs,
		Clock: rn.Clock, Location: rn.Location, IgnoreCase: rn.IgnoreCase, Sinks: sinks, Inputs: inputs, UserState: p.state,
	}
	s.EndsDeliveries = true // running.consumer wires Delivered
	if rn.Taps != nil {
		id := def.ID
		s.Tap = func(rows []map[string]any) { rn.Taps.Publish(id, rows) }
		s.Tapping = rn.Taps.Active
	}
	if coord != nil {
		s.OnSnapshot = coord.OnSnapshot
		s.OnSinkAck = coord.OnSinkAck
	}
	return s
}

// Start runs the rule. ctx covers connecting the sinks.
func (rn *Runner) Start(ctx context.Context, def *rule.Def) (rulemgr.Running, error) {
	p, err := rn.prepare(def)
	if err != nil {
		return nil, err
	}
	rr := &running{rn: rn, def: def, sinks: p.sinks, done: make(chan struct{}), logger: rn.Logger.With("rule", def.ID)}
	for _, s := range p.sinks {
		s.fail = rr.fail
	}
	for _, s := range p.sinks {
		if err := s.sink.Connect(ctx); err != nil {
			rr.closeSinks()
			return nil, fmt.Errorf("connect sink %s of rule %s: %w", s.name, def.ID, err)
		}
	}
	var coord *checkpoint.Coordinator
	var restored *checkpoint.Checkpoint
	if def.Options.Qos.Checkpointed() && rn.Checkpoints != nil {
		if err := rn.waitStorage(ctx, def.ID, rr.logger); err != nil {
			rr.closeSinks()
			return nil, fmt.Errorf("restore rule %s: %w", def.ID, err)
		}
		if rn.ClusterNode != "" {
			for _, s := range p.sinks {
				if s.cache != nil {
					rr.logger.Warn("sink cache is local: on a cluster, what it holds when this node dies is delivered only once the rule runs here again (see docs/cluster.md)", "sink", s.name)
				}
			}
		}
		var first uint64
		restored, first, err = rn.restorePoint(ctx, def.ID, p.fp, p.sinks, rr.logger)
		if err != nil {
			rr.closeSinks()
			return nil, fmt.Errorf("restore rule %s: %w", def.ID, err)
		}
		interval := time.Duration(def.Options.CheckpointInterval)
		if interval <= 0 {
			interval = rn.DefaultCheckpointInterval
		}
		coord = checkpoint.NewCoordinator(checkpoint.Config{
			RuleID: def.ID, Fingerprint: p.fp, Interval: interval, Store: rn.Checkpoints,
			Clock: rn.Clock, Logger: rr.logger, Sinks: len(p.sinks), FirstID: first,
		})
		rr.coord = coord
	}
	spec := rn.spec(def, p, coord)
	spec.OnPanic, spec.Logger = rr.fail, rn.Logger
	// Each run of a rule starts untraced, as in eKuiper.
	spec.Trace = rn.Tracing.Rule(def.ID)
	spec.Trace.Disable()
	built, err := BuildStmt(spec, p.stmt)
	if err != nil {
		rr.closeSinks()
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	rr.built = built
	if restored != nil {
		if err := built.Rule.Restore(&runtime.Snapshot{ID: restored.ID, Ops: restored.Ops, State: restored.State}); err != nil {
			rr.logger.Warn("checkpoint not restored; starting without state", "err", err)
			restored = nil
		} else {
			rr.logger.Info("restored checkpoint", "id", restored.ID)
		}
	}
	if err := rr.connectLookups(ctx); err != nil {
		_ = rr.closeLookups(context.Background())
		rr.closeSinks()
		return nil, err
	}
	built.Rule.Start()
	if err := rr.attach(p, restored); err != nil {
		rr.shutdown(context.Background())
		return nil, err
	}
	if coord != nil {
		coord.Start()
	}
	return rr, nil
}

// waitStorage asks checkpoint storage that can be unreachable (the
// cluster's database) until it answers or ctx ends, and returns its last
// error then: a rule does not start without its state. A node that takes
// a rule over during a short database outage thus waits for it; a long
// one also costs the node the rule's lease, and the rule is placed again
// once the database answers.
func (rn *Runner) waitStorage(ctx context.Context, id string, logger *slog.Logger) error {
	c, ok := rn.Checkpoints.(interface{ Check(ruleID string) error })
	if !ok {
		return nil
	}
	for warned := false; ; warned = true {
		err := c.Check(id)
		if err == nil {
			return nil
		}
		if !warned {
			logger.Warn("checkpoint storage does not answer; waiting for it before restoring", "err", err)
		}
		if !clock.Sleep(ctx, rn.Clock, 500*time.Millisecond) {
			return err
		}
	}
}

// latestCheckpoint loads the rule's newest checkpoint; a checkpoint of an
// earlier definition of the rule is discarded (state does not survive a
// change of the rule or its streams).
func (rn *Runner) latestCheckpoint(id, fp string, logger *slog.Logger) (*checkpoint.Checkpoint, error) {
	cp, err := rn.Checkpoints.Latest(id, fp)
	switch {
	case err == nil:
		return cp, nil
	case errors.Is(err, checkpoint.ErrUnavailable):
		return nil, err
	case errors.Is(err, checkpoint.ErrMismatch):
		logger.Info("rule definition changed: discarding its checkpoints")
		if err := rn.Checkpoints.Delete(id); err != nil {
			logger.Warn("discard checkpoints", "err", err)
		}
	case !errors.Is(err, checkpoint.ErrNotFound):
		logger.Warn("checkpoint unreadable; starting without state", "err", err)
	}
	return nil, nil
}

// restorePoint picks the checkpoint to restore, and the id checkpoint
// numbering must continue after.
//
// Without transactional sinks it is the newest checkpoint. With them it is
// the newest checkpoint every transactional sink committed: the store's
// marker says all of them committed it; a sink that keeps its own
// bookkeeping (LastCommitted: the SQL and Kafka sinks) may know a newer
// one. With several transactional sinks a crash between their commits
// leaves them at different checkpoints; restoring the oldest replays the
// others' newest results a second time (at least once) rather than lose
// the rest's.
//
// Numbering continues after the newest id any sink committed, even when
// nothing is restored (a checkpoint lost or of another definition, a rule
// re-created with the same id): a sink's bookkeeping then never meets an
// id it has already committed.
//
// Storage that does not answer (checkpoint.ErrUnavailable) is an error:
// the rule does not start rather than start without its state.
func (rn *Runner) restorePoint(ctx context.Context, id, fp string, sinks []*sinkNode, logger *slog.Logger) (*checkpoint.Checkpoint, uint64, error) {
	marker, _ := rn.Checkpoints.Committed(id)
	floor := marker
	txn := false
	var target uint64
	for _, s := range sinks {
		if _, ok := s.sink.(transactional); !ok {
			continue
		}
		committed := marker
		if lc, ok := s.sink.(interface {
			LastCommitted(context.Context) (uint64, error)
		}); ok {
			if n, err := lc.LastCommitted(ctx); err != nil {
				logger.Warn("sink bookkeeping unreadable; using the checkpoint store's marker", "sink", s.name, "err", err)
			} else {
				committed = max(committed, n)
			}
		}
		floor = max(floor, committed)
		if !txn || committed < target {
			target = committed
		}
		txn = true
	}
	if !txn {
		cp, err := rn.latestCheckpoint(id, fp, logger)
		if cp != nil {
			floor = max(floor, cp.ID)
		}
		return cp, floor, err
	}
	if target == 0 {
		logger.Info("no committed checkpoint: starting without state")
		return nil, floor, nil
	}
	cp, err := rn.Checkpoints.Load(id, fp, target)
	if errors.Is(err, checkpoint.ErrUnavailable) {
		return nil, floor, err
	}
	if err != nil {
		logger.Warn("committed checkpoint not restorable; starting without state", "id", target, "err", err)
		return nil, floor, nil
	}
	return cp, floor, nil
}

// Cleanup removes what a deleted rule leaves on disk (its checkpoints).
func (rn *Runner) Cleanup(ruleID string) error {
	if rn.Checkpoints == nil {
		return nil
	}
	return rn.Checkpoints.Delete(ruleID)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func propsKey(typ string, props map[string]any) string {
	b, _ := json.Marshal(props)
	return typ + "|" + string(b)
}
