package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/rekuiper/rekuiper/internal/checkpoint"
	"github.com/rekuiper/rekuiper/internal/rule"
	"github.com/rekuiper/rekuiper/internal/rulemgr"
	"github.com/rekuiper/rekuiper/internal/runtime"
	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/sql/parser"
	"github.com/rekuiper/rekuiper/internal/userstate"
)

var _ rulemgr.Runner = (*Engine)(nil)

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
func (rn *Engine) Validate(ctx context.Context, def *rule.Def) error {
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

func (rn *Engine) prepare(def *rule.Def) (*prepared, error) {
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
func (rn *Engine) streamDef(ruleID, name string) (*ast.CreateStreamStmt, string, error) {
	s, err := rn.cfg.Catalog.Stream(name)
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

func (rn *Engine) spec(def *rule.Def, p *prepared, coord *checkpoint.Coordinator) Spec {
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
		ID: def.ID, SQL: def.SQL, Options: def.Options, Defs: p.defs, Funcs: rn.cfg.Funcs,
		Clock: rn.cfg.Clock, Location: rn.cfg.Location, IgnoreCase: rn.cfg.IgnoreCase, Sinks: sinks, Inputs: inputs, UserState: p.state,
	}
	s.EndsDeliveries = true // running.consumer wires Delivered
	if rn.cfg.Taps != nil {
		id := def.ID
		s.Tap = func(rows []map[string]any) { rn.cfg.Taps.Publish(id, rows) }
		s.Tapping = rn.cfg.Taps.Active
	}
	if coord != nil {
		s.OnSnapshot = coord.OnSnapshot
		s.OnSinkAck = coord.OnSinkAck
	}
	return s
}

// Start runs the rule. ctx covers connecting the sinks.
func (rn *Engine) Start(ctx context.Context, def *rule.Def) (rulemgr.Running, error) {
	p, err := rn.prepare(def)
	if err != nil {
		return nil, err
	}
	rr := &running{rn: rn, def: def, sinks: p.sinks, done: make(chan struct{}), logger: rn.cfg.Logger.With("rule", def.ID)}
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
	if def.Options.Qos.Checkpointed() && rn.cfg.Checkpoints != nil {
		if err := rn.waitStorage(ctx, def.ID, rr.logger); err != nil {
			rr.closeSinks()
			return nil, fmt.Errorf("restore rule %s: %w", def.ID, err)
		}
		if rn.cfg.ClusterNode != "" {
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
			interval = rn.cfg.DefaultCheckpointInterval
		}
		coord = checkpoint.NewCoordinator(checkpoint.Config{
			RuleID: def.ID, Fingerprint: p.fp, Interval: interval, Store: rn.cfg.Checkpoints,
			Clock: rn.cfg.Clock, Logger: rr.logger, Sinks: len(p.sinks), FirstID: first,
		})
		rr.coord = coord
	}
	spec := rn.spec(def, p, coord)
	spec.OnPanic, spec.Logger = rr.fail, rn.cfg.Logger
	// Each run of a rule starts untraced, as in eKuiper.
	spec.Trace = rn.cfg.Tracing.Rule(def.ID)
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
