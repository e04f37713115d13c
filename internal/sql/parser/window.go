package parser

import (
	"fmt"

	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/sql/token"
)

// parseGroupBy parses the GROUP BY list: expressions and at most one window
// function, in any position.
func (p *parser) parseGroupBy() ([]ast.Expr, *ast.Window) {
	var dims []ast.Expr
	var win *ast.Window
	for {
		if it := p.tok(); isPlainName(it) && p.peek(1).Tok == token.LPAREN && windowType(it.Lit) != ast.NoWindow {
			if win != nil {
				p.errorAt(it.Pos, "GROUP BY can have only one window, found a second %s", it.Lit)
			}
			win = p.parseWindow()
		} else {
			dims = append(dims, p.parseExpr())
		}
		if !p.got(token.COMMA) {
			return dims, win
		}
	}
}

// windowArity gives the number of arguments (after the time unit) a window
// kind takes, and whether it starts with a time unit.
func windowArity(t ast.WindowType) (lo, hi int, unit bool) {
	switch t {
	case ast.TumblingWindow:
		return 1, 1, true
	case ast.HoppingWindow, ast.SessionWindow:
		return 2, 2, true
	case ast.SlidingWindow:
		return 1, 2, true
	}
	return 1, 2, false // count and state windows
}

// parseWindow parses a window function with its FILTER and OVER clauses.
func (p *parser) parseWindow() *ast.Window {
	name := p.next()
	w := &ast.Window{P: name.Pos, Type: windowType(name.Lit), Name: name.Lit, Unit: token.ILLEGAL}
	lo, hi, unit := windowArity(w.Type)
	p.expect(token.LPAREN, "(")
	if unit {
		if !isUnit(p.tok().Tok) {
			p.errorExpected("time unit (DD, HH, MI, SS or MS)")
		}
		w.Unit = p.next().Tok
		p.expect(token.COMMA, ", and arguments")
	}
	w.Args = append(w.Args, p.parseExpr())
	for len(w.Args) < hi && p.got(token.COMMA) {
		w.Args = append(w.Args, p.parseExpr())
	}
	switch it := p.tok(); {
	case it.Tok == token.RPAREN && len(w.Args) < lo:
		p.errorAt(it.Pos, "expected %d arguments after the time unit of %s, found %d", lo, w.Name, len(w.Args))
	case it.Tok != token.RPAREN && len(w.Args) < hi:
		p.errorExpected(", or )")
	case it.Tok != token.RPAREN:
		p.errorExpected(fmt.Sprintf(") after %d arguments of %s", hi, w.Name))
	}
	p.next()
	p.parseWindowSuffix(w)
	return w
}

// parseWindowSuffix parses `FILTER (WHERE cond)` and `OVER (...)`, each at
// most once, in either order.
func (p *parser) parseWindowSuffix(w *ast.Window) {
	for {
		switch it := p.tok(); {
		case it.Tok == token.FILTER && w.Filter == nil:
			p.next()
			p.expect(token.LPAREN, "(")
			p.expect(token.WHERE, "WHERE")
			w.Filter = p.parseExpr()
			p.expect(token.RPAREN, ")")
		case it.Tok == token.OVER && w.TriggerCond == nil && w.Partition == nil:
			_, c := p.parseOverClauses(false)
			w.TriggerCond, w.Partition = c.when, c.partition
		default:
			return
		}
	}
}
