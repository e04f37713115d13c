package parser

import (
	"reflect"
	"testing"

	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/sql/token"
)

// TestParsePrinted checks statements against their expected printed form,
// which makes grouping (precedence), normalisation and clause handling
// visible, and that the printed form round-trips.
func TestParsePrinted(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"minimal", "select a from t", "SELECT a FROM t"},
		{"trailing semicolon", "SELECT a FROM t;", "SELECT a FROM t"},
		{"alias and invisible", "SELECT a AS x INVISIBLE, b as `y z` FROM t", "SELECT a AS x INVISIBLE, b AS `y z` FROM t"},
		{"wildcards", "SELECT *, s.*, * EXCEPT(a, `b`) , * REPLACE(a*10 AS a, upper(b) AS b) FROM s",
			"SELECT *, s.*, * EXCEPT(a, b), * REPLACE(a * 10 AS a, upper(b) AS b) FROM s"},
		{"wildcard both modifiers", "SELECT * REPLACE(1 AS a) EXCEPT(b) FROM s", "SELECT * EXCEPT(b) REPLACE(1 AS a) FROM s"},
		{"source alias", "SELECT a FROM demo AS d", "SELECT a FROM demo AS d"},
		{"topic name", "SELECT a FROM a/+/b/#", "SELECT a FROM `a/+/b/#`"},
		{"topic name with numbers and keywords", "SELECT a FROM /dev/1/stream", "SELECT a FROM `/dev/1/stream`"},
		{"joins", "SELECT * FROM a INNER JOIN b ON a.id = b.id left join c as cc on a.x = cc.x CROSS JOIN d FULL JOIN e ON true RIGHT JOIN f ON 1",
			"SELECT * FROM a INNER JOIN b ON a.id = b.id LEFT JOIN c AS cc ON a.x = cc.x CROSS JOIN d FULL JOIN e ON TRUE RIGHT JOIN f ON 1"},
		{"join without on", "SELECT * FROM a INNER JOIN b", "SELECT * FROM a INNER JOIN b"},
		{"precedence", "SELECT a + b * c - d / e % f FROM t", "SELECT a + b * c - d / e % f FROM t"},
		{"bitwise levels", "SELECT a | b & c ^ d FROM t", "SELECT a | b & c ^ d FROM t"},
		{"logic", "SELECT a FROM t WHERE a = 1 OR b = 2 AND NOT c", "SELECT a FROM t WHERE a = 1 OR b = 2 AND NOT c"},
		{"neq spellings", "SELECT a FROM t WHERE a <> 1 AND b != 2", "SELECT a FROM t WHERE a != 1 AND b != 2"},
		{"in list and expr", "SELECT a IN (1, 2), b NOT IN (\"x\"), c IN arr FROM t", "SELECT a IN (1, 2), b NOT IN (\"x\"), c IN arr FROM t"},
		{"between", "SELECT a FROM t WHERE a BETWEEN 1 AND 2 AND b NOT BETWEEN -1 AND 1.5", "SELECT a FROM t WHERE a BETWEEN 1 AND 2 AND b NOT BETWEEN -1 AND 1.5"},
		{"like", "SELECT a LIKE \"x%\", a NOT LIKE 'y_' FROM t", "SELECT a LIKE \"x%\", a NOT LIKE \"y_\" FROM t"},
		{"is null", "SELECT a IS NULL, b IS NOT NULL, NULL FROM t", "SELECT a IS NULL, b IS NOT NULL, NULL FROM t"},
		{"unary minus", "SELECT -1, - 2.5, -a, - -a, -(1), -1[0], - -1[0] FROM t", "SELECT -1, -2.5, -a, - -a, -(1), -1[0], - -1[0] FROM t"},
		{"double negative literals", "SELECT - -1, - - -2.5, - -0, - -9223372036854775808, - -0.0 FROM t",
			"SELECT 1, -2.5, 0, 9223372036854775808, 0.0 FROM t"},
		{"arrow and dot", "SELECT a->b->c, s.col, a.b.c, f(x).y, (a).b FROM t", "SELECT a->b->c, s.col, a.b->c, f(x)->y, (a)->b FROM t"},
		{"subscripts", "SELECT a[0], a[-1], a[1:2], a[:2], a[1:], a[], a[:], a[i+1]->b FROM t",
			"SELECT a[0], a[-1], a[1:2], a[:2], a[1:], a[], a[:], a[i + 1]->b FROM t"},
		{"case", "SELECT CASE WHEN a > 1 THEN 'big' ELSE \"small\" END, CASE a WHEN 1 THEN 2 END FROM t",
			"SELECT CASE WHEN a > 1 THEN \"big\" ELSE \"small\" END, CASE a WHEN 1 THEN 2 END FROM t"},
		{"calls", "SELECT count(*), f(), meta(*), meta(s.key), meta(key->sub), mqtt(topic), tsschemaless(\"p\", * EXCEPT(a)) FROM t",
			"SELECT count(*), f(), meta(*), meta(s.key), meta(key->sub), mqtt(topic), tsschemaless(\"p\", * EXCEPT(a)) FROM t"},
		{"analytic over", "SELECT lag(a) OVER (WHEN b > 1 PARTITION BY c), row_number() over (partition by k order by v desc) FROM t",
			"SELECT lag(a) OVER (PARTITION BY c WHEN b > 1), row_number() OVER (PARTITION BY k ORDER BY v DESC) FROM t"},
		{"window and dims", "SELECT a FROM t GROUP BY SlidingWindow(ss, 2) OVER (WHEN b) , color, k",
			"SELECT a FROM t GROUP BY color, k, SlidingWindow(SS, 2) OVER (WHEN b)"},
		{"window filter", "SELECT a FROM t GROUP BY HOPPINGWINDOW(mi, 4, 2) FILTER ( WHERE dev != \"c\") HAVING count(*) >= 2",
			"SELECT a FROM t GROUP BY HOPPINGWINDOW(MI, 4, 2) FILTER (WHERE dev != \"c\") HAVING count(*) >= 2"},
		{"state window partition", "SELECT a FROM t GROUP BY statewindow(a > 1, a < 0) over (partition by k, j when a)",
			"SELECT a FROM t GROUP BY statewindow(a > 1, a < 0) OVER (PARTITION BY k, j WHEN a)"},
		{"count window", "SELECT a FROM t GROUP BY COUNTWINDOW(4, 2)", "SELECT a FROM t GROUP BY COUNTWINDOW(4, 2)"},
		{"order and limit", "SELECT a FROM t ORDER BY a, b desc, c asc LIMIT 10", "SELECT a FROM t ORDER BY a ASC, b DESC, c ASC LIMIT 10"},
		{"non-reserved words as names", "SELECT count, upper(state), V, stream, table, float, string, array, is, create FROM text",
			"SELECT count, upper(state), V, `stream`, `table`, `float`, `string`, `array`, `is`, `create` FROM text"},
		{"keyword aliases", "SELECT v AS count, upper(k) AS upper, x AS stream FROM t", "SELECT v AS count, upper(k) AS upper, x AS `stream` FROM t"},
		{"quoted names", "SELECT `from`, `a b`, `x\\`y` FROM `my stream`", "SELECT `from`, `a b`, `x\\`y` FROM `my stream`"},
		{"string escapes", `SELECT "a\"b", 'c\'d', "e\\f", "\n\t\r", "\d" FROM t`, `SELECT "a\"b", "c'd", "e\\f", "\n\t\r", "\\d" FROM t`},
		{"numbers", "SELECT 1, 2.5, 1e3, 1.5E-2, 99999999999999999999 FROM t", "SELECT 1, 2.5, 1e3, 1.5E-2, 99999999999999999999 FROM t"},
		{"comments", "SELECT a -- the a\n, /* b */ b FROM t /* end */", "SELECT a, b FROM t"},
		{"window names call outside group", "SELECT tumblingwindow(ss, 1) FROM t", "SELECT tumblingwindow(SS, 1) FROM t"},
		{"not binds below comparison", "SELECT NOT a = b AND c FROM t", "SELECT NOT a = b AND c FROM t"},
		{"create stream", "create stream demo (\n\tcolor STRING,\n\tsize bigint DEFAULT -1\n) WITH (DATASOURCE=\"demo\", type=\"mock\", FORMAT='json', SHARED=true);",
			"CREATE STREAM demo (color STRING, size BIGINT DEFAULT -1) WITH (DATASOURCE = \"demo\", TYPE = \"mock\", FORMAT = \"json\", SHARED = \"true\")"},
		{"create table nested types", "CREATE TABLE t (a ARRAY(STRUCT(b FLOAT, c ARRAY(BOOLEAN))), d STRUCT(e DATETIME, f BYTEA)) WITH (KIND=\"lookup\")",
			"CREATE TABLE t (a ARRAY(STRUCT(b FLOAT, c ARRAY(BOOLEAN))), d STRUCT(e DATETIME, f BYTEA)) WITH (KIND = \"lookup\")"},
		{"schemaless", "CREATE STREAM s () WITH (DATASOURCE=\"s\")", "CREATE STREAM s () WITH (DATASOURCE = \"s\")"},
		{"no options", "CREATE STREAM s ()", "CREATE STREAM s ()"},
		{"show", "show tables", "SHOW TABLES"},
		{"describe", "DESCRIBE STREAM demo;", "DESCRIBE STREAM demo"},
		{"explain", "explain table demo", "EXPLAIN TABLE demo"},
		{"drop", "DROP STREAM demo", "DROP STREAM demo"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stmt, err := ParseStatement(tt.in)
			if err != nil {
				t.Fatalf("parse %q: %v", tt.in, err)
			}
			if got := checkRoundTrip(t, tt.in, stmt); got != tt.want {
				t.Errorf("printed\n got: %s\nwant: %s", got, tt.want)
			}
		})
	}
}

func pos(line, col int) token.Pos { return token.Pos{Line: line, Col: col} }

// lineCol keeps only line and column, the parts the tests below spell out.
func lineCol(p token.Pos) token.Pos { return token.Pos{Line: p.Line, Col: p.Col} }

// TestParseExprTrees checks the exact tree built for expressions whose
// printed form would hide the distinction.
func TestParseExprTrees(t *testing.T) {
	ref := func(stream, name string) *ast.FieldRef { return &ast.FieldRef{Stream: stream, Name: name} }
	tests := []struct {
		in   string
		want ast.Expr
	}{
		{"a.b", ref("a", "b")},
		{"a.b.c", &ast.BinaryExpr{Op: token.ARROW, LHS: ref("a", "b"), RHS: ref("", "c")}},
		{"a->b", &ast.BinaryExpr{Op: token.ARROW, LHS: ref("", "a"), RHS: ref("", "b")}},
		{"-5", &ast.IntegerLit{Val: -5}},
		{"-2.5", &ast.NumberLit{Val: -2.5, Raw: "-2.5"}},
		{"-9223372036854775808", &ast.IntegerLit{Val: -9223372036854775808}},
		{"9223372036854775808", &ast.NumberLit{Val: 9223372036854775808, Raw: "9223372036854775808"}},
		{"-a", &ast.UnaryExpr{Op: token.SUB, X: ref("", "a")}},
		{"1 + 2 * 3", &ast.BinaryExpr{Op: token.ADD, LHS: &ast.IntegerLit{Val: 1},
			RHS: &ast.BinaryExpr{Op: token.MUL, LHS: &ast.IntegerLit{Val: 2}, RHS: &ast.IntegerLit{Val: 3}}}},
		{"1 - 2 - 3", &ast.BinaryExpr{Op: token.SUB,
			LHS: &ast.BinaryExpr{Op: token.SUB, LHS: &ast.IntegerLit{Val: 1}, RHS: &ast.IntegerLit{Val: 2}}, RHS: &ast.IntegerLit{Val: 3}}},
		{"a | b & c", &ast.BinaryExpr{Op: token.BITOR, LHS: ref("", "a"),
			RHS: &ast.BinaryExpr{Op: token.BITAND, LHS: ref("", "b"), RHS: ref("", "c")}}},
		{"a OR b AND c", &ast.BinaryExpr{Op: token.OR, LHS: ref("", "a"),
			RHS: &ast.BinaryExpr{Op: token.AND, LHS: ref("", "b"), RHS: ref("", "c")}}},
		{"a * b->c", &ast.BinaryExpr{Op: token.MUL, LHS: ref("", "a"),
			RHS: &ast.BinaryExpr{Op: token.ARROW, LHS: ref("", "b"), RHS: ref("", "c")}}},
		{"NOT a = b", &ast.UnaryExpr{Op: token.NOT, X: &ast.BinaryExpr{Op: token.EQ, LHS: ref("", "a"), RHS: ref("", "b")}}},
		{"a + 1 IS NULL", &ast.IsNullExpr{X: &ast.BinaryExpr{Op: token.ADD, LHS: ref("", "a"), RHS: &ast.IntegerLit{Val: 1}}}},
		{"a IN (1)", &ast.BinaryExpr{Op: token.IN, LHS: ref("", "a"), RHS: &ast.ListExpr{Items: []ast.Expr{&ast.IntegerLit{Val: 1}}}}},
		{"a BETWEEN 1 AND 2 AND b", &ast.BinaryExpr{Op: token.AND,
			LHS: &ast.BinaryExpr{Op: token.BETWEEN, LHS: ref("", "a"),
				RHS: &ast.BetweenRange{Lo: &ast.IntegerLit{Val: 1}, Hi: &ast.IntegerLit{Val: 2}}},
			RHS: ref("", "b")}},
		{"a[]", &ast.SliceExpr{X: ref("", "a"), Full: true}},
		{"a[:2]", &ast.SliceExpr{X: ref("", "a"), Hi: &ast.IntegerLit{Val: 2}}},
		{"count(*)", &ast.Call{Name: "count", Args: []ast.Expr{&ast.Wildcard{}}}},
		{"meta(s.key)", &ast.Call{Name: "meta", Args: []ast.Expr{ref("s", "key")}}},
		{"TumblingWindow(ss, 1)", &ast.Call{Name: "TumblingWindow", Args: []ast.Expr{&ast.TimeUnitLit{Unit: token.SS}, &ast.IntegerLit{Val: 1}}}},
		{"lag(a) OVER (PARTITION BY k WHEN c)", &ast.Call{Name: "lag", Args: []ast.Expr{ref("", "a")},
			Over: &ast.Over{Partition: []ast.Expr{ref("", "k")}, When: ref("", "c")}}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseExpr(tt.in)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if !reflect.DeepEqual(withoutPos(got), tt.want) {
				t.Errorf("tree\n got: %#v\nwant: %#v", got, tt.want)
			}
		})
	}
}

func TestSelectClauses(t *testing.T) {
	stmt, err := ParseSelect("SELECT a\nFROM t AS x GROUP BY k, TUMBLINGWINDOW(ms, 1500) FILTER (WHERE a > 1) LIMIT 7")
	if err != nil {
		t.Fatal(err)
	}
	if stmt.From.Name != "t" || stmt.From.Alias != "x" || lineCol(stmt.From.P) != pos(2, 6) {
		t.Errorf("from = %+v", stmt.From)
	}
	if len(stmt.Dimensions) != 1 || stmt.Dimensions[0].String() != "k" {
		t.Errorf("dimensions = %v", stmt.Dimensions)
	}
	w := stmt.Window
	if w == nil || w.Type != ast.TumblingWindow || w.Unit != token.MS || len(w.Args) != 1 || w.Filter == nil {
		t.Fatalf("window = %+v", w)
	}
	if lineCol(w.P) != pos(2, 25) || w.Name != "TUMBLINGWINDOW" {
		t.Errorf("window pos/name = %v %q", w.P, w.Name)
	}
	if !stmt.HasLimit || stmt.Limit != 7 {
		t.Errorf("limit = %v %d", stmt.HasLimit, stmt.Limit)
	}
	if _, err := ParseSelect("SHOW STREAMS"); err == nil {
		t.Error("ParseSelect accepted SHOW")
	}
}

func TestCreateStream(t *testing.T) {
	stmt, err := ParseStatement("CREATE TABLE t (a BIGINT DEFAULT 3, b STRING) WITH (datasource=\"x\", Strict_Validation=FALSE)")
	if err != nil {
		t.Fatal(err)
	}
	c, ok := stmt.(*ast.CreateStreamStmt)
	if !ok {
		t.Fatalf("got %T", stmt)
	}
	if c.Kind != ast.KindTable || c.Name != "t" || len(c.Fields) != 2 {
		t.Fatalf("stmt = %+v", c)
	}
	if c.Fields[0].Type.Kind != token.BIGINT || !reflect.DeepEqual(withoutPos(c.Fields[0].Default), &ast.IntegerLit{Val: 3}) {
		t.Errorf("field 0 = %+v", c.Fields[0])
	}
	if v, ok := c.Option("STRICT_VALIDATION"); !ok || v != "false" {
		t.Errorf("STRICT_VALIDATION = %q, %v", v, ok)
	}
	if v, _ := c.Option("DATASOURCE"); v != "x" {
		t.Errorf("DATASOURCE = %q", v)
	}
	if lineCol(c.Options[1].P) != pos(1, 69) {
		t.Errorf("option pos = %v", c.Options[1].P)
	}
}

func TestParseStatements(t *testing.T) {
	stmts, err := ParseStatements("SELECT a FROM t; ;SHOW STREAMS; DROP TABLE x")
	if err != nil {
		t.Fatal(err)
	}
	if len(stmts) != 3 {
		t.Fatalf("got %d statements", len(stmts))
	}
	if _, ok := stmts[2].(*ast.DropStmt); !ok {
		t.Errorf("third is %T", stmts[2])
	}
	if stmts, err := ParseStatements("  "); err != nil || len(stmts) != 0 {
		t.Errorf("empty input: %v, %v", stmts, err)
	}
	if _, err := ParseStatements("SHOW STREAMS SHOW TABLES"); err == nil {
		t.Error("missing separator accepted")
	}
}
