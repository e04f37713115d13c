package planner

import (
	"slices"
	"strconv"
	"strings"

	"github.com/rekuiper/rekuiper/internal/eval"
	"github.com/rekuiper/rekuiper/internal/function"
	"github.com/rekuiper/rekuiper/internal/operator"
	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/sql/token"
)

// chain builds the rule's operator chain from the statement: the source
// stage (preprocess, event time), then either the row chain (no window:
// joins, WHERE, projection) or the window chain (window, joins, WHERE,
// grouping and aggregation, HAVING, ORDER BY, projection). SELECT and WHERE
// are compiled first, so that the analytic and aggregate sites they call
// are known to the stages that follow.
func (b *builder) chain() ([]operator.Operator, error) {
	s := b.stmt
	ops := b.sourceStage()
	fields, err := b.fields()
	if err != nil {
		return nil, err
	}
	var where eval.Expr
	if s.Where != nil {
		if where, err = b.comp.Compile(s.Where); err != nil {
			return nil, err
		}
	}
	b.grouped = s.Window != nil && (len(s.Dimensions) > 0 || b.anyAggregate())
	if s.Window == nil {
		return b.rowChain(ops, fields, where)
	}
	return b.windowChain(ops, fields, where)
}

// sourceStage is where every chain starts: the preprocess operator (a
// per-rule copy of each tuple, validation, event time from the TIMESTAMP
// column) and, for an event-time rule, the operator that orders the rows of
// its streams by a watermark (tables have none).
func (b *builder) sourceStage() []operator.Operator {
	ops := []operator.Operator{b.preprocess()}
	if b.opts.IsEventTime {
		var streams []string
		for _, in := range b.inputs {
			if !in.Table {
				streams = append(streams, in.Name)
			}
		}
		ops = append(ops, &operator.EventTime{Streams: streams, LateTolerance: b.opts.LateTolerance.Milliseconds()})
	}
	return ops
}

// analyticStage appends the operator that evaluates the analytic function
// calls (lag() and the like) on every row, when the compiled expressions
// have any.
func (b *builder) analyticStage(ops []operator.Operator) []operator.Operator {
	if sites := b.comp.Sites(); len(sites) > 0 {
		ops = append(ops, &operator.Analytic{Sites: sites, Store: b.comp.Analytic})
	}
	return ops
}

// joinStage appends the join of the statement's streams and tables (if
// any) and then its lookup joins.
func (b *builder) joinStage(ops []operator.Operator) ([]operator.Operator, error) {
	if join, err := b.join(); err != nil {
		return nil, err
	} else if join != nil {
		ops = append(ops, join)
	}
	lookups, err := b.lookupJoins()
	if err != nil {
		return nil, err
	}
	return append(ops, lookups...), nil
}

// rowChain finishes the chain of a statement without a window, which
// handles rows one by one: analytic calls, the stream's part of a WHERE
// over a stream-table join, the joins, the WHERE, the projection.
func (b *builder) rowChain(ops []operator.Operator, fields []operator.ProjField, where eval.Expr) ([]operator.Operator, error) {
	ops = b.analyticStage(ops)
	pre, err := b.streamTableFilter()
	if err != nil {
		return nil, err
	}
	if pre != nil {
		ops = append(ops, pre)
	}
	if ops, err = b.joinStage(ops); err != nil {
		return nil, err
	}
	if where == nil && b.calls("last_hit_count", "last_hit_time") {
		// Every row is a hit: a filter that keeps all of them counts them.
		where = alwaysTrue
	}
	if where != nil {
		ops = append(ops, &operator.Filter{Cond: where})
	}
	return append(ops, b.project(fields)), nil
}

// windowChain finishes the chain of a statement with a window: the window
// stage (see windowStage), then grouping and aggregation, HAVING, ORDER BY
// and the projection.
func (b *builder) windowChain(ops []operator.Operator, fields []operator.ProjField, where eval.Expr) ([]operator.Operator, error) {
	ops, win, pushDown, err := b.windowStage(ops, where)
	if err != nil {
		return nil, err
	}
	agg, err := b.aggClauses()
	if err != nil {
		return nil, err
	}
	// Every expression is compiled: the aggregate sites are known.
	if b.grouped && b.foldable(win, where == nil || pushDown) {
		win.Fold = &operator.Fold{Dims: agg.dims, Sites: b.comp.AggSites()}
	} else if b.grouped {
		ops = append(ops, &operator.GroupBy{Dims: agg.dims})
	}
	if agg.having != nil {
		ops = append(ops, agg.having)
	}
	if agg.order != nil {
		ops = append(ops, agg.order)
	}
	return append(ops, b.project(fields)), nil
}

// windowStage appends the window and what runs around it: analytic calls
// and, when it can, the WHERE before the window (pushDown reports that it
// did); the joins after it, and then the WHERE when it was not pushed
// down. A WHERE that calls aggregates runs after the window, over its rows
// (eKuiper's semantics); so does any WHERE of an event-time rule, of a
// join, or over a count or sliding window.
func (b *builder) windowStage(ops []operator.Operator, where eval.Expr) (_ []operator.Operator, win *operator.Window, pushDown bool, err error) {
	if win, err = b.window(); err != nil {
		return nil, nil, false, err
	}
	// As without a window, analytic calls see every row before WHERE and
	// the window, once: a row in several windows keeps one lag().
	ops = b.analyticStage(ops)
	whereAgg := where != nil && b.comp.IsAggregate(b.stmt.Where)
	pushDown = where != nil && !whereAgg && len(b.stmt.Joins) == 0 && !b.opts.IsEventTime &&
		win.Spec.Kind != operator.Count && win.Spec.Kind != operator.Sliding
	if pushDown {
		ops = append(ops, &operator.Filter{Cond: where})
	}
	ops = append(ops, win)
	if ops, err = b.joinStage(ops); err != nil {
		return nil, nil, false, err
	}
	if where != nil && !pushDown {
		ops = append(ops, &operator.Filter{Cond: where, OverWindow: whereAgg})
	}
	return ops, win, pushDown, nil
}

// aggOps are the compiled clauses that run over a window's rows: the GROUP
// BY dimensions (only when the statement groups), HAVING and ORDER BY
// (nil when absent).
type aggOps struct {
	dims   []eval.Expr
	having operator.Operator
	order  operator.Operator
}

// aggClauses compiles GROUP BY, HAVING and ORDER BY, in that order. A
// statement calling last_agg_hit_count or last_agg_hit_time without a
// HAVING gets one that keeps every group, since each is a hit to count.
func (b *builder) aggClauses() (aggOps, error) {
	s := b.stmt
	var agg aggOps
	var err error
	if b.grouped {
		agg.dims = make([]eval.Expr, len(s.Dimensions))
		for i, d := range s.Dimensions {
			if agg.dims[i], err = b.comp.Compile(d); err != nil {
				return aggOps{}, err
			}
		}
	}
	if s.Having != nil {
		cond, err := b.comp.Compile(s.Having)
		if err != nil {
			return aggOps{}, err
		}
		agg.having = &operator.Having{Cond: cond, Grouped: b.grouped}
	} else if b.calls("last_agg_hit_count", "last_agg_hit_time") {
		// Every window emitted is a hit: a HAVING that keeps all counts them.
		agg.having = &operator.Having{Cond: alwaysTrue, Grouped: b.grouped}
	}
	if len(s.OrderBy) > 0 {
		keys := make([]operator.SortKey, len(s.OrderBy))
		for i, o := range s.OrderBy {
			x, err := b.comp.Compile(o.Expr)
			if err != nil {
				return aggOps{}, err
			}
			keys[i] = operator.SortKey{Expr: x, Desc: o.Desc}
		}
		agg.order = &operator.Order{Keys: keys, Grouped: b.grouped}
	}
	return agg, nil
}

// foldable reports whether the window can aggregate its groups as rows
// arrive (operator.Fold) instead of keeping its rows: a tumbling window
// without joins, with WHERE (if any) applied before it, grouped by
// expressions of the row only, where every aggregate has an accumulator and
// arguments of the row only.
func (b *builder) foldable(win *operator.Window, whereBefore bool) bool {
	s := b.stmt
	if win.Spec.Kind != operator.Tumbling || len(s.Joins) > 0 || !whereBefore {
		return false
	}
	for _, d := range s.Dimensions {
		if !b.comp.RowOnly(d, false) {
			return false
		}
	}
	for _, site := range b.comp.AggSites() {
		if !site.Foldable {
			return false
		}
	}
	return true
}

func (b *builder) anyAggregate() bool {
	for _, f := range b.stmt.Fields {
		if b.comp.IsAggregate(f.Expr) {
			return true
		}
	}
	return b.stmt.Having != nil && b.comp.IsAggregate(b.stmt.Having)
}

func (b *builder) project(fields []operator.ProjField) *operator.Project {
	return &operator.Project{
		Fields:   fields,
		Grouped:  b.grouped,
		Limit:    b.stmt.Limit,
		HasLimit: b.stmt.HasLimit,
		SendNil:  b.opts.SendNilField,
		SendMeta: b.opts.SendMeta,
	}
}

func (b *builder) fields() ([]operator.ProjField, error) {
	var out []operator.ProjField
	srf := 0
	unnamed := 0
	names := map[string]bool{}
	for _, f := range b.stmt.Fields {
		if w, ok := f.Expr.(*ast.Wildcard); ok {
			pf := operator.ProjField{Wildcard: true, Except: map[string]bool{}}
			if w.Stream != "" {
				pf.Stream = b.streams[w.Stream]
			}
			for _, e := range w.Except {
				pf.Except[e] = true
			}
			for _, r := range w.Replace {
				x, err := b.comp.Compile(r.Expr)
				if err != nil {
					return nil, err
				}
				pf.Replace = append(pf.Replace, operator.ProjField{Name: r.Alias, Expr: x})
			}
			out = append(out, pf)
			continue
		}
		name := fieldName(f, &unnamed)
		// Two visible columns of one name would overwrite each other in
		// the output row; eKuiper refuses them too (an unnamed call is
		// named after its function, so abs(v), abs(w) collide).
		if !f.Invisible {
			if names[name] {
				return nil, errAt(f.Expr, "duplicate field definition %s", name)
			}
			names[name] = true
		}
		var x eval.Expr
		var err error
		if f.Alias != "" {
			x, err = b.comp.CompileAlias(f.Alias)
		} else {
			x, err = b.comp.Compile(f.Expr)
		}
		if err != nil {
			return nil, err
		}
		multi := eval.IsMultiColumn(f.Expr)
		// An aliased changed_cols is one column holding its object.
		pf := operator.ProjField{Name: name, Expr: x, Invisible: f.Invisible, Multi: multi && f.Alias == "", Null: multi && f.Alias != "", SRF: b.comp.IsSRF(f.Expr)}
		// A column's explicit null is written out only when the column is
		// selected under its own name; an alias of a null is left out, as in
		// eKuiper.
		if ref, ok := f.Expr.(*ast.FieldRef); ok && f.Alias == "" && b.isColumn(ref, f.Alias) {
			pf.Column = &operator.ColumnRef{Stream: b.streams[ref.Stream], Name: ref.Name}
		}
		if pf.SRF {
			srf++
			if srf > 1 {
				return nil, errAt(f.Expr, "only one set-returning function is allowed in SELECT")
			}
		}
		out = append(out, pf)
	}
	if err := b.checkFunctionPlacement(); err != nil {
		return nil, err
	}
	return out, nil
}

// checkFunctionPlacement rejects aggregates and set-returning functions where
// they cannot run.
func (b *builder) checkFunctionPlacement() error {
	s := b.stmt
	var bad error
	check := func(where string, e ast.Expr, allowAgg bool) {
		ast.Walk(e, func(n ast.Expr) bool {
			c, ok := n.(*ast.Call)
			if !ok || bad != nil {
				return bad == nil
			}
			d, ok := b.funcs.Lookup(c.Name)
			if !ok {
				return true
			}
			switch {
			case d.Kind == function.Aggregate && !allowAgg:
				bad = errAt(c, "aggregate function %s is not allowed in %s", c.Name, where)
			case d.Kind == function.SRF:
				bad = errAt(c, "set-returning function %s is only allowed in SELECT", c.Name)
			}
			return true
		})
	}
	check("WHERE", s.Where, s.Window != nil)
	for _, d := range s.Dimensions {
		check("GROUP BY", d, false)
	}
	for _, j := range s.Joins {
		check("ON", j.On, false)
	}
	if bad == nil && (s.Window != nil || len(s.Dimensions) > 0 || len(s.Joins) > 0) {
		bad = b.checkNoAggQuery()
	}
	return bad
}

// checkNoAggQuery refuses last_hit_count() and last_hit_time() in a query
// that groups, windows or joins rows, as eKuiper does: they count the rows
// of a rule that passed its WHERE one by one (last_agg_hit_* are the
// grouped ones).
func (b *builder) checkNoAggQuery() error {
	var bad error
	visit := func(e ast.Expr) {
		ast.Walk(e, func(n ast.Expr) bool {
			if c, ok := n.(*ast.Call); ok && bad == nil {
				if name := lower(c.Name); name == "last_hit_count" || name == "last_hit_time" {
					bad = errAt(c, "function %s is not allowed in an aggregate query", name)
				}
			}
			return bad == nil
		})
	}
	b.eachClause(visit)
	return bad
}

// eachClause calls visit with the expressions of the statement's SELECT,
// WHERE, HAVING, GROUP BY, ON and ORDER BY clauses (nil ones included).
func (b *builder) eachClause(visit func(ast.Expr)) {
	s := b.stmt
	for _, f := range s.Fields {
		visit(f.Expr)
	}
	visit(s.Where)
	visit(s.Having)
	for _, d := range s.Dimensions {
		visit(d)
	}
	for _, j := range s.Joins {
		visit(j.On)
	}
	for _, o := range s.OrderBy {
		visit(o.Expr)
	}
}

// streamTableFilter is the part of the WHERE of a stream joined to tables
// that reads the stream alone (its AND-ed conditions naming only columns
// qualified by the stream, with scalar functions), run on the stream's rows
// before the join, as eKuiper pushes it down: a row it drops is not joined
// (its ON is not evaluated), and a condition that fails is an error for
// the row whether or not a table row matches it. The whole WHERE still
// runs after the join. nil when there is no such part.
func (b *builder) streamTableFilter() (*operator.Filter, error) {
	s := b.stmt
	if s.Where == nil || len(s.Joins) == 0 || b.inputs[0].Table {
		return nil, nil
	}
	for _, in := range b.inputs[1:] {
		if !in.Table || in.Lookup {
			return nil, nil
		}
	}
	var pre ast.Expr
	for _, c := range conjuncts(s.Where, nil) {
		if !b.readsOnlyStream(c, s.From) {
			continue
		}
		if pre == nil {
			pre = c
		} else {
			pre = &ast.BinaryExpr{P: pre.Pos(), Op: token.AND, LHS: pre, RHS: c}
		}
	}
	if pre == nil {
		return nil, nil
	}
	x, err := b.comp.Compile(pre)
	if err != nil {
		return nil, err
	}
	return &operator.Filter{Cond: x, NoHits: true}, nil
}

// readsOnlyStream reports whether e reads columns of src only, each
// qualified by its name or alias, and calls scalar functions only.
func (b *builder) readsOnlyStream(e ast.Expr, src ast.Source) bool {
	ok, cols := true, 0
	ast.Walk(e, func(n ast.Expr) bool {
		switch x := n.(type) {
		case *ast.FieldRef:
			if x.Stream == "" || (x.Stream != src.Name && x.Stream != src.Alias) {
				ok = false
			}
			cols++
		case *ast.Wildcard:
			ok = false
		case *ast.Call:
			if d, found := b.funcs.Lookup(x.Name); !found || d.Kind != function.Scalar {
				ok = false
			}
		case *ast.BinaryExpr:
			if x.Op == token.ARROW || x.Op == token.DOT {
				// col->key: the key is no column.
				if _, isRef := x.RHS.(*ast.FieldRef); isRef {
					ok = ok && b.readsOnlyStream(x.LHS, src)
					cols++
					return false
				}
			}
		}
		return ok
	})
	return ok && cols > 0
}

func (b *builder) join() (operator.Operator, error) {
	s := b.stmt
	if len(s.Joins) == 0 {
		return nil, nil
	}
	j := &operator.Join{Left: s.From.Name, LeftTable: b.inputs[0].Table, LeftInput: b.inputs[0].Port}
	for i, spec := range s.Joins {
		in := b.inputs[i+1]
		if in.Lookup {
			continue // see lookupJoins
		}
		js := operator.JoinSpec{Type: spec.Type, Stream: spec.Name, Table: in.Table, Input: in.Port}
		if spec.Type == ast.CrossJoin && spec.On != nil {
			return nil, errAt(spec.On, "CROSS JOIN must not have an ON condition")
		}
		if spec.On != nil {
			x, err := b.comp.Compile(spec.On)
			if err != nil {
				return nil, err
			}
			js.On = x
		}
		if in.Table {
			if v, ok := in.Def.Option("RETAIN_SIZE"); ok {
				n, err := strconv.Atoi(v)
				if err != nil || n < 0 {
					return nil, errAt(in.Def, "RETAIN_SIZE of table %s must be a non-negative integer, found %q", in.Name, v)
				}
				js.Retain = n
			}
		}
		j.Joins = append(j.Joins, js)
	}
	if len(j.Joins) == 0 && !j.LeftTable {
		return nil, nil // only lookup joins
	}
	return j, nil
}

// isColumn reports whether ref, inside the field aliased self, names a
// stream column rather than another SELECT alias or an object key.
func (b *builder) isColumn(ref *ast.FieldRef, self string) bool {
	if ref.Stream != "" {
		_, ok := b.streams[ref.Stream]
		return ok
	}
	_, aliased := b.comp.Aliases[ref.Name]
	return !aliased || ref.Name == self
}

// alwaysTrue is the condition of a filter that keeps every row.
func alwaysTrue(*eval.Ctx) (any, error) { return true, nil }

// calls reports whether the SELECT list, WHERE, HAVING or ORDER BY calls
// one of the named functions.
func (b *builder) calls(names ...string) bool {
	found := false
	visit := func(e ast.Expr) {
		if e == nil {
			return
		}
		ast.Walk(e, func(x ast.Expr) bool {
			if c, ok := x.(*ast.Call); ok && slices.Contains(names, strings.ToLower(c.Name)) {
				found = true
			}
			return !found
		})
	}
	for _, f := range b.stmt.Fields {
		visit(f.Expr)
	}
	visit(b.stmt.Where)
	visit(b.stmt.Having)
	for _, o := range b.stmt.OrderBy {
		visit(o.Expr)
	}
	return found
}
