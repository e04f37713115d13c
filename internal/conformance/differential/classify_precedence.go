package differential

import (
	"github.com/rekuiper/rekuiper/internal/conformance"
	"github.com/rekuiper/rekuiper/internal/function"
	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/sql/parser"
	"github.com/rekuiper/rekuiper/internal/sql/token"
)

// groupedAsEKuiper reports whether rekuiper gives eKuiper's output once the
// rule's SQL is grouped the way eKuiper's parser groups it. eKuiper reads
// `[...]` and `->` as binary operators of the same precedence as `*`, `/`,
// `%` and `&`, left-associative, so `o->c * arr[1:3]` is
// `(o->c * arr)[1:3]`: the product of a null and an array is null, and so
// is its slice, where rekuiper slices first and fails on a short array.
func groupedAsEKuiper(o Outcome, funcs *function.Registry) bool {
	if funcs == nil || o.Kind != Differs {
		return false
	}
	sql, changed := ekuiperGroupedSQL(o.Case.Rule.SQL)
	if !changed {
		return false
	}
	c := cloneCase(o.Case)
	c.Expected = o.Case.Expected
	c.Rule.SQL = sql
	actual, err := conformance.Replay(c, c.Rule.Options, funcs)
	if err != nil {
		return false
	}
	m, _ := conformance.Compare(c.Expected, actual)
	return m == nil
}

// ekuiperGroupedSQL prints the rule with every `x op y[...]`, `x op y->k`
// (op one of * / % &) regrouped as `(x op y)[...]`, `(x op y)->k`;
// changed is false when the rule has no such expression or does not parse.
func ekuiperGroupedSQL(sql string) (string, bool) {
	stmt, err := parser.ParseSelect(sql)
	if err != nil {
		return "", false
	}
	g := &regrouper{}
	for i := range stmt.Fields {
		stmt.Fields[i].Expr = g.expr(stmt.Fields[i].Expr)
	}
	stmt.Where = g.expr(stmt.Where)
	stmt.Having = g.expr(stmt.Having)
	for i := range stmt.Dimensions {
		stmt.Dimensions[i] = g.expr(stmt.Dimensions[i])
	}
	for i := range stmt.OrderBy {
		stmt.OrderBy[i].Expr = g.expr(stmt.OrderBy[i].Expr)
	}
	if !g.changed {
		return "", false
	}
	return stmt.String(), true
}

type regrouper struct{ changed bool }

// expr rewrites e bottom-up and returns the node that takes its place.
func (g *regrouper) expr(e ast.Expr) ast.Expr {
	switch n := e.(type) {
	case nil:
		return nil
	case *ast.ParenExpr:
		n.X = g.expr(n.X)
	case *ast.UnaryExpr:
		n.X = g.expr(n.X)
	case *ast.BetweenRange:
		n.Lo, n.Hi = g.expr(n.Lo), g.expr(n.Hi)
	case *ast.ListExpr:
		for i := range n.Items {
			n.Items[i] = g.expr(n.Items[i])
		}
	case *ast.IndexExpr:
		n.X, n.Index = g.expr(n.X), g.expr(n.Index)
	case *ast.SliceExpr:
		n.X, n.Lo, n.Hi = g.expr(n.X), g.expr(n.Lo), g.expr(n.Hi)
	case *ast.IsNullExpr:
		n.X = g.expr(n.X)
	case *ast.CaseExpr:
		n.Value = g.expr(n.Value)
		for i := range n.Whens {
			n.Whens[i].Cond = g.expr(n.Whens[i].Cond)
			n.Whens[i].Result = g.expr(n.Whens[i].Result)
		}
		n.Else = g.expr(n.Else)
	case *ast.Call:
		for i := range n.Args {
			n.Args[i] = g.expr(n.Args[i])
		}
	case *ast.BinaryExpr:
		n.LHS, n.RHS = g.expr(n.LHS), g.expr(n.RHS)
		switch n.Op {
		case token.MUL, token.DIV, token.MOD, token.BITAND:
			return g.regroup(n)
		}
	}
	return e
}

// regroup turns `x op chain` into the chain applied to `(x op base)`,
// where chain is a run of [...] and -> over base.
func (g *regrouper) regroup(n *ast.BinaryExpr) ast.Expr {
	var inner *ast.Expr
	for cur := &n.RHS; ; {
		switch p := (*cur).(type) {
		case *ast.IndexExpr:
			inner, cur = &p.X, &p.X
			continue
		case *ast.SliceExpr:
			inner, cur = &p.X, &p.X
			continue
		case *ast.BinaryExpr:
			if p.Op == token.ARROW {
				inner, cur = &p.LHS, &p.LHS
				continue
			}
		}
		break
	}
	if inner == nil {
		return n
	}
	chain := n.RHS
	n.RHS = *inner
	*inner = &ast.ParenExpr{P: n.P, X: n}
	g.changed = true
	return chain
}
