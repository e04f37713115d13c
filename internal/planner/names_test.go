package planner_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/rekuiper/rekuiper/internal/function"
	"github.com/rekuiper/rekuiper/internal/planner"
	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/sql/parser"
	"github.com/rekuiper/rekuiper/internal/sql/sqltest"
)

var testDefs = []string{
	`CREATE STREAM s (temperature FLOAT, humidity BIGINT, id BIGINT, st STRUCT(a BIGINT, b STRUCT(c STRING)), arr ARRAY(BIGINT), ts BIGINT) WITH (DATASOURCE="s", TIMESTAMP="ts")`,
	`CREATE STREAM s2 (id BIGINT, hum BIGINT) WITH (DATASOURCE="s2")`,
	`CREATE TABLE tbl (id BIGINT, name STRING) WITH (DATASOURCE="tbl", TYPE="memory")`,
	`CREATE STREAM free () WITH (DATASOURCE="free")`,
}

func plan(t *testing.T, sql string) error {
	t.Helper()
	_, err := build(t, sql, testDefs)
	return err
}

// build plans sql over the streams and tables defs create.
func build(t *testing.T, sql string, defs []string) (*planner.Plan, error) {
	t.Helper()
	streams := map[string]*ast.CreateStreamStmt{}
	for _, d := range defs {
		st, err := parser.ParseStatement(d)
		if err != nil {
			t.Fatal(err)
		}
		cs := st.(*ast.CreateStreamStmt)
		streams[cs.Name] = cs
	}
	stmt, err := parser.ParseSelect(sql)
	if err != nil {
		t.Fatalf("parse %s: %v", sql, err)
	}
	return planner.Build(stmt, streams, planner.Options{}, function.Builtins(), nil)
}

func TestUnknownAndAmbiguousFields(t *testing.T) {
	tests := []string{
		`SELECT /* ERROR "unknown field temprature" */ temprature FROM s`,
		`SELECT temperature FROM s WHERE /* ERROR "unknown field humdity" */ humdity > 1`,
		`SELECT count(*) FROM s GROUP BY /* ERROR "unknown field nope" */ nope, TUMBLINGWINDOW(ss, 10)`,
		`SELECT count(*) AS c FROM s GROUP BY TUMBLINGWINDOW(ss, 10) HAVING /* ERROR "unknown field x" */ x > 1`,
		`SELECT temperature FROM s ORDER BY /* ERROR "unknown field tmp" */ tmp`,
		`SELECT count(*) FROM s GROUP BY TUMBLINGWINDOW(ss, 10) FILTER (WHERE /* ERROR "unknown field tmp" */ tmp > 1)`,
		`SELECT count(*) FROM s GROUP BY STATEWINDOW(temperature > 1, /* ERROR "unknown field hum" */ hum > 2)`,
		`SELECT lag(/* ERROR "unknown field tmp" */ tmp) FROM s`,
		`SELECT lag(temperature) OVER (PARTITION BY /* ERROR "unknown field dev" */ dev) FROM s`,
		`SELECT lag(temperature) OVER (WHEN /* ERROR "unknown field dev" */ dev > 1) FROM s`,
		`SELECT abs(/* ERROR "unknown field tmp" */ tmp) FROM s`,
		`SELECT CASE WHEN /* ERROR "unknown field tmp" */ tmp > 1 THEN 1 END FROM s`,
		`SELECT * REPLACE(/* ERROR "unknown field tmp" */ tmp * 2 AS temperature) FROM s`,
		`SELECT /* ERROR "unknown field stt" */ stt->a FROM s`,
		`SELECT /* ERROR "unknown field x" */ x + 1 AS x FROM s`,
		`SELECT arr[/* ERROR "unknown field i" */ i] FROM s`,
		`SELECT /* ERROR "unknown field x: x.temperature names neither a stream of the rule (s) nor a field" */ x.temperature FROM s`,
		`SELECT temperature FROM s WHERE /* ERROR "unknown field x: x.temperature names neither" */ x.temperature > 1`,
		`SELECT /* ERROR "unknown field x: x.* names no stream of the rule (s)" */ x.* FROM s`,
		`SELECT /* ERROR "unknown field s.nope: stream s has no field nope" */ s.nope FROM s`,
		`SELECT /* ERROR "unknown field t.nope: stream s has no field nope" */ t.nope FROM s AS t`,
		`SELECT s.id FROM s INNER JOIN s2 ON s.id = /* ERROR "unknown field s2.temperature: stream s2 has no field temperature" */ s2.temperature GROUP BY TUMBLINGWINDOW(ss, 10)`,
		`SELECT /* ERROR "ambiguous field id: it is a field of s and s2; qualify it as s.id" */ id FROM s INNER JOIN s2 ON s.id = s2.id GROUP BY TUMBLINGWINDOW(ss, 10)`,
		`SELECT s.id FROM s INNER JOIN s2 ON /* ERROR "ambiguous field id" */ id = s2.id GROUP BY TUMBLINGWINDOW(ss, 10)`,
		`SELECT s.id FROM s INNER JOIN s2 ON s.id = s2.id WHERE /* ERROR "ambiguous field id" */ id > 1 GROUP BY TUMBLINGWINDOW(ss, 10)`,
		`SELECT /* ERROR "ambiguous field id: it is a field of s and tbl" */ id FROM s INNER JOIN tbl ON s.id = tbl.id`,
		`SELECT /* ERROR "unknown field nope" */ nope FROM s INNER JOIN tbl ON s.id = tbl.id`,
		"SELECT temperature,\n  humidity\nFROM s\nWHERE /* ERROR \"unknown field tmp\" */ tmp > 1",
		`SELECT temperature, /* ERROR "duplicate field definition temperature" */ temperature FROM s`,
		`SELECT humidity, /* ERROR "duplicate field definition humidity" */ temperature AS humidity FROM s`,
		`SELECT abs(temperature), /* ERROR "duplicate field definition abs" */ abs(humidity) FROM s`,
		`SELECT count(*) AS n, /* ERROR "function last_hit_count is not allowed in an aggregate query" */ last_hit_count() AS c FROM s GROUP BY TUMBLINGWINDOW(ss, 10)`,
		`SELECT s.temperature FROM s INNER JOIN tbl ON s.id = tbl.id WHERE /* ERROR "function last_hit_time is not allowed in an aggregate query" */ last_hit_time() > 0`,
		`SELECT s.id, /* ERROR "duplicate field definition id" */ s2.id FROM s INNER JOIN s2 ON s.id = s2.id GROUP BY TUMBLINGWINDOW(ss, 10)`,
	}
	for _, src := range tests {
		t.Run(src, func(t *testing.T) {
			want := sqltest.Marker(t, src)
			err := plan(t, src)
			var perr *planner.Error
			if !errors.As(err, &perr) {
				t.Fatalf("got error %v (%T), want *planner.Error", err, err)
			}
			want.Check(t, perr.Msg, perr.Pos, perr)
			if !strings.HasPrefix(err.Error(), want.Pos.String()+": ") {
				t.Errorf("error %q does not start with its position %s", err, want.Pos)
			}
		})
	}
}

func TestKnownFields(t *testing.T) {
	for _, sql := range []string{
		`SELECT temperature, humidity FROM s`,
		`SELECT TEMPERATURE, Humidity FROM s WHERE ID > 1`,
		`SELECT temperature AS t, t * 2 AS t2 FROM s WHERE t > 1 ORDER BY t2`,
		`SELECT t2 AS c, temperature AS t, t * 2 AS t2 FROM s`,
		`SELECT temperature * 2 AS temperature FROM s`,
		`SELECT * FROM s`,
		`SELECT s.* FROM s`,
		`SELECT t.* FROM s AS t`,
		`SELECT * EXCEPT(nope) FROM s`,
		`SELECT * REPLACE(temperature * 2 AS humidity) FROM s`,
		`SELECT st.a, st.b.c, st->b->c, st->nope, st.nope FROM s`,
		`SELECT arr[0], arr[1:2], arr[id] FROM s`,
		`SELECT meta(topic) AS a, meta(anything->x) AS b, meta(*) AS c FROM s`,
		`SELECT t.temperature, s.humidity FROM s AS t`,
		`SELECT s.id, s2.id AS id2, hum, temperature FROM s INNER JOIN s2 ON s.id = s2.id GROUP BY TUMBLINGWINDOW(ss, 10)`,
		`SELECT a.id, b.hum FROM s AS a INNER JOIN s2 AS b ON a.id = b.id GROUP BY TUMBLINGWINDOW(ss, 10)`,
		`SELECT s.id AS id FROM s INNER JOIN s2 ON s.id = s2.id GROUP BY TUMBLINGWINDOW(ss, 10) ORDER BY id`,
		`SELECT name, temperature FROM s INNER JOIN tbl ON s.id = tbl.id`,
		`SELECT anything, x.y, x->y FROM free WHERE nothing > 1`,
		`SELECT s.temperature, free.anything, whatever FROM s INNER JOIN free ON s.id = free.id GROUP BY TUMBLINGWINDOW(ss, 10)`,
		`SELECT lag(temperature) OVER (PARTITION BY id WHEN humidity > 1) AS l FROM s WHERE l > 1`,
		`SELECT count(*), window_start(), window_end() FROM s GROUP BY TUMBLINGWINDOW(ss, 10)`,
		`SELECT count(*) AS c FROM s GROUP BY id, TUMBLINGWINDOW(ss, 10) HAVING c > 1`,
		`SELECT collect(*)[0] AS last FROM s GROUP BY TUMBLINGWINDOW(ss, 5) HAVING last.temperature > 30`,
		`SELECT count(*) FROM s GROUP BY STATEWINDOW(temperature > 1, humidity > 2)`,
		`SELECT count(*) FROM s GROUP BY TUMBLINGWINDOW(ss, 10) FILTER (WHERE temperature > 1)`,
		`SELECT CASE id WHEN 1 THEN temperature ELSE humidity END AS v FROM s`,
	} {
		t.Run(sql, func(t *testing.T) {
			if err := plan(t, sql); err != nil {
				t.Fatal(err)
			}
		})
	}
}
