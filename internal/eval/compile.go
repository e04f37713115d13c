package eval

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/rekuiper/rekuiper/internal/function"
	"github.com/rekuiper/rekuiper/internal/row"
	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/sql/token"
	"github.com/rekuiper/rekuiper/internal/value"
)

// Error is a compile error with the position of the offending node.
type Error struct {
	Pos token.Pos
	Msg string
}

func (e *Error) Error() string { return e.Pos.String() + ": " + e.Msg }

func errAt(n ast.Node, format string, args ...any) error {
	return &Error{Pos: n.Pos(), Msg: fmt.Sprintf(format, args...)}
}

// Compiler turns expressions of one rule into closures. It is not safe for
// concurrent use; compile everything, then evaluate from one goroutine.
type Compiler struct {
	Funcs *function.Registry
	// Streams maps every stream name and alias in FROM/JOIN to its stream.
	Streams map[string]string
	// Aliases maps SELECT aliases to their expressions.
	Aliases map[string]ast.Expr
	// Analytic holds the state of every analytic call site compiled.
	Analytic *AnalyticStore
	// Layouts maps typed streams to their declared fields: a declared
	// column compiles to a read of its slot (see column).
	Layouts map[string]*row.Layout
	// IgnoreCase matches column names case-insensitively when no column
	// has exactly the name read (kuiper.yaml basic.ignoreCase).
	IgnoreCase bool

	aliasExprs map[string]Expr
	compiling  map[string]bool
	sites      []*AnalyticSite
	// projected counts the analytic sites evaluated only where the row is
	// projected (changed_cols), after WHERE, as eKuiper evaluates them.
	projected int
	hasAgg    bool
	aggSites  []*AggSite
	aggIndex  map[string]*AggSite
}

// NewCompiler returns a compiler over funcs for the given streams.
func NewCompiler(funcs *function.Registry, streams map[string]string, aliases map[string]ast.Expr) *Compiler {
	if aliases == nil {
		aliases = map[string]ast.Expr{}
	}
	return &Compiler{
		Funcs:      funcs,
		Streams:    streams,
		Aliases:    aliases,
		Analytic:   NewAnalyticStore(),
		aliasExprs: map[string]Expr{},
		compiling:  map[string]bool{},
	}
}

// Sites returns the analytic call sites in compile order; the analytic
// operator evaluates them for every row before filtering.
func (c *Compiler) Sites() []*AnalyticSite { return c.sites }

// HasAggregate reports whether any compiled expression used an aggregate.
func (c *Compiler) HasAggregate() bool { return c.hasAgg }

// IsAggregate reports whether e contains an aggregate call outside an alias.
func (c *Compiler) IsAggregate(e ast.Expr) bool {
	found := false
	seen := map[string]bool{}
	var visit func(ast.Expr)
	visit = func(e ast.Expr) {
		ast.Walk(e, func(n ast.Expr) bool {
			switch x := n.(type) {
			case *ast.Call:
				if d, ok := c.Funcs.Lookup(x.Name); ok && d.Kind == function.Aggregate {
					found = true
					return false
				}
			case *ast.FieldRef:
				if x.Stream == "" && !seen[x.Name] {
					if ae, ok := c.Aliases[x.Name]; ok {
						seen[x.Name] = true
						visit(ae)
					}
				}
			}
			return true
		})
	}
	visit(e)
	return found
}

// CompileAlias compiles the expression of a SELECT alias, within which the
// alias's own name refers to the column of that name.
func (c *Compiler) CompileAlias(name string) (Expr, error) {
	if e, ok := c.aliasExprs[name]; ok {
		return e, nil
	}
	ae := c.Aliases[name]
	c.compiling[name] = true
	inner, err := c.Compile(ae)
	delete(c.compiling, name)
	if err != nil {
		return nil, err
	}
	key := "$alias:" + name
	e := func(ctx *Ctx) (any, error) {
		if v, ok := ctx.cacheGet(key); ok {
			return v, nil
		}
		prev := ctx.self
		ctx.self = name
		v, err := inner(ctx)
		ctx.self = prev
		if err != nil {
			return nil, err
		}
		ctx.cachePut(key, v)
		return v, nil
	}
	c.aliasExprs[name] = e
	return e, nil
}

// Compile compiles one expression.
func (c *Compiler) Compile(e ast.Expr) (Expr, error) {
	switch n := e.(type) {
	case *ast.IntegerLit:
		v := n.Val
		return func(*Ctx) (any, error) { return v, nil }, nil
	case *ast.NumberLit:
		v := n.Val
		return func(*Ctx) (any, error) { return v, nil }, nil
	case *ast.StringLit:
		v := n.Val
		return func(*Ctx) (any, error) { return v, nil }, nil
	case *ast.BoolLit:
		v := n.Val
		return func(*Ctx) (any, error) { return v, nil }, nil
	case *ast.NullLit:
		return func(*Ctx) (any, error) { return nil, nil }, nil
	case *ast.TimeUnitLit:
		v := n.Unit.String()
		return func(*Ctx) (any, error) { return v, nil }, nil
	case *ast.ParenExpr:
		return c.Compile(n.X)
	case *ast.FieldRef:
		return c.compileField(n)
	case *ast.Wildcard:
		stream := n.Stream
		return func(ctx *Ctx) (any, error) { return copyMap(ctx.Row.Columns(stream)), nil }, nil
	case *ast.UnaryExpr:
		return c.compileUnary(n)
	case *ast.BinaryExpr:
		return c.compileBinary(n)
	case *ast.IndexExpr:
		return c.compileIndex(n)
	case *ast.SliceExpr:
		return c.compileSlice(n)
	case *ast.IsNullExpr:
		x, err := c.Compile(n.X)
		if err != nil {
			return nil, err
		}
		not := n.Not
		return func(ctx *Ctx) (any, error) {
			v, err := x(ctx)
			if err != nil {
				return nil, err
			}
			return (v == nil) != not, nil
		}, nil
	case *ast.CaseExpr:
		return c.compileCase(n)
	case *ast.Call:
		return c.compileCall(n)
	case *ast.ListExpr:
		items, err := c.compileList(n.Items)
		if err != nil {
			return nil, err
		}
		return func(ctx *Ctx) (any, error) {
			out := make([]any, len(items))
			for i, it := range items {
				v, err := it(ctx)
				if err != nil {
					return nil, err
				}
				out[i] = v
			}
			return out, nil
		}, nil
	}
	return nil, errAt(e, "unsupported expression %s", e)
}

func (c *Compiler) compileList(es []ast.Expr) ([]Expr, error) {
	out := make([]Expr, len(es))
	for i, e := range es {
		x, err := c.Compile(e)
		if err != nil {
			return nil, err
		}
		out[i] = x
	}
	return out, nil
}

func (c *Compiler) compileField(n *ast.FieldRef) (Expr, error) {
	if n.Stream != "" {
		if stream, ok := c.Streams[n.Stream]; ok {
			return c.column(stream, n.Name), nil
		}
		// Not a stream: `a.b` is object access `a->b`.
		obj, err := c.compileField(&ast.FieldRef{P: n.P, Name: n.Stream})
		if err != nil {
			return nil, err
		}
		key := n.Name
		return func(ctx *Ctx) (any, error) {
			v, err := obj(ctx)
			if err != nil {
				return nil, err
			}
			return objectKey(v, key)
		}, nil
	}
	name := n.Name
	if _, ok := c.Aliases[name]; ok && !c.compiling[name] {
		alias, err := c.CompileAlias(name)
		if err != nil {
			return nil, err
		}
		return func(ctx *Ctx) (any, error) {
			if ctx.self == name {
				v, _ := ctx.Row.Value("", name)
				return v, nil
			}
			return alias(ctx)
		}, nil
	}
	return c.column("", name), nil
}

func arrow(v any, key string) any {
	if m, ok := v.(map[string]any); ok {
		return m[key]
	}
	return nil
}

func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (c *Compiler) compileUnary(n *ast.UnaryExpr) (Expr, error) {
	x, err := c.Compile(n.X)
	if err != nil {
		return nil, err
	}
	if n.Op == token.NOT {
		return func(ctx *Ctx) (any, error) {
			v, err := x(ctx)
			if err != nil || v == nil {
				return nil, err
			}
			b, ok := v.(bool)
			if !ok {
				return nil, fmt.Errorf("invalid operation NOT %s", value.Describe(v))
			}
			return !b, nil
		}, nil
	}
	return func(ctx *Ctx) (any, error) {
		v, err := x(ctx)
		if err != nil {
			return nil, err
		}
		return value.Arith(value.Sub, int64(0), v)
	}, nil
}

func (c *Compiler) compileCase(n *ast.CaseExpr) (Expr, error) {
	var subject Expr
	var err error
	if n.Value != nil {
		if subject, err = c.Compile(n.Value); err != nil {
			return nil, err
		}
	}
	conds := make([]Expr, len(n.Whens))
	results := make([]Expr, len(n.Whens))
	for i, w := range n.Whens {
		if conds[i], err = c.Compile(w.Cond); err != nil {
			return nil, err
		}
		if results[i], err = c.Compile(w.Result); err != nil {
			return nil, err
		}
	}
	var elseExpr Expr
	if n.Else != nil {
		if elseExpr, err = c.Compile(n.Else); err != nil {
			return nil, err
		}
	}
	return func(ctx *Ctx) (any, error) {
		var sv any
		if subject != nil {
			v, err := subject(ctx)
			if err != nil {
				return nil, err
			}
			sv = v
		}
		for i, cond := range conds {
			cv, err := cond(ctx)
			if err != nil {
				return nil, err
			}
			hit := false
			if subject != nil {
				// Compared as =: values of kinds that do not compare (a
				// number and a string, say) are an error, as in eKuiper.
				if hit, err = value.Compare(value.Eq, sv, cv); err != nil {
					return nil, fmt.Errorf("evaluate case expression: %w", err)
				}
			} else if b, ok := cv.(bool); ok {
				hit = b
			} else if cv != nil {
				return nil, fmt.Errorf("invalid CASE expression, WHEN expression must be a bool condition")
			}
			if hit {
				return results[i](ctx)
			}
		}
		if elseExpr != nil {
			return elseExpr(ctx)
		}
		return nil, nil
	}, nil
}

func (c *Compiler) compileIndex(n *ast.IndexExpr) (Expr, error) {
	x, idx, err := c.compilePair(n.X, n.Index)
	if err != nil {
		return nil, err
	}
	return func(ctx *Ctx) (any, error) {
		v, err := x(ctx)
		if err != nil || v == nil {
			return nil, err
		}
		i, err := idx(ctx)
		if err != nil {
			return nil, err
		}
		switch arr := v.(type) {
		case []any:
			k, ok := i.(int64)
			if !ok {
				if f, isF := i.(float64); isF {
					k, ok = int64(f), true
				}
			}
			if !ok {
				return nil, fmt.Errorf("invalid index %s", value.Describe(i))
			}
			if k < 0 {
				k += int64(len(arr))
			}
			if k < 0 || k >= int64(len(arr)) {
				return nil, fmt.Errorf("out of index: %d of %d", k, len(arr))
			}
			return arr[k], nil
		case map[string]any:
			if s, ok := i.(string); ok {
				return arr[s], nil
			}
			// A position in an object is an error, as in eKuiper
			// (diff_expr/index_non_array).
			return nil, fmt.Errorf("[] is an invalid operation for %s", value.Describe(v))
		}
		return nil, fmt.Errorf("invalid operation %s [] %s", value.Describe(v), value.Describe(i))
	}, nil
}

func (c *Compiler) compileSlice(n *ast.SliceExpr) (Expr, error) {
	x, err := c.Compile(n.X)
	if err != nil {
		return nil, err
	}
	var lo, hi Expr
	if n.Lo != nil {
		if lo, err = c.Compile(n.Lo); err != nil {
			return nil, err
		}
	}
	if n.Hi != nil {
		if hi, err = c.Compile(n.Hi); err != nil {
			return nil, err
		}
	}
	bound := func(ctx *Ctx, e Expr, def int64, n int) (int64, error) {
		if e == nil {
			return def, nil
		}
		v, err := e(ctx)
		if err != nil {
			return 0, err
		}
		k, err := value.ToInt(v)
		if err != nil {
			return 0, err
		}
		if k < 0 {
			k += int64(n)
		}
		return k, nil
	}
	return func(ctx *Ctx) (any, error) {
		v, err := x(ctx)
		if err != nil || v == nil {
			return nil, err
		}
		arr, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("invalid operation %s [:]", value.Describe(v))
		}
		l, err := bound(ctx, lo, 0, len(arr))
		if err != nil {
			return nil, err
		}
		h, err := bound(ctx, hi, int64(len(arr)), len(arr))
		if err != nil {
			return nil, err
		}
		if l < 0 || h > int64(len(arr)) || l > h {
			return nil, fmt.Errorf("start %d or end %d is out of index %d", l, h, len(arr))
		}
		return arr[l:h], nil
	}, nil
}

// likeRegexp translates a LIKE pattern (% any run, _ one char, \ escapes) to
// an anchored regular expression.
func likeRegexp(p string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString("(?s)^")
	esc := false
	for _, r := range p {
		switch {
		case esc:
			b.WriteString(regexp.QuoteMeta(string(r)))
			esc = false
		case r == '\\':
			esc = true
		case r == '%':
			b.WriteString(".*")
		case r == '_':
			b.WriteString(".")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString("$")
	return regexp.Compile(b.String())
}

// evalGroupColumns evaluates args over every row of the group.
func evalGroupColumns(ctx *Ctx, args []Expr, star []bool) ([][]any, error) {
	rows := groupRows(ctx)
	cols := make([][]any, len(args))
	sub := *ctx
	sub.Group = nil
	for i, a := range args {
		col := make([]any, 0, len(rows))
		for _, r := range rows {
			sub.Row = r
			if star[i] {
				col = append(col, r.Columns(""))
				continue
			}
			v, err := a(&sub)
			if err != nil {
				return nil, err
			}
			col = append(col, v)
		}
		cols[i] = col
	}
	return cols, nil
}

func groupRows(ctx *Ctx) []row.Row {
	if ctx.Group != nil {
		return ctx.Group.Rows
	}
	if ctx.Row != nil {
		return []row.Row{ctx.Row}
	}
	return nil
}
