package engine

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/eval"
	"github.com/rekuiper/rekuiper/internal/function"
	"github.com/rekuiper/rekuiper/internal/operator"
	"github.com/rekuiper/rekuiper/internal/panics"
	"github.com/rekuiper/rekuiper/internal/planner"
	"github.com/rekuiper/rekuiper/internal/rule"
	"github.com/rekuiper/rekuiper/internal/runtime"
	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/sql/parser"
	"github.com/rekuiper/rekuiper/internal/tracing"
)

// Env is the function environment of one rule.
type Env struct {
	Clock clock.Clock
	Loc   *time.Location
	ID    string
	// State is the rule's user state for extension functions; nil when the
	// rule has none.
	State api.State
}

func (e *Env) Now() time.Time           { return e.Clock.Now().In(e.Loc) }
func (e *Env) Location() *time.Location { return e.Loc }
func (e *Env) RuleID() string           { return e.ID }

// UserState is the rule's user state (nil when it has none); extension
// functions reach it through the public SDK.
func (e *Env) UserState() api.State { return e.State }

// Spec is everything needed to build a rule.
type Spec struct {
	ID      string
	SQL     string
	Options rule.Options
	// Defs maps stream and table names to their definitions.
	Defs     map[string]*ast.CreateStreamStmt
	Funcs    *function.Registry
	Clock    clock.Clock
	Location *time.Location
	// IgnoreCase matches column names case-insensitively (see
	// planner.Options).
	IgnoreCase bool
	Sinks      []runtime.Sink
	Tracker    *runtime.Tracker
	// Inputs is the number of sources that will inject barriers (default 1).
	Inputs int
	// OnSnapshot and OnSinkAck connect the rule to its checkpoint
	// coordinator; both may be nil.
	OnSnapshot func(*runtime.Snapshot)
	OnSinkAck  func(id uint64, sink int)
	// UserState, when set, is the extensions' state checkpointed with the rule.
	UserState operator.Stateful
	// OnPanic is told when an operator or sink goroutine panicked (see
	// runtime.Config.OnPanic); Logger receives the panic's stack.
	OnPanic func(*panics.Error)
	Logger  *slog.Logger
	// Tap receives every emission before the sinks (runtime.Config.Tap).
	Tap func(rows []map[string]any)
	// Tapping reports whether the tap is watched (runtime.Config.Tapping).
	Tapping func() bool
	// EndsDeliveries: the rule's records come from stream subscriptions,
	// which call Rule.EndDelivery after each delivery
	// (runtime.Config.EndsDeliveries).
	EndsDeliveries bool
	// Trace is the rule's tracing switch; nil never traces.
	Trace *tracing.Rule
}

// Built is a planned rule ready to start.
type Built struct {
	Plan *planner.Plan
	Rule *runtime.Rule
	Stmt *ast.SelectStmt
}

// Build parses and plans the rule and wires its runtime (not started).
func Build(s Spec) (*Built, error) {
	stmt, err := parser.ParseSelect(s.SQL)
	if err != nil {
		return nil, fmt.Errorf("parse rule %s: %w", s.ID, err)
	}
	return BuildStmt(s, stmt)
}

// BuildStmt is Build for an already parsed statement.
func BuildStmt(s Spec, stmt *ast.SelectStmt) (*Built, error) {
	loc := s.Location
	if loc == nil {
		loc = time.UTC
	}
	plan, err := planner.Build(stmt, s.Defs, planner.Options{
		IsEventTime:   s.Options.IsEventTime,
		LateTolerance: time.Duration(s.Options.LateTolerance),
		SendNilField:  s.Options.SendNilField,
		SendMeta:      s.Options.SendMetaToSink,
		IgnoreCase:    s.IgnoreCase,
	}, s.Funcs, loc)
	if err != nil {
		return nil, fmt.Errorf("plan rule %s: %w", s.ID, err)
	}
	stats := &eval.RuleStats{RuleID: s.ID, StartTime: clock.NowMilli(s.Clock)}
	state := map[string]operator.Stateful{"analytic": plan.Analytic, "counters": stats}
	userState, _ := s.UserState.(api.State)
	if s.UserState != nil {
		state["user"] = s.UserState
	}
	r := runtime.New(runtime.Config{
		ID:             s.ID,
		Ops:            plan.Ops,
		Sinks:          s.Sinks,
		Clock:          s.Clock,
		Env:            &Env{Clock: s.Clock, Loc: loc, ID: s.ID, State: userState},
		Stats:          stats,
		SendError:      s.Options.SendError,
		BufferLength:   s.Options.BufferLength,
		Tracker:        s.Tracker,
		Inputs:         s.Inputs,
		Qos:            s.Options.Qos,
		State:          state,
		OnSnapshot:     s.OnSnapshot,
		OnSinkAck:      s.OnSinkAck,
		OnPanic:        s.OnPanic,
		Logger:         s.Logger,
		Tap:            s.Tap,
		Tapping:        s.Tapping,
		EndsDeliveries: s.EndsDeliveries,
		Trace:          s.Trace,
		KeepsValues:    keepsValues(stmt, s.Funcs),
	})
	return &Built{Plan: plan, Rule: r, Stmt: stmt}, nil
}

// ParseDefs parses CREATE STREAM/TABLE statements into a name → definition map.
func ParseDefs(stmts []string) (map[string]*ast.CreateStreamStmt, error) {
	defs := map[string]*ast.CreateStreamStmt{}
	for _, sql := range stmts {
		st, err := parser.ParseStatement(sql)
		if err != nil {
			return nil, fmt.Errorf("parse stream definition: %w", err)
		}
		cs, ok := st.(*ast.CreateStreamStmt)
		if !ok {
			return nil, fmt.Errorf("expected CREATE STREAM or CREATE TABLE, found %s", st)
		}
		defs[cs.Name] = cs
	}
	return defs, nil
}

// keepsValues reports whether an expression of the rule may keep a value it
// is given beyond the record: it calls a function that is not built in
// (an extension or JavaScript function may store its arguments), an
// analytic or aggregate function, or a function over a window (OVER).
// Such a rule never lets the stream recycle the memory of the records it
// was given (runtime.Config.KeepsValues). The user state (Spec.UserState)
// is reached only by extension functions, which make the rule keep.
func keepsValues(stmt *ast.SelectStmt, funcs *function.Registry) bool {
	exprs := append(rowExprs(stmt), stmt.Dimensions...)
	for _, j := range stmt.Joins {
		exprs = append(exprs, j.On)
	}
	keeps := false
	for _, e := range exprs {
		if e == nil {
			continue
		}
		ast.Walk(e, func(n ast.Expr) bool {
			c, ok := n.(*ast.Call)
			if !ok {
				return !keeps
			}
			if funcs == nil {
				keeps = true
				return false
			}
			d, found := funcs.Lookup(c.Name)
			if !found || !d.Builtin || d.Kind != function.Scalar || c.Over != nil {
				keeps = true
			}
			return !keeps
		})
	}
	return keeps
}
