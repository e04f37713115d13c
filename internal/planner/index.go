package planner

import (
	"github.com/rekuiper/rekuiper/internal/eval"
	"github.com/rekuiper/rekuiper/internal/operator"
	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/sql/token"
)

// IndexKey is a condition of a rule's WHERE that the stream may test for
// the rule, once for all rules on the stream: Column = one of Values. A
// record it rejects would be dropped by the WHERE before anything else of
// the rule saw it, without an error, so it need not be delivered.
type IndexKey struct {
	// Column is a column of the rule's one stream.
	Column string
	// Values are literals of one kind, as the WHERE evaluates them:
	// int64 and float64, string, or bool.
	Values []any
}

// indexKey finds the rule's IndexKey in its operator chain, or nil. It is
// only safe when nothing sees a record before the WHERE rejects it: one
// input stream (no join, no table, no lookup), processing time, a
// preprocessor that neither validates nor reads event time (both may fail
// on a record the WHERE rejects), the WHERE right after it (no analytic
// call, no window before it: count and sliding windows are driven by rows
// the WHERE drops), and the condition the WHERE evaluates first (AND stops
// at a false left side, so the conditions after it neither run nor fail).
func (b *builder) indexKey(ops []operator.Operator) *IndexKey {
	if len(b.inputs) != 1 || b.opts.IsEventTime || b.stmt.Where == nil || len(ops) < 2 {
		return nil
	}
	pre, ok := ops[0].(*operator.Preprocess)
	if !ok {
		return nil
	}
	for _, s := range pre.Schemas {
		if s.Strict && len(s.Check) > 0 || s.TimestampField != "" {
			return nil
		}
	}
	if f, ok := ops[1].(*operator.Filter); !ok || f.OverWindow {
		return nil
	}
	cond := unparen(b.stmt.Where)
	for {
		x, ok := cond.(*ast.BinaryExpr)
		if !ok || x.Op != token.AND {
			break
		}
		cond = unparen(x.LHS)
	}
	bin, ok := cond.(*ast.BinaryExpr)
	if !ok {
		return nil
	}
	var col string
	var lits []ast.Expr
	switch bin.Op {
	case token.EQ:
		if c, ok := b.plainColumn(bin.LHS); ok {
			col, lits = c, []ast.Expr{bin.RHS}
		} else if c, ok := b.plainColumn(bin.RHS); ok {
			col, lits = c, []ast.Expr{bin.LHS}
		}
	case token.IN:
		list, isList := bin.RHS.(*ast.ListExpr)
		if c, ok := b.plainColumn(bin.LHS); ok && isList {
			col, lits = c, list.Items
		}
	}
	if col == "" || len(lits) == 0 {
		return nil
	}
	key := &IndexKey{Column: col}
	for _, l := range lits {
		v, ok := b.literal(l)
		if !ok || len(key.Values) > 0 && !sameKind(v, key.Values[0]) {
			return nil
		}
		key.Values = append(key.Values, v)
	}
	return key
}

// plainColumn reports whether e reads a column of the rule's stream as it
// is: not a SELECT alias, not an object key, not a function of it.
func (b *builder) plainColumn(e ast.Expr) (string, bool) {
	ref, ok := unparen(e).(*ast.FieldRef)
	if !ok {
		return "", false
	}
	if ref.Stream != "" {
		if b.streams[ref.Stream] != b.inputs[0].Name {
			return "", false // a.b on an object column a
		}
		return ref.Name, true
	}
	if _, aliased := b.comp.Aliases[ref.Name]; aliased {
		return "", false
	}
	return ref.Name, true
}

// literal evaluates a literal (a number, possibly negated, a string or a
// bool) as the rule's WHERE does.
func (b *builder) literal(e ast.Expr) (any, bool) {
	switch x := e.(type) {
	case *ast.IntegerLit, *ast.NumberLit, *ast.StringLit, *ast.BoolLit:
	case *ast.ParenExpr:
		return b.literal(unparen(x))
	case *ast.UnaryExpr:
		switch x.X.(type) {
		case *ast.IntegerLit, *ast.NumberLit:
			if x.Op != token.SUB {
				return nil, false
			}
		default:
			return nil, false
		}
	default:
		return nil, false
	}
	f, err := b.comp.Compile(e)
	if err != nil {
		return nil, false
	}
	v, err := f(&eval.Ctx{})
	if err != nil {
		return nil, false
	}
	switch v.(type) {
	case int64, float64, string, bool:
		return v, true
	}
	return nil, false
}

func sameKind(a, b any) bool {
	switch a.(type) {
	case int64, float64:
		switch b.(type) {
		case int64, float64:
			return true
		}
		return false
	case string:
		_, ok := b.(string)
		return ok
	case bool:
		_, ok := b.(bool)
		return ok
	}
	return false
}

// unparen returns e without the parentheses around it.
func unparen(e ast.Expr) ast.Expr {
	for {
		p, ok := e.(*ast.ParenExpr)
		if !ok {
			return e
		}
		e = p.X
	}
}
