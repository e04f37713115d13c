package sdk

import (
	"fmt"
	"strings"
	"time"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/function"
	"github.com/rekuiper/rekuiper/internal/sql/ast"
)

// FuncContext is what a SQL function may read from the rule evaluating it.
type FuncContext interface {
	// Now is the engine clock's time (virtual in `kuiper test`); functions
	// must not read the wall clock.
	Now() time.Time
	// Location is the configured time zone (basic.timezone, UTC unless set).
	Location() *time.Location
	// RuleID is the id of the rule evaluating the function.
	RuleID() string
	// State is the rule's user state, part of its checkpoints (restored
	// with its windows after a restart). It is shared by every extension of
	// the rule: prefix your keys. Calls of one rule's functions happen on
	// one goroutine at a time.
	State() api.State
}

// ScalarFunc computes one value from one row's argument values. Values are
// of the engine's value model: nil, int64, float64, string, bool, []byte,
// []any and map[string]any.
type ScalarFunc func(ctx FuncContext, args []any) (any, error)

// AggregateFunc computes one value over a group (a window, or GROUP BY
// group): cols[i] holds argument i's value for every row of the group, in
// order.
type AggregateFunc func(ctx FuncContext, cols [][]any) (any, error)

// Arg is one argument of a function call as written in the rule's SQL,
// given to FuncSpec.Check when the rule is created.
type Arg struct {
	// SQL is the argument's text (a field name, a literal, an expression).
	SQL string
	// Literal reports whether the argument is a constant: a number, string,
	// boolean or NULL literal. Value then holds it (int64, float64,
	// string, bool or nil).
	Literal bool
	Value   any
	// Field is the column name when the argument is a plain column
	// reference, "" otherwise.
	Field string
}

// FuncSpec describes a function's arguments. The engine checks them when a
// rule is created or validated, and refuses the rule with the error,
// positioned at the call.
type FuncSpec struct {
	// MinArgs and MaxArgs bound the number of arguments; MaxArgs -1 means
	// no upper bound. MinArgs = MaxArgs = 0 means no arguments.
	MinArgs, MaxArgs int
	// Check, when set, checks the arguments further (literal types,
	// allowed values).
	Check func(args []Arg) error
}

// RegisterScalar adds a scalar function. Names are case-insensitive; a
// built-in function's name is refused.
func (r *Registry) RegisterScalar(name string, spec FuncSpec, f ScalarFunc) error {
	if f == nil {
		return fmt.Errorf("register function %q: nil function", name)
	}
	d, err := funcDef(name, function.Scalar, spec)
	if err != nil {
		return err
	}
	d.Scalar = func(env function.Env, args []any) (v any, err error) {
		defer recoverTo(&err, "function", name)
		return f(funcContext{env}, args)
	}
	return r.funcs.Add(d)
}

// RegisterAggregate adds an aggregate function, usable wherever SUM is: in
// windows and with GROUP BY.
func (r *Registry) RegisterAggregate(name string, spec FuncSpec, f AggregateFunc) error {
	if f == nil {
		return fmt.Errorf("register function %q: nil function", name)
	}
	d, err := funcDef(name, function.Aggregate, spec)
	if err != nil {
		return err
	}
	d.Aggregate = func(env function.Env, cols [][]any) (v any, err error) {
		defer recoverTo(&err, "function", name)
		return f(funcContext{env}, cols)
	}
	return r.funcs.Add(d)
}

func funcDef(name string, k function.Kind, spec FuncSpec) (*function.Def, error) {
	if strings.TrimSpace(name) == "" {
		return nil, fmt.Errorf("register function: empty name")
	}
	if spec.MinArgs < 0 || (spec.MaxArgs >= 0 && spec.MaxArgs < spec.MinArgs) || spec.MaxArgs < -1 {
		return nil, fmt.Errorf("register function %q: bad argument bounds %d..%d", name, spec.MinArgs, spec.MaxArgs)
	}
	d := &function.Def{Name: strings.ToLower(name), Kind: k, MinArgs: spec.MinArgs, MaxArgs: spec.MaxArgs}
	if check := spec.Check; check != nil {
		d.Validate = func(args []ast.Expr) (err error) {
			defer recoverTo(&err, "function argument check", name)
			return check(publicArgs(args))
		}
	}
	return d, nil
}

func publicArgs(exprs []ast.Expr) []Arg {
	out := make([]Arg, len(exprs))
	for i, e := range exprs {
		a := Arg{SQL: e.String()}
		switch x := e.(type) {
		case *ast.IntegerLit:
			a.Literal, a.Value = true, x.Val
		case *ast.NumberLit:
			a.Literal, a.Value = true, x.Val
		case *ast.StringLit:
			a.Literal, a.Value = true, x.Val
		case *ast.BoolLit:
			a.Literal, a.Value = true, x.Val
		case *ast.NullLit:
			a.Literal = true
		case *ast.FieldRef:
			a.Field = x.Name
		}
		out[i] = a
	}
	return out
}

// funcContext adapts the engine's function environment.
type funcContext struct{ env function.Env }

func (c funcContext) Now() time.Time           { return c.env.Now() }
func (c funcContext) Location() *time.Location { return c.env.Location() }
func (c funcContext) RuleID() string           { return c.env.RuleID() }

func (c funcContext) State() api.State {
	if s, ok := c.env.(interface{ UserState() api.State }); ok {
		if st := s.UserState(); st != nil {
			return st
		}
	}
	return noState{}
}

// noState is the state of a rule evaluated without user state: every call
// fails, so a function never silently loses what it stores.
type noState struct{}

var errNoState = fmt.Errorf("user state is not available in this rule")

func (noState) Put(string, any) error                  { return errNoState }
func (noState) Get(string) (any, bool, error)          { return nil, false, errNoState }
func (noState) Delete(string) error                    { return errNoState }
func (noState) Increment(string, int64) (int64, error) { return 0, errNoState }
