// Package parser turns rekuiper SQL (the eKuiper v2 dialect) into syntax
// trees. It is a hand-written recursive-descent parser over the tokens of
// package scanner; every node it builds carries the position of its first
// token, and every tree prints (String) to SQL that parses to an equal tree.
//
// Errors are *Error values positioned at the offending token, worded
// "expected X, found Y". The parser stops at the first error.
//
// Beyond eKuiper the dialect accepts a NULL literal, `x IS [NOT] NULL`, a
// prefix `NOT x` (binding below comparisons: `NOT a = b` is `NOT (a = b)`),
// `<>` for `!=`, and unary minus on any operand. Index, slice, `->` and `.`
// are postfix operators binding tighter than any binary operator. Only
// eKuiper's reserved words (see reserved) need back-quotes to be used as
// names; other keywords such as STREAM or the column types are names
// wherever a name is expected.
package parser

import (
	"fmt"

	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/sql/scanner"
	"github.com/rekuiper/rekuiper/internal/sql/token"
)

// maxDepth bounds the nesting of expressions and types, so hostile input
// cannot exhaust the stack.
const maxDepth = 1000

// ParseSelect parses one SELECT statement with an optional trailing `;`.
func ParseSelect(sql string) (*ast.SelectStmt, error) {
	return run(sql, func(p *parser) *ast.SelectStmt {
		s := p.parseSelect()
		p.expectEnd()
		return s
	})
}

// ParseStatement parses one statement of any kind (SELECT, CREATE
// STREAM|TABLE, SHOW, DESCRIBE, EXPLAIN, DROP) with an optional trailing `;`.
func ParseStatement(sql string) (ast.Statement, error) {
	return run(sql, func(p *parser) ast.Statement {
		s := p.parseStatement()
		p.expectEnd()
		return s
	})
}

// ParseStatements parses a sequence of statements separated by `;`. An
// empty input yields no statements.
func ParseStatements(sql string) ([]ast.Statement, error) {
	return run(sql, func(p *parser) []ast.Statement {
		var out []ast.Statement
		for {
			for p.got(token.SEMICOLON) {
			}
			if p.tok().Tok == token.EOF {
				return out
			}
			out = append(out, p.parseStatement())
			if p.tok().Tok != token.EOF {
				p.expect(token.SEMICOLON, "; or end of input")
			}
		}
	})
}

// ParseExpr parses a lone expression, such as the condition of a graph rule
// node. Wildcards are not expressions and are rejected.
func ParseExpr(sql string) (ast.Expr, error) {
	return run(sql, func(p *parser) ast.Expr {
		e := p.parseExpr()
		if p.tok().Tok != token.EOF {
			p.errorExpected("end of expression")
		}
		return e
	})
}

// Error is a syntax error at a position of the input.
type Error struct {
	Pos token.Pos
	Msg string
}

// Error formats the error as "line:col: message".
func (e *Error) Error() string { return e.Pos.String() + ": " + e.Msg }

// bailout carries the first error up to run; it is never seen outside this
// package.
type bailout struct{ err *Error }

// run scans sql and applies f, turning a bailout into an error. Any other
// panic is a bug and propagates.
func run[T any](sql string, f func(*parser) T) (res T, err error) {
	p := newParser(sql)
	defer func() {
		if r := recover(); r != nil {
			b, ok := r.(bailout)
			if !ok {
				panic(r)
			}
			var zero T
			res, err = zero, b.err
		}
	}()
	return f(p), nil
}

// parser holds the scanned tokens; the last one is EOF or ILLEGAL.
type parser struct {
	toks  []scanner.Item
	i     int
	depth int
}

func newParser(sql string) *parser {
	sc := scanner.New(sql)
	var toks []scanner.Item
	for {
		it := sc.Scan()
		toks = append(toks, it)
		if it.Tok == token.EOF || it.Tok == token.ILLEGAL {
			return &parser{toks: toks}
		}
	}
}

// tok returns the current token.
func (p *parser) tok() scanner.Item { return p.toks[p.i] }

// peek returns the token n places after the current one (the final EOF or
// ILLEGAL when past the end).
func (p *parser) peek(n int) scanner.Item {
	if p.i+n >= len(p.toks) {
		return p.toks[len(p.toks)-1]
	}
	return p.toks[p.i+n]
}

// next returns the current token and moves past it (never past the end).
func (p *parser) next() scanner.Item {
	it := p.toks[p.i]
	if p.i < len(p.toks)-1 {
		p.i++
	}
	return it
}

// got consumes the current token if it is t.
func (p *parser) got(t token.Token) bool {
	if p.tok().Tok == t {
		p.next()
		return true
	}
	return false
}

// expect consumes a token of kind t or fails with "expected what".
func (p *parser) expect(t token.Token, what string) scanner.Item {
	if p.tok().Tok != t {
		p.errorExpected(what)
	}
	return p.next()
}

// expectEnd accepts an optional `;` followed by the end of input.
func (p *parser) expectEnd() {
	p.got(token.SEMICOLON)
	if p.tok().Tok != token.EOF {
		p.errorExpected("end of statement")
	}
}

func (p *parser) errorAt(pos token.Pos, format string, args ...any) {
	panic(bailout{&Error{Pos: pos, Msg: fmt.Sprintf(format, args...)}})
}

// errorExpected reports that the current token is not what was expected; a
// lexical error at the current token is reported instead.
func (p *parser) errorExpected(what string) {
	it := p.tok()
	if it.Tok == token.ILLEGAL {
		p.errorAt(it.Pos, "%s", it.Lit)
	}
	p.errorAt(it.Pos, "expected %s, found %s", what, describe(it))
}

// describe names a token for error messages: keywords in upper case,
// identifiers, numbers and operators as written, strings quoted.
func describe(it scanner.Item) string {
	switch {
	case it.Tok == token.EOF:
		return "EOF"
	case it.Tok == token.IDENT && it.Quoted:
		return ast.QuoteIdent(it.Lit)
	case it.Tok == token.STRING:
		return ast.QuoteString(it.Lit)
	case it.Tok.IsKeyword():
		return it.Tok.String()
	case it.Lit != "":
		return it.Lit
	}
	return it.Tok.String()
}

// reserved reports whether t is one of eKuiper's reserved words, which can
// only be used as names when back-quoted. Other keywords (CREATE, STREAM,
// column types, ...) are ordinary names outside the statement part that
// gives them meaning.
func reserved(t token.Token) bool {
	switch t {
	case token.SELECT, token.AS, token.FROM, token.WHERE, token.AND, token.OR,
		token.GROUP, token.HAVING, token.ORDER, token.BY, token.DESC, token.ASC,
		token.FILTER, token.INNER, token.LEFT, token.RIGHT, token.FULL, token.CROSS,
		token.JOIN, token.ON, token.CASE, token.WHEN, token.THEN, token.DEFAULT,
		token.ELSE, token.END, token.IN, token.NOT, token.BETWEEN, token.LIKE,
		token.OVER, token.PARTITION, token.REPLACE, token.EXCEPT, token.INVISIBLE,
		token.TRUE, token.FALSE, token.DD, token.HH, token.MI, token.SS, token.MS,
		token.LIMIT:
		return true
	}
	return false
}

// isName reports whether it can stand for an identifier.
func isName(it scanner.Item) bool {
	return it.Tok == token.IDENT || it.Tok.IsKeyword() && !reserved(it.Tok)
}

// parseName consumes an identifier (or non-reserved keyword) and returns it
// as written.
func (p *parser) parseName(what string) (string, token.Pos) {
	if !isName(p.tok()) {
		p.errorExpected(what)
	}
	it := p.next()
	return it.Lit, it.Pos
}

// enter guards recursion depth; callers defer p.leave().
func (p *parser) enter() {
	p.depth++
	if p.depth > maxDepth {
		p.errorAt(p.tok().Pos, "expression nested too deeply")
	}
}

func (p *parser) leave() { p.depth-- }
