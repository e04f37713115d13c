package parser

import (
	"errors"
	"testing"

	"github.com/rekuiper/rekuiper/internal/sql/sqltest"
)

// TestErrors parses inputs that carry an ERROR marker and checks the error's
// message and that its position is the first token after the marker.
func TestErrors(t *testing.T) {
	tests := []string{
		`SELECT /* ERROR "expected expression, found FROM" */ FROM t`,
		`SELECT a FROM t WHERE /* ERROR "expected expression, found EOF" */`,
		`SELECT a /* ERROR "expected , or FROM, found b" */ b FROM t`,
		`SELECT a FROM /* ERROR "expected stream name, found WHERE" */ WHERE`,
		`SELECT a FROM t /* ERROR "expected INNER, LEFT, RIGHT, FULL or CROSS before JOIN, found JOIN" */ JOIN u ON a`,
		`SELECT a FROM t CROSS JOIN u /* ERROR "CROSS JOIN cannot have an ON condition" */ ON t.a = u.a`,
		`SELECT a FROM t INNER /* ERROR "expected JOIN, found u" */ u`,
		`SELECT a FROM t GROUP /* ERROR "expected BY, found a" */ a`,
		`SELECT a FROM t GROUP BY TUMBLINGWINDOW(ss, 1), /* ERROR "only one window" */ COUNTWINDOW(3)`,
		`SELECT a FROM t GROUP BY TUMBLINGWINDOW(/* ERROR "expected time unit" */ 1, 2)`,
		`SELECT a FROM t GROUP BY TUMBLINGWINDOW(ss, 1 /* ERROR "expected ) after 1 arguments of TUMBLINGWINDOW, found ," */ , 2)`,
		`SELECT a FROM t GROUP BY HOPPINGWINDOW(ss, 1 /* ERROR "expected 2 arguments after the time unit of HOPPINGWINDOW, found 1" */ )`,
		`SELECT a FROM t GROUP BY COUNTWINDOW(/* ERROR "expected expression, found )" */ )`,
		`SELECT a FROM t GROUP BY COUNTWINDOW(/* ERROR "expected expression, found SS" */ ss)`,
		`SELECT a FROM t GROUP BY SLIDINGWINDOW(ss, 1) OVER (/* ERROR "expected PARTITION BY, WHEN or ), found ORDER" */ ORDER BY a)`,
		`SELECT a FROM t GROUP BY COUNTWINDOW(2) FILTER (/* ERROR "expected WHERE, found a" */ a)`,
		`SELECT a FROM t LIMIT /* ERROR "expected integer, found -" */ -1`,
		`SELECT a FROM t LIMIT /* ERROR "expected integer, found 1.5" */ 1.5`,
		`SELECT a FROM t LIMIT /* ERROR "LIMIT 99999999999999999999 out of range" */ 99999999999999999999`,
		`SELECT a FROM t ORDER /* ERROR "expected BY" */ a`,
		`SELECT a FROM t /* ERROR "expected end of statement, found garbage" */ garbage`,
		`SELECT a FROM t; /* ERROR "expected end of statement, found SELECT" */ SELECT b FROM t`,
		`SELECT * /* ERROR "expected , or FROM, found AS" */ AS x FROM t`,
		`SELECT a AS /* ERROR "expected alias, found FROM" */ FROM t`,
		`SELECT a FROM t WHERE a NOT /* ERROR "expected IN, BETWEEN or LIKE after NOT, found b" */ b`,
		`SELECT a FROM t WHERE a BETWEEN 1 /* ERROR "expected AND, found OR" */ OR 2`,
		`SELECT a FROM t WHERE a IS /* ERROR "expected NULL, found 1" */ 1`,
		`SELECT a FROM t WHERE a IN (/* ERROR "expected expression, found )" */ )`,
		`SELECT (a /* ERROR "expected ), found ," */ , b) FROM t`,
		`SELECT f(a /* ERROR "expected , or ), found b" */ b) FROM t`,
		`SELECT a[1 /* ERROR "expected : or ], found 2" */ 2] FROM t`,
		`SELECT a-> /* ERROR "expected identifier, found 1" */ 1 FROM t`,
		`SELECT a.b. /* ERROR "expected identifier, found *" */ * FROM t`,
		`SELECT CASE /* ERROR "expected expression, found END" */ END FROM t`,
		`SELECT CASE WHEN a THEN 1 /* ERROR "expected WHEN, ELSE or END, found FROM" */ FROM t`,
		`SELECT CASE a WHEN 1 /* ERROR "expected THEN, found 2" */ 2 END FROM t`,
		`SELECT lag(a) OVER (PARTITION /* ERROR "expected BY, found a" */ a) FROM t`,
		`SELECT * EXCEPT(/* ERROR "expected column name, found 1" */ 1) FROM t`,
		`SELECT * REPLACE(a /* ERROR "expected AS, found )" */ ) FROM t`,
		`SELECT /* ERROR "expected expression, found SS" */ ss FROM t`,
		`SELECT a, /* ERROR "expected expression, found FROM" */ FROM t`,
		`SELECT /* ERROR "string literal not terminated" */ "abc FROM t`,
		"SELECT /* ERROR \"quoted identifier not terminated\" */ `abc FROM t",
		`SELECT a /* ERROR "comment not terminated" */ /* FROM t`,
		`SELECT /* ERROR "unexpected character '!'" */ ! a FROM t`,
		`SELECT /* ERROR "unexpected character '$'" */ $a FROM t`,
		"SELECT /* ERROR \"invalid UTF-8\" */ \xff FROM t",
		"SELECT /* ERROR \"invalid UTF-8 encoding in string literal\" */ \"a\xffb\" FROM t",
		`SELECT /* ERROR "number 1e999 out of range" */ 1e999 FROM t`,
		`SELECT /* ERROR "expected expression, found +" */ + 1 FROM t`,
		`SELECT a FROM t WHERE a = /* ERROR "expected expression, found EXCEPT" */ EXCEPT`,
		`/* ERROR "expected SELECT, CREATE, SHOW, DESCRIBE, EXPLAIN or DROP, found a" */ a`,
		`SHOW /* ERROR "expected STREAMS or TABLES, found STREAM" */ STREAM`,
		`DROP /* ERROR "expected STREAM or TABLE, found STREAMS" */ STREAMS s`,
		`DESCRIBE STREAM /* ERROR "expected stream name, found EOF" */`,
		`CREATE /* ERROR "expected STREAM or TABLE, found view" */ view v () WITH (DATASOURCE="x")`,
		`CREATE STREAM s (a /* ERROR "expected column type" */ INT) WITH (DATASOURCE="x")`,
		`CREATE STREAM s (a ARRAY(/* ERROR "expected column type" */ )) WITH (DATASOURCE="x")`,
		`CREATE STREAM s (a STRUCT(/* ERROR "expected column name, found )" */ )) WITH (DATASOURCE="x")`,
		`CREATE STREAM s (a BIGINT DEFAULT /* ERROR "expected literal, found b" */ b) WITH (DATASOURCE="x")`,
		`CREATE STREAM s (a BIGINT /* ERROR "expected , or ), found b" */ b) WITH (DATASOURCE="x")`,
		`CREATE STREAM s () WITH (DATASOURCE="x", /* ERROR "unknown stream option FOO" */ FOO="y")`,
		`CREATE STREAM s () WITH (DATASOURCE=/* ERROR "expected string, found 1" */ 1)`,
		`CREATE STREAM s () WITH (DATASOURCE /* ERROR "expected =, found 1" */ 1)`,
		`CREATE STREAM s () WITH (DATASOURCE="x" /* ERROR "expected , or ), found TYPE" */ TYPE="y")`,
		`CREATE STREAM s () WITH (DATASOURCE="x") /* ERROR "expected end of statement, found a" */ a`,
	}
	for _, src := range tests {
		t.Run(src, func(t *testing.T) {
			want := sqltest.Marker(t, src)
			_, err := ParseStatement(src)
			var perr *Error
			if !errors.As(err, &perr) {
				t.Fatalf("got error %v (%T), want *Error", err, err)
			}
			want.Check(t, perr.Msg, perr.Pos, perr)
		})
	}
}

func TestErrorFormat(t *testing.T) {
	_, err := ParseSelect("SELECT FROM t")
	if err == nil || err.Error() != "1:8: expected expression, found FROM" {
		t.Fatalf("got %v", err)
	}
	_, err = ParseSelect("SELECT a\n  FROM t WHERE")
	if err == nil || err.Error() != "2:15: expected expression, found EOF" {
		t.Fatalf("got %v", err)
	}
	if _, err := ParseExpr("a b"); err == nil || err.Error() != "1:3: expected end of expression, found b" {
		t.Fatalf("got %v", err)
	}
}
