package parser

import (
	"strings"

	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/sql/token"
)

// parseKind parses STREAM or TABLE (plural when plural is set).
func (p *parser) parseKind(plural bool) ast.StreamKind {
	stream, table, what := token.STREAM, token.TABLE, "STREAM or TABLE"
	if plural {
		stream, table, what = token.STREAMS, token.TABLES, "STREAMS or TABLES"
	}
	switch p.tok().Tok {
	case stream:
		p.next()
		return ast.KindStream
	case table:
		p.next()
		return ast.KindTable
	}
	p.errorExpected(what)
	return 0
}

// parseCreate parses `CREATE STREAM|TABLE name ( fields ) [WITH ( options )]`.
func (p *parser) parseCreate() *ast.CreateStreamStmt {
	s := &ast.CreateStreamStmt{P: p.expect(token.CREATE, "CREATE").Pos}
	s.Kind = p.parseKind(false)
	s.Name, _ = p.parseStreamName()
	p.expect(token.LPAREN, "(")
	if p.tok().Tok != token.RPAREN {
		s.Fields = p.parseStreamFields()
	}
	p.expect(token.RPAREN, ", or )")
	if p.got(token.WITH) {
		s.Options = p.parseOptions()
	}
	return s
}

// parseStreamFields parses one or more `name TYPE [DEFAULT literal]`.
func (p *parser) parseStreamFields() []ast.StreamField {
	var fields []ast.StreamField
	for {
		name, pos := p.parseName("column name")
		f := ast.StreamField{P: pos, Name: name, Type: p.parseType()}
		if p.got(token.DEFAULT) {
			f.Default = p.parseDefault()
		}
		fields = append(fields, f)
		if !p.got(token.COMMA) {
			return fields
		}
	}
}

// parseType parses a column type: a scalar type, ARRAY(type) or
// STRUCT(fields).
func (p *parser) parseType() *ast.DataType {
	p.enter()
	defer p.leave()
	it := p.tok()
	t := &ast.DataType{P: it.Pos, Kind: it.Tok}
	switch it.Tok {
	case token.BIGINT, token.FLOAT, token.STRINGTYPE, token.DATETIME, token.BOOLEAN, token.BYTEA:
		p.next()
		return t
	case token.ARRAY:
		p.next()
		p.expect(token.LPAREN, "(")
		t.Elem = p.parseType()
		p.expect(token.RPAREN, ")")
		return t
	case token.STRUCT:
		p.next()
		p.expect(token.LPAREN, "(")
		t.Fields = p.parseStreamFields()
		p.expect(token.RPAREN, ", or )")
		return t
	}
	p.errorExpected("column type (BIGINT, FLOAT, STRING, DATETIME, BOOLEAN, BYTEA, ARRAY or STRUCT)")
	return nil
}

// parseDefault parses the literal after DEFAULT.
func (p *parser) parseDefault() ast.Expr {
	it := p.tok()
	e := p.parseUnary()
	switch e.(type) {
	case *ast.IntegerLit, *ast.NumberLit, *ast.StringLit, *ast.BoolLit, *ast.NullLit:
		return e
	}
	p.errorAt(it.Pos, "expected literal, found %s", describe(it))
	return nil
}

// parseOptions parses `( KEY = value, ... )` after WITH. Keys are
// upper-cased and must be known; values are strings or TRUE/FALSE.
func (p *parser) parseOptions() []ast.Option {
	p.expect(token.LPAREN, "(")
	var opts []ast.Option
	for p.tok().Tok != token.RPAREN {
		if opts != nil {
			p.expect(token.COMMA, ", or )")
		}
		opts = append(opts, p.parseOption())
	}
	p.next()
	return opts
}

// parseOption parses one `KEY = value`.
func (p *parser) parseOption() ast.Option {
	it := p.tok()
	if it.Tok != token.IDENT && !it.Tok.IsKeyword() {
		p.errorExpected("option name")
	}
	key := strings.ToUpper(it.Lit)
	if !knownOption(key) {
		p.errorAt(it.Pos, "unknown stream option %s", it.Lit)
	}
	p.next()
	p.expect(token.EQ, "=")
	opt := ast.Option{P: it.Pos, Key: key}
	switch v := p.tok(); v.Tok {
	case token.STRING:
		opt.Value = v.Lit
	case token.TRUE:
		opt.Value = "true"
	case token.FALSE:
		opt.Value = "false"
	default:
		p.errorExpected("string")
	}
	p.next()
	return opt
}

// knownOption reports whether key (upper case) is a WITH option of CREATE
// STREAM or TABLE.
func knownOption(key string) bool {
	switch key {
	case "DATASOURCE", "FORMAT", "KEY", "CONF_KEY", "TYPE", "SHARED", "STRICT_VALIDATION",
		"TIMESTAMP", "TIMESTAMP_FORMAT", "SCHEMAID", "DELIMITER", "KIND", "RETAIN_SIZE",
		"EXTRA", "VERSION", "TEMP":
		return true
	}
	return false
}

// parseShow parses `SHOW STREAMS|TABLES`.
func (p *parser) parseShow() *ast.ShowStmt {
	pos := p.expect(token.SHOW, "SHOW").Pos
	return &ast.ShowStmt{P: pos, Kind: p.parseKind(true)}
}

// parseDescribe parses `DESCRIBE|EXPLAIN STREAM|TABLE name`.
func (p *parser) parseDescribe() *ast.DescribeStmt {
	verb := p.next()
	s := &ast.DescribeStmt{P: verb.Pos, Explain: verb.Tok == token.EXPLAIN}
	s.Kind = p.parseKind(false)
	s.Name, _ = p.parseStreamName()
	return s
}

// parseDrop parses `DROP STREAM|TABLE name`.
func (p *parser) parseDrop() *ast.DropStmt {
	s := &ast.DropStmt{P: p.expect(token.DROP, "DROP").Pos}
	s.Kind = p.parseKind(false)
	s.Name, _ = p.parseStreamName()
	return s
}
