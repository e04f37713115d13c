package planner

import (
	"fmt"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/function"
	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/sql/parser"
)

func indexDefs(t *testing.T) map[string]*ast.CreateStreamStmt {
	t.Helper()
	defs := map[string]*ast.CreateStreamStmt{}
	for _, src := range []string{
		`CREATE STREAM s () WITH (TYPE="memory", DATASOURCE="t")`,
		`CREATE STREAM typed (id BIGINT, name STRING) WITH (TYPE="memory", DATASOURCE="t")`,
		`CREATE STREAM strict (id BIGINT, name STRING) WITH (TYPE="memory", DATASOURCE="t", STRICT_VALIDATION="true")`,
		`CREATE STREAM ts (id BIGINT, t BIGINT) WITH (TYPE="memory", DATASOURCE="t", TIMESTAMP="t")`,
		`CREATE STREAM ets () WITH (TYPE="memory", DATASOURCE="t", TIMESTAMP="t")`,
		`CREATE STREAM s2 () WITH (TYPE="memory", DATASOURCE="t2")`,
		`CREATE TABLE tab (id BIGINT) WITH (TYPE="memory", DATASOURCE="t3")`,
	} {
		st, err := parser.ParseStatement(src)
		if err != nil {
			t.Fatal(err)
		}
		d := st.(*ast.CreateStreamStmt)
		defs[d.Name] = d
	}
	return defs
}

// TestIndexKey: which WHERE conditions the stream may test for the rule,
// with the literals as the WHERE evaluates them.
func TestIndexKey(t *testing.T) {
	defs := indexDefs(t)
	for _, tc := range []struct {
		sql       string
		eventTime bool
		want      string // "" no index
	}{
		{sql: `SELECT * FROM s WHERE deviceId = 5`, want: "deviceId [5]"},
		{sql: `SELECT * FROM s WHERE 5 = deviceId`, want: "deviceId [5]"},
		{sql: `SELECT * FROM s WHERE deviceId = -2.5`, want: "deviceId [-2.5]"},
		{sql: `SELECT * FROM s WHERE deviceId = "d1" AND temp > 3`, want: "deviceId [d1]"},
		{sql: `SELECT * FROM s WHERE ((deviceId = true) AND a = 1) AND b = 2`, want: "deviceId [true]"},
		{sql: `SELECT * FROM s AS x WHERE x.deviceId IN (1, 2.0, -3)`, want: "deviceId [1 2 -3]"},
		{sql: `SELECT id FROM typed WHERE typed.name IN ("a", "b")`, want: "name [a b]"},
		{sql: `SELECT count(*) FROM s WHERE deviceId = 1 GROUP BY TUMBLINGWINDOW(ss, 1)`, want: "deviceId [1]"},
		{sql: `SELECT count(*) FROM s WHERE deviceId = 1 GROUP BY HOPPINGWINDOW(ss, 2, 1)`, want: "deviceId [1]"},
		// The condition AND evaluates first is the only one safe.
		{sql: `SELECT * FROM s WHERE temp > 3 AND deviceId = 1`},
		{sql: `SELECT * FROM s WHERE deviceId = 1 OR deviceId = 2`},
		{sql: `SELECT * FROM s WHERE NOT deviceId = 1`},
		{sql: `SELECT * FROM s WHERE deviceId != 1`},
		{sql: `SELECT * FROM s WHERE deviceId NOT IN (1, 2)`},
		{sql: `SELECT * FROM s WHERE deviceId IN (1, "1")`},
		{sql: `SELECT * FROM s WHERE deviceId = NULL`},
		{sql: `SELECT * FROM s WHERE deviceId = a`},
		{sql: `SELECT * FROM s WHERE abs(deviceId) = 1`},
		{sql: `SELECT * FROM s WHERE deviceId + 0 = 1`},
		{sql: `SELECT * FROM s WHERE deviceId = 1 + 1`},
		{sql: `SELECT * FROM s WHERE obj.deviceId = 1`},
		{sql: `SELECT * FROM s WHERE obj->deviceId = 1`},
		{sql: `SELECT a AS deviceId FROM s WHERE deviceId = 1`},
		// Something sees the records the WHERE drops.
		{sql: `SELECT lag(a) AS p FROM s WHERE deviceId = 1`},
		{sql: `SELECT count(*) FROM s WHERE deviceId = 1 GROUP BY COUNTWINDOW(5)`},
		{sql: `SELECT count(*) FROM s WHERE deviceId = 1 GROUP BY SLIDINGWINDOW(ss, 5)`},
		{sql: `SELECT count(*) FROM s WHERE count(*) > 1 GROUP BY TUMBLINGWINDOW(ss, 1)`},
		{sql: `SELECT * FROM strict WHERE id = 1`},
		{sql: `SELECT id FROM ts WHERE id = 1`, eventTime: true},
		{sql: `SELECT count(*) FROM ets WHERE deviceId = 1 GROUP BY TUMBLINGWINDOW(ss, 1)`, eventTime: true},
		{sql: `SELECT * FROM s INNER JOIN tab ON s.id = tab.id WHERE s.id = 1`},
		{sql: `SELECT count(*) FROM s INNER JOIN s2 ON s.id = s2.id WHERE s.id = 1 GROUP BY TUMBLINGWINDOW(ss, 1)`},
		{sql: `SELECT * FROM s`},
	} {
		t.Run(tc.sql, func(t *testing.T) {
			stmt, err := parser.ParseSelect(tc.sql)
			if err != nil {
				t.Fatal(err)
			}
			p, err := Build(stmt, defs, Options{IsEventTime: tc.eventTime}, function.Builtins(), time.UTC)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if p.Index != nil {
				got = fmt.Sprintf("%s %v", p.Index.Column, p.Index.Values)
			}
			if got != tc.want {
				t.Fatalf("index %q, want %q", got, tc.want)
			}
		})
	}
}

// TestIndexKeyLiteralTypes: the literals keep the WHERE's types (int64
// and float64 apart).
func TestIndexKeyLiteralTypes(t *testing.T) {
	stmt, err := parser.ParseSelect(`SELECT * FROM s WHERE deviceId IN (1, 1.5, -2)`)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Build(stmt, indexDefs(t), Options{}, function.Builtins(), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if p.Index == nil || fmt.Sprintf("%T %T %T", p.Index.Values...) != "int64 float64 int64" {
		t.Fatalf("index %+v", p.Index)
	}
}
