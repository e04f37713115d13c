package eval

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rekuiper/rekuiper/internal/function"
	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/value"
)

// MultiColumnFuncs return an object whose keys become output columns.
var multiColumn = map[string]bool{"changed_cols": true}

// IsMultiColumn reports whether a call expands to several columns.
func IsMultiColumn(e ast.Expr) bool {
	call, ok := e.(*ast.Call)
	return ok && multiColumn[strings.ToLower(call.Name)]
}

// IsSRF reports whether e is a call to a set-returning function.
func (c *Compiler) IsSRF(e ast.Expr) bool {
	call, ok := e.(*ast.Call)
	if !ok {
		return false
	}
	d, ok := c.Funcs.Lookup(call.Name)
	return ok && d.Kind == function.SRF
}

func (c *Compiler) compileCall(n *ast.Call) (Expr, error) {
	name := strings.ToLower(n.Name)
	if e, ok, err := c.compileSpecial(name, n); ok || err != nil {
		return e, err
	}
	def, ok := c.Funcs.Lookup(name)
	if !ok {
		return nil, errAt(n, "function %s not found", n.Name)
	}
	if err := def.CheckArity(len(n.Args)); err != nil {
		return nil, errAt(n, "%v", err)
	}
	if def.Validate != nil {
		if err := def.Validate(n.Args); err != nil {
			return nil, errAt(n, "%v", err)
		}
	}
	if n.Over != nil && def.Kind != function.Analytic {
		return nil, errAt(n, "OVER is only allowed after analytic functions, found %s", n.Name)
	}
	star := make([]bool, len(n.Args))
	args := make([]Expr, len(n.Args))
	for i, a := range n.Args {
		if w, ok := a.(*ast.Wildcard); ok && w.Stream == "" && len(w.Except) == 0 && len(w.Replace) == 0 {
			star[i] = true
		}
		x, err := c.Compile(a)
		if err != nil {
			return nil, err
		}
		args[i] = x
	}
	if def.Name == "deduplicate" {
		// deduplicate returns rows: it gets the group's rows as an extra column.
		args = append(args, nil)
		star = append(star, true)
	}
	switch def.Kind {
	case function.Aggregate:
		c.hasAgg = true
		agg := def.Aggregate
		site := c.aggSite(n, def, args, star).Index
		collect := def.Name == "collect"
		return func(ctx *Ctx) (any, error) {
			if ctx.Group != nil && len(ctx.Group.Rows) == 0 {
				// A window with no rows: every aggregate is null, count(*)
				// included, as in eKuiper; collect's null is written out
				// (an empty list typed as a list, as eKuiper's is).
				if collect {
					return []any(nil), nil
				}
				return nil, nil
			}
			if ok, v, err := folded(ctx.Group, site); ok {
				return v, err
			}
			cols, err := evalGroupColumns(ctx, args, star)
			if err != nil {
				return nil, err
			}
			return agg(ctx.Env, cols)
		}, nil
	case function.Analytic:
		return c.compileAnalytic(n, def, args)
	}
	scalar, nilOnEmpty, emptyIsNil := def.Scalar, def.NilOnEmpty, def.EmptyIsNil
	return func(ctx *Ctx) (any, error) {
		vals := make([]any, len(args))
		for i, a := range args {
			v, err := a(ctx)
			if err != nil {
				return nil, err
			}
			vals[i] = v
		}
		if nilOnEmpty && slices.ContainsFunc(vals, emptyArg) {
			return nil, nil
		}
		if emptyIsNil {
			for i, v := range vals {
				if emptyArg(v) {
					vals[i] = nil
				}
			}
		}
		return scalar(ctx.Env, vals)
	}, nil
}

// compileSpecial handles the functions that read engine state rather than
// their arguments.
func (c *Compiler) compileSpecial(name string, n *ast.Call) (Expr, bool, error) {
	noArgs := func(f Expr) (Expr, bool, error) {
		if len(n.Args) != 0 {
			return nil, true, errAt(n, "the arguments for %s should be 0", name)
		}
		return f, true, nil
	}
	switch name {
	case "meta", "mqtt":
		e, err := c.compileMeta(n)
		return e, true, err
	case "window_start":
		return noArgs(func(ctx *Ctx) (any, error) {
			if !ctx.HasWindow {
				return nil, nil
			}
			return ctx.Window.Start, nil
		})
	case "window_end":
		return noArgs(func(ctx *Ctx) (any, error) {
			if !ctx.HasWindow {
				return nil, nil
			}
			return ctx.Window.End, nil
		})
	case "window_trigger":
		return noArgs(func(ctx *Ctx) (any, error) {
			if !ctx.HasWindow {
				return nil, nil
			}
			return ctx.Window.Trigger, nil
		})
	case "event_time":
		return noArgs(func(ctx *Ctx) (any, error) {
			// In an aggregate over a window, the group's event time is the
			// window's end.
			if ctx.Group != nil && ctx.HasWindow {
				return ctx.Window.End, nil
			}
			if ctx.Row == nil {
				return nil, nil
			}
			return ctx.Row.Time(), nil
		})
	case "row_number":
		return func(ctx *Ctx) (any, error) { return ctx.RowNumber, nil }, true, nil
	case "rule_id":
		return noArgs(func(ctx *Ctx) (any, error) { return ctx.Rule.RuleID, nil })
	case "rule_start":
		return noArgs(func(ctx *Ctx) (any, error) { return ctx.Rule.StartTime, nil })
	case "last_hit_count":
		return noArgs(func(ctx *Ctx) (any, error) { return ctx.Rule.HitCount, nil })
	case "last_hit_time":
		return noArgs(func(ctx *Ctx) (any, error) { return ctx.Rule.HitTime, nil })
	case "last_agg_hit_count":
		return noArgs(func(ctx *Ctx) (any, error) { return ctx.Rule.AggHitCount, nil })
	case "last_agg_hit_time":
		return noArgs(func(ctx *Ctx) (any, error) { return ctx.Rule.AggHitTime, nil })
	case "props":
		if len(n.Args) != 1 {
			return nil, true, errAt(n, "the arguments for props should be 1")
		}
		// No global properties are configured yet: every key is missing.
		return func(*Ctx) (any, error) {
			return nil, fmt.Errorf("call func props error: property %s not found", n.Args[0])
		}, true, nil
	}
	return nil, false, nil
}

// compileMeta compiles meta(key), meta(s.key), meta(key->sub), meta(*).
func (c *Compiler) compileMeta(n *ast.Call) (Expr, error) {
	if len(n.Args) != 1 {
		return nil, errAt(n, "the arguments for %s should be 1", n.Name)
	}
	var path []string
	stream := ""
	var walk func(e ast.Expr) error
	walk = func(e ast.Expr) error {
		switch x := e.(type) {
		case *ast.Wildcard:
			stream = x.Stream
			path = nil
			return nil
		case *ast.FieldRef:
			if x.Stream != "" {
				if s, ok := c.Streams[x.Stream]; ok {
					stream = s
					path = append(path, x.Name)
					return nil
				}
				path = append(path, x.Stream, x.Name)
				return nil
			}
			path = append(path, x.Name)
			return nil
		case *ast.BinaryExpr:
			if err := walk(x.LHS); err != nil {
				return err
			}
			return walk(x.RHS)
		}
		return errAt(e, "expected a metadata key, found %s", e)
	}
	if err := walk(n.Args[0]); err != nil {
		return nil, err
	}
	if _, all := n.Args[0].(*ast.Wildcard); all {
		return func(ctx *Ctx) (any, error) {
			m := ctx.Row.MetaAll(stream)
			if m == nil {
				return nil, nil
			}
			return copyMap(m), nil
		}, nil
	}
	return func(ctx *Ctx) (any, error) {
		v, _ := ctx.Row.Meta(stream, path[0])
		for _, k := range path[1:] {
			v = arrow(v, k)
		}
		return v, nil
	}, nil
}

// AnalyticSite is one analytic call in the rule, with its own state per
// partition.
type AnalyticSite struct {
	ID        int
	key       string
	fn        function.AnalyticFunc
	args      []Expr
	partition []Expr
	when      Expr
	extra     []any // appended arguments (changed_cols column names)
	store     *AnalyticStore
	keyBuf    []byte
}

// Eval computes the site for the current row, updating its state, and caches
// the result on the row. Calling it again for the same row returns the
// cached value.
func (s *AnalyticSite) Eval(ctx *Ctx) (any, error) {
	if v, ok := ctx.cacheGet(s.key); ok {
		return v, nil
	}
	vals := make([]any, len(s.args), len(s.args)+len(s.extra))
	for i, a := range s.args {
		v, err := a(ctx)
		if err != nil {
			return nil, err
		}
		vals[i] = v
	}
	vals = append(vals, s.extra...)
	valid := true
	if s.when != nil {
		// A WHEN that fails (comparing a string with a number, say) leaves
		// the row accepted, as eKuiper does; nil or false rejects it.
		if w, err := s.when(ctx); err == nil {
			b, _ := w.(bool)
			valid = b
		}
	}
	pkey := ""
	if len(s.partition) > 0 {
		// Typed encoding: "1" and 1 are different partitions.
		s.keyBuf = s.keyBuf[:0]
		for _, p := range s.partition {
			v, err := p(ctx)
			if err != nil {
				return nil, err
			}
			s.keyBuf = value.AppendValue(s.keyBuf, v)
		}
		pkey = string(s.keyBuf)
	}
	st := s.store.state(s.ID, pkey)
	v, err := s.fn(ctx.Env, st, valid, vals)
	if err != nil {
		return nil, err
	}
	ctx.cachePut(s.key, v)
	return v, nil
}

func (c *Compiler) compileAnalytic(n *ast.Call, def *function.Def, args []Expr) (Expr, error) {
	site := &AnalyticSite{ID: len(c.sites) + c.projected, fn: def.Analytic, args: args, store: c.Analytic}
	site.key = fmt.Sprintf("$analytic:%d", site.ID)
	if multiColumn[def.Name] {
		names := make([]any, 0, len(n.Args))
		for _, a := range n.Args[min(2, len(n.Args)):] {
			names = append(names, columnName(a))
		}
		site.extra = []any{names}
	}
	if n.Over != nil {
		for _, p := range n.Over.Partition {
			x, err := c.Compile(p)
			if err != nil {
				return nil, err
			}
			site.partition = append(site.partition, x)
		}
		if n.Over.When != nil {
			x, err := c.Compile(n.Over.When)
			if err != nil {
				return nil, err
			}
			site.when = x
		}
	}
	if multiColumn[def.Name] {
		// changed_cols compares the rows the SELECT outputs, so it is not
		// evaluated before WHERE with the other analytic functions.
		c.projected++
		return site.Eval, nil
	}
	c.sites = append(c.sites, site)
	return site.Eval, nil
}

func columnName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.FieldRef:
		return x.Name
	case *ast.BinaryExpr:
		return columnName(x.RHS)
	}
	return e.String()
}

// AnalyticStore holds analytic function state: site id → partition → state.
type AnalyticStore struct {
	States map[int]map[string]function.State
}

// NewAnalyticStore returns an empty store.
func NewAnalyticStore() *AnalyticStore {
	return &AnalyticStore{States: map[int]map[string]function.State{}}
}

func (a *AnalyticStore) state(id int, pkey string) function.State {
	parts, ok := a.States[id]
	if !ok {
		parts = map[string]function.State{}
		a.States[id] = parts
	}
	st, ok := parts[pkey]
	if !ok {
		st = function.State{}
		parts[pkey] = st
	}
	return st
}

// Truthy evaluates a condition result: true only for bool true; nil is false;
// any other type is an error, as in eKuiper's WHERE.
func Truthy(v any) (bool, error) {
	switch b := v.(type) {
	case bool:
		return b, nil
	case nil:
		return false, nil
	}
	return false, fmt.Errorf("invalid condition that returns non-bool value %s", nonBoolDesc(v))
}

func nonBoolDesc(v any) string {
	if i, ok := v.(int64); ok {
		return fmt.Sprintf("int(%d)", i)
	}
	return value.Describe(v)
}

// emptyArg reports nil, an empty array and an empty object.
func emptyArg(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}
