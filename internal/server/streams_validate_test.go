package server_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/rekuiper/rekuiper/internal/sql/parser"
)

func TestValidateStream(t *testing.T) {
	s := newServer(t, "")
	type answer struct {
		Valid     bool
		Name      string
		Message   string
		Line, Col int
	}
	check := func(t *testing.T, path, sql string) answer {
		t.Helper()
		body, _ := json.Marshal(map[string]string{"sql": sql})
		code, out := s.do("POST", path, string(body))
		if code != 200 {
			t.Fatalf("POST %s: %d %s, want 200", path, code, out)
		}
		var a answer
		if err := json.Unmarshal([]byte(out), &a); err != nil {
			t.Fatalf("POST %s: %q: %v", path, out, err)
		}
		return a
	}

	t.Run("valid stream stores nothing", func(t *testing.T) {
		a := check(t, "/streams/validate", `CREATE STREAM demo (a bigint) WITH (TYPE="memory", DATASOURCE="t")`)
		if !a.Valid || a.Name != "demo" || a.Message != "" {
			t.Fatalf("got %+v, want valid demo", a)
		}
		if _, err := s.cat.Stream("demo"); err == nil {
			t.Fatal("validate stored the stream")
		}
	})
	t.Run("valid table", func(t *testing.T) {
		if a := check(t, "/tables/validate", `CREATE TABLE lk () WITH (TYPE="memory", KIND="lookup", KEY="id")`); !a.Valid || a.Name != "lk" {
			t.Fatalf("got %+v, want valid lk", a)
		}
	})
	t.Run("syntax error has its position", func(t *testing.T) {
		sql := "CREATE STREAM demo (a bigint\n  WITH (TYPE=\"memory\")"
		_, perr := parser.ParseStatement(sql)
		var want *parser.Error
		if !errors.As(perr, &want) {
			t.Fatalf("the parser accepted %q", sql)
		}
		a := check(t, "/streams/validate", sql)
		if a.Valid || a.Line != want.Pos.Line || a.Col != want.Pos.Col || a.Message != "parse sql: "+perr.Error() {
			t.Fatalf("got %+v, want invalid at %s with %q", a, want.Pos, perr)
		}
	})
	t.Run("the statement decides the kind, as POST", func(t *testing.T) {
		if a := check(t, "/streams/validate", `CREATE TABLE t1 () WITH (TYPE="memory")`); !a.Valid || a.Name != "t1" {
			t.Fatalf("got %+v, want valid t1 (POST /streams creates it)", a)
		}
	})
	t.Run("not a CREATE statement has no position", func(t *testing.T) {
		a := check(t, "/streams/validate", `SELECT * FROM demo`)
		if a.Valid || a.Line != 0 || a.Message != "sql must be a CREATE STREAM statement" {
			t.Fatalf("got %+v, want invalid naming CREATE STREAM", a)
		}
	})
	s.run([]step{
		{"empty sql", "POST", "/streams/validate", `{"sql":" "}`, 400, "field sql is required"},
		{"unknown field", "POST", "/tables/validate", `{"sql":"x","extra":1}`, 400, `unknown field \"extra\"`},
		{"not json", "POST", "/streams/validate", `{"sql":`, 400, "decode body"},
	})
}
