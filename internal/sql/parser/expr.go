package parser

import (
	"math"
	"strconv"
	"strings"

	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/sql/token"
)

// comparePrec is the binding power of comparisons, IS [NOT] NULL and the
// operand of a prefix NOT.
const comparePrec = 3

// parseExpr parses a full expression.
func (p *parser) parseExpr() ast.Expr { return p.parseBinary(1) }

// parseBinary parses operators binding at least as tightly as minPrec, left
// associatively (precedence climbing).
func (p *parser) parseBinary(minPrec int) ast.Expr {
	x := p.parseUnary()
	for {
		op, width := p.binaryOp()
		prec := op.Precedence()
		if op == token.IS || op == token.NOT {
			prec = comparePrec
		}
		if prec == 0 || prec < minPrec {
			return x
		}
		for i := 0; i < width; i++ {
			p.next()
		}
		x = p.parseInfix(x, op, prec)
	}
}

// binaryOp classifies the current token as an infix operator, returning the
// operator and how many tokens spell it (NOT IN is two). A NOT that starts
// no operator comes back as NOT and is rejected by parseInfix.
func (p *parser) binaryOp() (token.Token, int) {
	t := p.tok().Tok
	switch t {
	case token.ADD, token.SUB, token.MUL, token.DIV, token.MOD, token.BITAND,
		token.BITOR, token.BITXOR, token.AND, token.OR, token.EQ, token.NEQ,
		token.LT, token.LTE, token.GT, token.GTE, token.IN, token.BETWEEN, token.LIKE:
		return t, 1
	case token.IS:
		return token.IS, 1
	case token.NOT:
		switch p.peek(1).Tok {
		case token.IN:
			return token.NOTIN, 2
		case token.BETWEEN:
			return token.NOTBETWEEN, 2
		case token.LIKE:
			return token.NOTLIKE, 2
		}
		return token.NOT, 0
	}
	return token.ILLEGAL, 0
}

// parseInfix builds `x op rhs` once the operator's tokens are consumed.
func (p *parser) parseInfix(x ast.Expr, op token.Token, prec int) ast.Expr {
	switch op {
	case token.NOT:
		p.next()
		p.errorExpected("IN, BETWEEN or LIKE after NOT")
	case token.IS:
		not := p.got(token.NOT)
		p.expect(token.NULL, "NULL")
		return &ast.IsNullExpr{P: x.Pos(), X: x, Not: not}
	case token.IN, token.NOTIN:
		if p.tok().Tok == token.LPAREN {
			return &ast.BinaryExpr{P: x.Pos(), Op: op, LHS: x, RHS: p.parseList()}
		}
	case token.BETWEEN, token.NOTBETWEEN:
		lo := p.parseBinary(prec + 1)
		p.expect(token.AND, "AND")
		hi := p.parseBinary(prec + 1)
		rng := &ast.BetweenRange{P: lo.Pos(), Lo: lo, Hi: hi}
		return &ast.BinaryExpr{P: x.Pos(), Op: op, LHS: x, RHS: rng}
	}
	return &ast.BinaryExpr{P: x.Pos(), Op: op, LHS: x, RHS: p.parseBinary(prec + 1)}
}

// parseList parses `( expr, ... )`, the right side of IN.
func (p *parser) parseList() *ast.ListExpr {
	lp := p.expect(token.LPAREN, "(")
	list := &ast.ListExpr{P: lp.Pos, Items: p.parseExprList()}
	p.expect(token.RPAREN, ", or )")
	return list
}

// parseExprList parses one or more comma-separated expressions.
func (p *parser) parseExprList() []ast.Expr {
	list := []ast.Expr{p.parseExpr()}
	for p.got(token.COMMA) {
		list = append(list, p.parseExpr())
	}
	return list
}

// parseUnary parses prefix minus and NOT, then a postfix expression. Minus
// applied to a numeric literal folds into a negative literal.
func (p *parser) parseUnary() ast.Expr {
	p.enter()
	defer p.leave()
	switch it := p.tok(); it.Tok {
	case token.SUB:
		p.next()
		if lit := p.tok(); (lit.Tok == token.INTEGER || lit.Tok == token.NUMBER) && !postfixFollows(p.peek(1).Tok) {
			p.next()
			return p.negativeLiteral(it.Pos, lit.Lit)
		}
		return p.negate(it.Pos, p.parseUnary())
	case token.NOT:
		p.next()
		return &ast.UnaryExpr{P: it.Pos, Op: token.NOT, X: p.parseBinary(comparePrec)}
	}
	return p.parsePostfix(p.parsePrimary())
}

// postfixFollows reports whether t continues a postfix expression, which
// binds tighter than a prefix minus.
func postfixFollows(t token.Token) bool {
	return t == token.LBRACKET || t == token.ARROW || t == token.DOT
}

// negativeLiteral builds the literal `-text` positioned at the minus sign.
func (p *parser) negativeLiteral(pos token.Pos, text string) ast.Expr {
	if v, err := strconv.ParseInt("-"+text, 10, 64); err == nil {
		return &ast.IntegerLit{P: pos, Val: v}
	}
	return p.numberLit(pos, "-"+text)
}

// negate builds `-x` at pos. A numeric literal (itself a folded negative
// literal, as in `- -1`) is negated in place so that the tree prints back
// without a unary minus the scanner would fold differently.
func (p *parser) negate(pos token.Pos, x ast.Expr) ast.Expr {
	switch lit := x.(type) {
	case *ast.IntegerLit:
		if lit.Val != math.MinInt64 {
			return &ast.IntegerLit{P: pos, Val: -lit.Val}
		}
		return p.numberLit(pos, strings.TrimPrefix(strconv.FormatInt(lit.Val, 10), "-"))
	case *ast.NumberLit:
		raw, neg := strings.CutPrefix(lit.Raw, "-")
		if !neg {
			raw = "-" + raw
		}
		return &ast.NumberLit{P: pos, Val: -lit.Val, Raw: raw}
	}
	return &ast.UnaryExpr{P: pos, Op: token.SUB, X: x}
}

// numberLit parses a float literal (or an integer too large for int64).
func (p *parser) numberLit(pos token.Pos, text string) *ast.NumberLit {
	v, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsInf(v, 0) {
		p.errorAt(pos, "number %s out of range", text)
	}
	return &ast.NumberLit{P: pos, Val: v, Raw: text}
}

// parsePostfix applies `[...]`, `->key` and `.key` to x.
func (p *parser) parsePostfix(x ast.Expr) ast.Expr {
	for {
		switch p.tok().Tok {
		case token.LBRACKET:
			x = p.parseSubscript(x)
		case token.ARROW:
			p.next()
			x = p.arrow(x)
		case token.DOT:
			p.next()
			if ref, ok := x.(*ast.FieldRef); ok && ref.Stream == "" {
				key := p.parseKey()
				x = &ast.FieldRef{P: ref.P, Stream: ref.Name, Name: key.Name}
				continue
			}
			x = p.arrow(x)
		default:
			return x
		}
	}
}

// arrow builds `x->key` after the operator is consumed.
func (p *parser) arrow(x ast.Expr) ast.Expr {
	return &ast.BinaryExpr{P: x.Pos(), Op: token.ARROW, LHS: x, RHS: p.parseKey()}
}

// parseKey parses the key after `->` or `.`: any identifier or keyword.
func (p *parser) parseKey() *ast.FieldRef {
	it := p.tok()
	if it.Tok != token.IDENT && !it.Tok.IsKeyword() {
		p.errorExpected("identifier")
	}
	p.next()
	return &ast.FieldRef{P: it.Pos, Name: it.Lit}
}

// parseSubscript parses `[i]`, `[lo:hi]`, `[:hi]`, `[lo:]`, `[:]` or `[]`.
func (p *parser) parseSubscript(x ast.Expr) ast.Expr {
	p.expect(token.LBRACKET, "[")
	if p.got(token.RBRACKET) {
		return &ast.SliceExpr{P: x.Pos(), X: x, Full: true}
	}
	var lo ast.Expr
	if p.tok().Tok != token.COLON {
		lo = p.parseExpr()
		if p.got(token.RBRACKET) {
			return &ast.IndexExpr{P: x.Pos(), X: x, Index: lo}
		}
	}
	p.expect(token.COLON, ": or ]")
	var hi ast.Expr
	if p.tok().Tok != token.RBRACKET {
		hi = p.parseExpr()
	}
	p.expect(token.RBRACKET, "]")
	return &ast.SliceExpr{P: x.Pos(), X: x, Lo: lo, Hi: hi}
}

// parsePrimary parses a literal, a name, a call, a parenthesised expression
// or a CASE.
func (p *parser) parsePrimary() ast.Expr {
	it := p.tok()
	switch it.Tok {
	case token.INTEGER:
		p.next()
		if v, err := strconv.ParseInt(it.Lit, 10, 64); err == nil {
			return &ast.IntegerLit{P: it.Pos, Val: v}
		}
		return p.numberLit(it.Pos, it.Lit)
	case token.NUMBER:
		p.next()
		return p.numberLit(it.Pos, it.Lit)
	case token.STRING:
		p.next()
		return &ast.StringLit{P: it.Pos, Val: it.Lit}
	case token.TRUE, token.FALSE:
		p.next()
		return &ast.BoolLit{P: it.Pos, Val: it.Tok == token.TRUE}
	case token.NULL:
		p.next()
		return &ast.NullLit{P: it.Pos}
	case token.LPAREN:
		p.next()
		x := p.parseExpr()
		p.expect(token.RPAREN, ")")
		return &ast.ParenExpr{P: it.Pos, X: x}
	case token.CASE:
		return p.parseCase()
	}
	if !isName(it) {
		p.errorExpected("expression")
	}
	if !it.Quoted && p.peek(1).Tok == token.LPAREN {
		return p.parseCall()
	}
	p.next()
	return &ast.FieldRef{P: it.Pos, Name: it.Lit}
}

// parseCase parses `CASE [value] WHEN c THEN r ... [ELSE e] END`.
func (p *parser) parseCase() ast.Expr {
	c := &ast.CaseExpr{P: p.expect(token.CASE, "CASE").Pos}
	if p.tok().Tok != token.WHEN {
		c.Value = p.parseExpr()
	}
	for p.tok().Tok == token.WHEN {
		w := ast.WhenClause{P: p.next().Pos, Cond: p.parseExpr()}
		p.expect(token.THEN, "THEN")
		w.Result = p.parseExpr()
		c.Whens = append(c.Whens, w)
	}
	if len(c.Whens) == 0 {
		p.errorExpected("WHEN")
	}
	if p.got(token.ELSE) {
		c.Else = p.parseExpr()
	}
	p.expect(token.END, "WHEN, ELSE or END")
	return c
}

// isUnit reports whether t is a time unit keyword.
func isUnit(t token.Token) bool {
	switch t {
	case token.DD, token.HH, token.MI, token.SS, token.MS:
		return true
	}
	return false
}

// windowType returns the window kind named by a function name, or NoWindow.
func windowType(name string) ast.WindowType {
	switch strings.ToUpper(name) {
	case "TUMBLINGWINDOW":
		return ast.TumblingWindow
	case "HOPPINGWINDOW":
		return ast.HoppingWindow
	case "SLIDINGWINDOW":
		return ast.SlidingWindow
	case "SESSIONWINDOW":
		return ast.SessionWindow
	case "COUNTWINDOW":
		return ast.CountWindow
	case "STATEWINDOW":
		return ast.StateWindow
	}
	return ast.NoWindow
}
