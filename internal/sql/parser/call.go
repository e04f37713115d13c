package parser

import (
	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/sql/scanner"
	"github.com/rekuiper/rekuiper/internal/sql/token"
)

// parseCall parses `name(args) [OVER (...)]`. The first argument of a call
// named like a window function may be a time unit.
func (p *parser) parseCall() ast.Expr {
	name := p.next()
	p.expect(token.LPAREN, "(")
	call := &ast.Call{P: name.Pos, Name: name.Lit}
	if p.tok().Tok != token.RPAREN {
		if isUnit(p.tok().Tok) && windowType(name.Lit) != ast.NoWindow {
			u := p.next()
			call.Args = append(call.Args, &ast.TimeUnitLit{P: u.Pos, Unit: u.Tok})
		} else {
			call.Args = append(call.Args, p.parseArg())
		}
		for p.got(token.COMMA) {
			call.Args = append(call.Args, p.parseArg())
		}
	}
	p.expect(token.RPAREN, ", or )")
	if p.tok().Tok == token.OVER {
		call.Over = p.parseCallOver()
	}
	return call
}

// parseArg parses a call argument: an expression or a wildcard.
func (p *parser) parseArg() ast.Expr {
	if p.atWildcard() {
		return p.parseWildcard()
	}
	return p.parseExpr()
}

// atWildcard reports whether the current tokens start `*` or `name.*`.
func (p *parser) atWildcard() bool {
	if p.tok().Tok == token.MUL {
		return true
	}
	return isName(p.tok()) && p.peek(1).Tok == token.DOT && p.peek(2).Tok == token.MUL
}

// parseWildcard parses `*` or `s.*` with optional EXCEPT(...) and
// REPLACE(...) lists, each at most once, in either order.
func (p *parser) parseWildcard() *ast.Wildcard {
	w := &ast.Wildcard{P: p.tok().Pos}
	if p.tok().Tok != token.MUL {
		w.Stream, _ = p.parseName("identifier")
		p.expect(token.DOT, ".")
	}
	p.expect(token.MUL, "*")
	for {
		switch it := p.tok(); {
		case it.Tok == token.EXCEPT && w.Except == nil:
			p.next()
			w.Except = p.parseExceptList()
		case it.Tok == token.REPLACE && w.Replace == nil:
			p.next()
			w.Replace = p.parseReplaceList()
		default:
			return w
		}
	}
}

// parseExceptList parses `( name, ... )` after EXCEPT.
func (p *parser) parseExceptList() []string {
	p.expect(token.LPAREN, "(")
	var names []string
	for {
		n, _ := p.parseName("column name")
		names = append(names, n)
		if !p.got(token.COMMA) {
			break
		}
	}
	p.expect(token.RPAREN, ", or )")
	return names
}

// parseReplaceList parses `( expr AS name, ... )` after REPLACE.
func (p *parser) parseReplaceList() []ast.Field {
	p.expect(token.LPAREN, "(")
	var fields []ast.Field
	for {
		f := ast.Field{P: p.tok().Pos, Expr: p.parseExpr()}
		p.expect(token.AS, "AS")
		f.Alias, _ = p.parseName("alias")
		fields = append(fields, f)
		if !p.got(token.COMMA) {
			break
		}
	}
	p.expect(token.RPAREN, ", or )")
	return fields
}

// overClauses is the content of an OVER (...) clause.
type overClauses struct {
	partition []ast.Expr
	orderBy   []ast.SortField
	when      ast.Expr
}

// parseOverClauses parses `OVER ( [PARTITION BY e, ...] [ORDER BY ...]
// [WHEN cond] )`, accepting the clauses in any order, each at most once.
// ORDER BY is accepted only when allowOrder is set.
func (p *parser) parseOverClauses(allowOrder bool) (token.Pos, overClauses) {
	pos := p.expect(token.OVER, "OVER").Pos
	p.expect(token.LPAREN, "(")
	var c overClauses
	for {
		switch it := p.tok(); {
		case it.Tok == token.PARTITION && c.partition == nil:
			p.next()
			p.expect(token.BY, "BY")
			c.partition = p.parseExprList()
		case it.Tok == token.ORDER && allowOrder && c.orderBy == nil:
			p.next()
			p.expect(token.BY, "BY")
			c.orderBy = p.parseSortList()
		case it.Tok == token.WHEN && c.when == nil:
			p.next()
			c.when = p.parseExpr()
		default:
			p.expect(token.RPAREN, overExpectation(c, allowOrder))
			return pos, c
		}
	}
}

// overExpectation words the error for an unexpected token inside OVER.
func overExpectation(c overClauses, allowOrder bool) string {
	what := ""
	if c.partition == nil {
		what += "PARTITION BY, "
	}
	if allowOrder && c.orderBy == nil {
		what += "ORDER BY, "
	}
	if c.when == nil {
		what += "WHEN, "
	}
	if what == "" {
		return ")"
	}
	return what[:len(what)-2] + " or )"
}

// parseCallOver parses the OVER clause of an analytic or window function.
func (p *parser) parseCallOver() *ast.Over {
	pos, c := p.parseOverClauses(true)
	return &ast.Over{P: pos, Partition: c.partition, OrderBy: c.orderBy, When: c.when}
}

// parseSortList parses `expr [ASC|DESC], ...`.
func (p *parser) parseSortList() []ast.SortField {
	var list []ast.SortField
	for {
		start := p.tok()
		sf := ast.SortField{P: start.Pos, Expr: p.parseExpr()}
		if p.got(token.DESC) {
			sf.Desc = true
		} else {
			p.got(token.ASC)
		}
		list = append(list, sf)
		if !p.got(token.COMMA) {
			return list
		}
	}
}

// isPlainName reports whether it is an unquoted name (usable as a function
// or window name).
func isPlainName(it scanner.Item) bool { return isName(it) && !it.Quoted }
