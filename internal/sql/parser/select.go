package parser

import (
	"strconv"

	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/sql/scanner"
	"github.com/rekuiper/rekuiper/internal/sql/token"
)

// parseStatement dispatches on the first keyword of a statement.
func (p *parser) parseStatement() ast.Statement {
	switch p.tok().Tok {
	case token.SELECT:
		return p.parseSelect()
	case token.CREATE:
		return p.parseCreate()
	case token.SHOW:
		return p.parseShow()
	case token.DESCRIBE, token.EXPLAIN:
		return p.parseDescribe()
	case token.DROP:
		return p.parseDrop()
	}
	p.errorExpected("SELECT, CREATE, SHOW, DESCRIBE, EXPLAIN or DROP")
	return nil
}

// parseSelect parses a SELECT statement without the trailing `;`.
func (p *parser) parseSelect() *ast.SelectStmt {
	s := &ast.SelectStmt{P: p.expect(token.SELECT, "SELECT").Pos}
	s.Fields = p.parseFields()
	p.expect(token.FROM, ", or FROM")
	s.From = p.parseSource()
	s.Joins = p.parseJoins()
	if p.got(token.WHERE) {
		s.Where = p.parseExpr()
	}
	if p.got(token.GROUP) {
		p.expect(token.BY, "BY")
		s.Dimensions, s.Window = p.parseGroupBy()
	}
	if p.got(token.HAVING) {
		s.Having = p.parseExpr()
	}
	if p.got(token.ORDER) {
		p.expect(token.BY, "BY")
		s.OrderBy = p.parseSortList()
	}
	if p.got(token.LIMIT) {
		s.Limit, s.HasLimit = p.parseLimit(), true
	}
	return s
}

// parseFields parses the SELECT list.
func (p *parser) parseFields() []ast.Field {
	fields := []ast.Field{p.parseField()}
	for p.got(token.COMMA) {
		fields = append(fields, p.parseField())
	}
	return fields
}

// parseField parses `*`, `s.*` (with EXCEPT/REPLACE) or
// `expr [AS alias] [INVISIBLE]`.
func (p *parser) parseField() ast.Field {
	f := ast.Field{P: p.tok().Pos}
	if p.atWildcard() {
		f.Expr = p.parseWildcard()
		return f
	}
	f.Expr = p.parseExpr()
	if p.got(token.AS) {
		f.Alias, _ = p.parseName("alias")
	}
	f.Invisible = p.got(token.INVISIBLE)
	return f
}

// parseSource parses the FROM item: a stream name and an optional alias.
func (p *parser) parseSource() ast.Source {
	name, pos := p.parseStreamName()
	src := ast.Source{P: pos, Name: name}
	if p.got(token.AS) {
		src.Alias, _ = p.parseName("alias")
	}
	return src
}

// parseStreamName parses a stream or table name. MQTT-topic-like names are
// written as adjacent name, `/`, `#`, `+` and number tokens and come back
// concatenated: `FROM a/+/b/#`.
func (p *parser) parseStreamName() (string, token.Pos) {
	first := p.tok()
	if !isName(first) && !topicPunct(first.Tok) {
		p.errorExpected("stream name")
	}
	p.next()
	name, end := first.Lit, first.End
	for it := p.tok(); it.Pos.Offset == end && topicPart(it); it = p.tok() {
		p.next()
		name += it.Lit
		end = it.End
	}
	return name, first.Pos
}

func topicPunct(t token.Token) bool {
	return t == token.DIV || t == token.HASH || t == token.ADD
}

// topicPart reports whether it may continue a concatenated stream name.
func topicPart(it scanner.Item) bool {
	switch it.Tok {
	case token.IDENT, token.INTEGER, token.NUMBER:
		return !it.Quoted
	}
	return topicPunct(it.Tok) || it.Tok.IsKeyword()
}

// parseJoins parses zero or more `<type> JOIN name [AS a] [ON cond]`.
func (p *parser) parseJoins() []ast.Join {
	var joins []ast.Join
	for {
		it := p.tok()
		var typ ast.JoinType
		switch it.Tok {
		case token.INNER:
			typ = ast.InnerJoin
		case token.LEFT:
			typ = ast.LeftJoin
		case token.RIGHT:
			typ = ast.RightJoin
		case token.FULL:
			typ = ast.FullJoin
		case token.CROSS:
			typ = ast.CrossJoin
		case token.JOIN:
			p.errorExpected("INNER, LEFT, RIGHT, FULL or CROSS before JOIN")
		default:
			return joins
		}
		p.next()
		joins = append(joins, p.parseJoin(it.Pos, typ))
	}
}

// parseJoin parses the rest of a join after its type keyword.
func (p *parser) parseJoin(pos token.Pos, typ ast.JoinType) ast.Join {
	p.expect(token.JOIN, "JOIN")
	j := ast.Join{P: pos, Type: typ}
	j.Name, _ = p.parseStreamName()
	if p.got(token.AS) {
		j.Alias, _ = p.parseName("alias")
	}
	if p.tok().Tok == token.ON {
		if typ == ast.CrossJoin {
			p.errorAt(p.tok().Pos, "CROSS JOIN cannot have an ON condition")
		}
		p.next()
		j.On = p.parseExpr()
	}
	return j
}

// parseLimit parses the integer literal after LIMIT.
func (p *parser) parseLimit() int64 {
	it := p.expect(token.INTEGER, "integer")
	n, err := strconv.ParseInt(it.Lit, 10, 64)
	if err != nil {
		p.errorAt(it.Pos, "LIMIT %s out of range", it.Lit)
	}
	return n
}
