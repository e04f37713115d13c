package sqldb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/connector/conformancetest"
	"github.com/rekuiper/rekuiper/internal/connector/connectortest"
	"github.com/rekuiper/rekuiper/internal/connector/sqldb/pgtest"
	"github.com/rekuiper/rekuiper/internal/panics"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// db is a test database: SQLite file or PostgreSQL.
type db struct {
	url     string
	pg      bool
	restart func(t *testing.T)

	mu    sync.Mutex
	table string
	n     int
	conn  *sql.DB
}

func sqliteDB(t *testing.T) *db {
	return newDB(t, &db{url: "sqlite://" + filepath.Join(t.TempDir(), "test.db")})
}

func pgDB(t *testing.T) *db {
	s := pgtest.Start(t)
	return newDB(t, &db{url: s.URL, pg: true, restart: s.Restart})
}

func newDB(t *testing.T, d *db) *db {
	t.Helper()
	dl, err := parseURL(map[string]any{"url": d.url})
	if err != nil {
		t.Fatal(err)
	}
	if d.conn, err = sql.Open(dl.driver, dl.dsn); err != nil {
		t.Fatal(err)
	}
	d.conn.SetMaxOpenConns(2)
	t.Cleanup(func() { d.conn.Close() })
	return d
}

func (d *db) open(*testing.T) *sql.DB { return d.conn }

func (d *db) exec(t *testing.T, q string, args ...any) {
	t.Helper()
	conn := d.open(t)
	var err error
	// The server may be restarting.
	if !testwait.Poll(testwait.Limit, func() bool {
		_, err = conn.Exec(q, args...)
		return err == nil
	}) {
		t.Fatalf("%s: %v", q, err)
	}
}

// newTable creates a fresh table (id, seq, name) and makes it current.
func (d *db) newTable(t *testing.T) string {
	t.Helper()
	d.mu.Lock()
	d.n++
	name := fmt.Sprintf("t%d", d.n)
	d.table = name
	d.mu.Unlock()
	idCol := "id INTEGER PRIMARY KEY AUTOINCREMENT"
	if d.pg {
		idCol = "id BIGSERIAL PRIMARY KEY"
	}
	d.exec(t, fmt.Sprintf("CREATE TABLE %s (%s, seq BIGINT, name TEXT)", name, idCol))
	return name
}

func (d *db) current() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.table
}

// Produce implements conformancetest.Producer.
func (d *db) Produce(t *testing.T, payloads [][]byte) {
	t.Helper()
	for _, p := range payloads {
		seq, err := conformancetest.DecodeSeq(&api.Message{Payload: p})
		if err != nil {
			t.Fatal(err)
		}
		d.exec(t, fmt.Sprintf("INSERT INTO %s (seq, name) VALUES (%d, 'x')", d.current(), seq))
	}
}

// Seqs implements conformancetest.Reader.
func (d *db) Seqs(t *testing.T, want int, timeout time.Duration) []int64 {
	t.Helper()
	conn := d.open(t)
	var out []int64
	testwait.Poll(timeout, func() bool {
		out = out[:0]
		rows, err := conn.Query(fmt.Sprintf("SELECT seq FROM %s ORDER BY id", d.current()))
		if err == nil {
			for rows.Next() {
				var s int64
				if err := rows.Scan(&s); err != nil {
					t.Fatal(err)
				}
				out = append(out, s)
			}
			rows.Close()
		}
		return len(out) >= want
	})
	return out
}

// Reset implements conformancetest.Reader.
func (d *db) Reset(t *testing.T) {
	if tb := d.current(); tb != "" {
		d.exec(t, "DELETE FROM "+tb)
	}
}

type restarter struct{ *db }

func (r restarter) Restart(t *testing.T) { r.restart(t) }

func deps() connector.Deps { return connector.Deps{Clock: clock.Wall{}} }

func invalidSink() []conformancetest.InvalidCase {
	return []conformancetest.InvalidCase{
		{Name: "no url", Props: map[string]any{"table": "t"}, WantErr: `"url" is required`},
		{Name: "mysql", Props: map[string]any{"url": "mysql://u:secret@h/db", "table": "t"}, WantErr: "unsupported database url"},
		{Name: "password redacted", Props: map[string]any{"url": "mysql://u:secret@h/db", "table": "t"}, WantErr: "u:******@h"},
		{Name: "no table", Props: map[string]any{"url": "sqlite://x.db"}, WantErr: `"table" is required`},
		{Name: "bad fields", Props: map[string]any{"url": "sqlite://x.db", "table": "t", "fields": []any{1}}, WantErr: "not a column name"},
	}
}

func invalidSource() []conformancetest.InvalidCase {
	return []conformancetest.InvalidCase{
		{Name: "no url", Props: map[string]any{"datasource": "t"}, WantErr: `"url" is required`},
		{Name: "no table", Props: map[string]any{"url": "sqlite://x.db"}, WantErr: "no table"},
		{Name: "bad template", Props: map[string]any{"url": "sqlite://x.db", "templateSqlQueryCfg": map[string]any{"templateSql": "select {{.id"}}, WantErr: "templateSql"},
		{Name: "bad index", Props: map[string]any{"url": "sqlite://x.db", "datasource": "t", "internalSqlQueryCfg": map[string]any{"indexFields": "id"}}, WantErr: "must be a list"},
		{Name: "bad limit", Props: map[string]any{"url": "sqlite://x.db", "datasource": "t", "internalSqlQueryCfg": map[string]any{"limit": -1}}, WantErr: "limit"},
	}
}

func runSuites(t *testing.T, d *db, unreachable string) {
	var prod conformancetest.Producer = d
	var rd conformancetest.Reader = d
	if d.restart != nil {
		prod, rd = restarter{d}, restarter{d}
	}
	t.Run("Source", func(t *testing.T) {
		conformancetest.RunSourceSuite(t, conformancetest.SourceFactory{
			Spec: SourceSpec(), New: NewSource, Deps: deps(),
			Props: func(t *testing.T) map[string]any {
				return map[string]any{"url": d.url, "interval": "20ms",
					"internalSqlQueryCfg": map[string]any{"table": d.newTable(t), "limit": 30, "indexFields": []any{map[string]any{"indexField": "id"}}}}
			},
			UnreachableProps: map[string]any{"url": unreachable, "datasource": "t"},
			Invalid:          invalidSource(),
		}, prod)
	})
	t.Run("Sink", func(t *testing.T) {
		conformancetest.RunSinkSuite(t, conformancetest.SinkFactory{
			Spec: SinkSpec(), New: NewSink, Deps: deps(),
			Props: func(t *testing.T) map[string]any {
				return map[string]any{"url": d.url, "table": d.newTable(t), "fields": []any{"seq", "name"}}
			},
			UnreachableProps: map[string]any{"url": unreachable, "table": "t"},
			Invalid:          invalidSink(),
		}, rd)
	})
}

func TestConformanceSQLite(t *testing.T) {
	runSuites(t, sqliteDB(t), filepath.Join(t.TempDir(), "missing", "dir", "x.db"))
}

func TestConformancePostgres(t *testing.T) {
	runSuites(t, pgDB(t), fmt.Sprintf("postgres://postgres@127.0.0.1:%d/x?sslmode=disable&connect_timeout=2", pgtest.FreePort(t)))
}

func newSink(t *testing.T, props map[string]any) *Sink {
	t.Helper()
	return newSinkOn(t, props, deps())
}

// newSinkOn is newSink with its own deps (a virtual clock for the linger).
func newSinkOn(t *testing.T, props map[string]any, deps connector.Deps) *Sink {
	t.Helper()
	r := connectortest.Registry(t, Register)
	s, err := r.NewSink(Type, props, deps)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s.(*Sink)
}

func rowsOf(t *testing.T, d *db, q string) string {
	t.Helper()
	rows, err := queryRows(context.Background(), d.open(t), q)
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, r := range rows {
		parts = append(parts, fmt.Sprintf("%v:%v", r["k"], r["v"]))
	}
	return strings.Join(parts, ",")
}

func TestRowKinds(t *testing.T) {
	for _, mk := range []func(*testing.T) *db{sqliteDB, pgDB} {
		d := mk(t)
		t.Run(fmt.Sprintf("pg=%v", d.pg), func(t *testing.T) {
			d.exec(t, "CREATE TABLE kv (k TEXT PRIMARY KEY, v BIGINT, extra TEXT)")
			s := newSink(t, map[string]any{"url": d.url, "table": "kv", "rowkindField": "op", "keyField": "k", "fields": []any{"k", "v"}})
			steps := []struct {
				rows []map[string]any
				want string
			}{
				{[]map[string]any{{"k": "a", "v": int64(1)}, {"k": "b", "v": int64(2), "op": "insert"}}, "a:1,b:2"},
				{[]map[string]any{{"k": "a", "v": int64(10), "op": "update"}}, "a:10,b:2"},
				{[]map[string]any{{"k": "c", "v": int64(3), "op": "UPSERT"}, {"k": "b", "v": int64(20), "op": "upsert"}}, "a:10,b:20,c:3"},
				{[]map[string]any{{"k": "a", "op": "delete"}}, "b:20,c:3"},
			}
			for i, st := range steps {
				if err := s.Write(context.Background(), &api.SinkMessage{Rows: st.rows}); err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if got := rowsOf(t, d, "SELECT k, v FROM kv ORDER BY k"); got != st.want {
					t.Fatalf("step %d: table %s, want %s", i, got, st.want)
				}
			}
			err := s.Write(context.Background(), &api.SinkMessage{Rows: []map[string]any{{"k": "x", "op": "merge"}}})
			if err == nil || errors.Is(err, api.ErrRetryable) {
				t.Fatalf("unknown row kind: err %v, want a permanent error", err)
			}
			err = s.Write(context.Background(), &api.SinkMessage{Rows: []map[string]any{{"k": "b", "v": int64(1)}}})
			if err == nil || errors.Is(err, api.ErrRetryable) {
				t.Fatalf("duplicate key: err %v, want a permanent error", err)
			}
		})
	}
}

func TestTransactional(t *testing.T) {
	for _, mk := range []func(*testing.T) *db{sqliteDB, pgDB} {
		d := mk(t)
		t.Run(fmt.Sprintf("pg=%v", d.pg), func(t *testing.T) {
			d.exec(t, "CREATE TABLE out (k TEXT, v BIGINT)")
			props := map[string]any{"url": d.url, "table": "out", "transactionalID": "rule1/0"}
			ctx := context.Background()
			write := func(s *Sink, ks ...string) {
				t.Helper()
				for _, k := range ks {
					if err := s.Write(ctx, &api.SinkMessage{Rows: []map[string]any{{"k": k, "v": int64(1)}}}); err != nil {
						t.Fatal(err)
					}
				}
			}
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			table := func() string {
				t.Helper()
				return rowsOf(t, d, "SELECT k, v FROM out ORDER BY k")
			}

			s := newSink(t, props)
			write(s, "a", "b")
			must(s.PreCommit(ctx, 1))
			if got := table(); got != "" {
				t.Fatalf("visible before Commit: %s", got)
			}
			must(s.Close(ctx)) // crash before Commit: rolled back
			if got := table(); got != "" {
				t.Fatalf("visible after a crash before Commit: %s", got)
			}

			s = newSink(t, props)
			write(s, "a", "b")
			must(s.PreCommit(ctx, 1))
			write(s, "c") // after the barrier: checkpoint 2
			must(s.Commit(ctx, 1))
			if got := table(); got != "a:1,b:1" {
				t.Fatalf("after Commit(1): %s", got)
			}
			must(s.PreCommit(ctx, 2))
			must(s.Commit(ctx, 2))
			if got := table(); got != "a:1,b:1,c:1" {
				t.Fatalf("after Commit(2): %s", got)
			}
			if n, err := s.LastCommitted(ctx); err != nil || n != 2 {
				t.Fatalf("LastCommitted = %d, %v; want 2", n, err)
			}
			write(s, "d")
			must(s.Abort(ctx))
			must(s.Close(ctx))

			// A replay of checkpoint 2 (several transactional sinks, a
			// crash between their commits) commits again: at least once.
			s = newSink(t, props)
			write(s, "c")
			must(s.PreCommit(ctx, 2))
			must(s.Commit(ctx, 2))
			write(s, "d")
			must(s.PreCommit(ctx, 3))
			must(s.Commit(ctx, 3))
			if got := table(); got != "a:1,b:1,c:1,c:1,d:1" {
				t.Fatalf("after replay: %s", got)
			}
			if err := s.Commit(ctx, 9); err != nil {
				t.Fatalf("Commit without PreCommit: %v", err)
			}
		})
	}
}

func TestSinkBatching(t *testing.T) {
	d := sqliteDB(t)
	d.exec(t, "CREATE TABLE b (k TEXT, v BIGINT)")
	ctx := context.Background()
	write := func(s *Sink, k string, v int64) {
		t.Helper()
		if err := s.Write(ctx, &api.SinkMessage{Rows: []map[string]any{{"k": k, "v": v}}}); err != nil {
			t.Fatal(err)
		}
	}
	// A linger far longer than the test: only a full batch writes.
	s := newSink(t, map[string]any{"url": d.url, "table": "b", "batchSize": 3, "lingerInterval": "1h"})
	write(s, "0", 0)
	write(s, "1", 1)
	if got := rowsOf(t, d, "SELECT k, v FROM b ORDER BY k"); got != "" {
		t.Fatalf("written before the batch filled: %s", got)
	}
	write(s, "2", 2)
	if got := rowsOf(t, d, "SELECT k, v FROM b ORDER BY k"); got != "0:0,1:1,2:2" {
		t.Fatalf("after a full batch: %s", got)
	}
	// A linger writes a batch that does not fill, once it passed.
	clk := clock.NewVirtual(0)
	lingering := newSinkOn(t, map[string]any{"url": d.url, "table": "b", "batchSize": 3, "lingerInterval": "50ms"},
		connector.Deps{Clock: clk})
	write(lingering, "3", 3)
	clk.AdvanceTo(49, nil)
	if got := rowsOf(t, d, "SELECT k, v FROM b ORDER BY k"); got != "0:0,1:1,2:2" {
		t.Fatalf("written before the linger passed: %s", got)
	}
	clk.AdvanceTo(50, nil)
	if got := rowsOf(t, d, "SELECT k, v FROM b ORDER BY k"); got != "0:0,1:1,2:2,3:3" {
		t.Fatalf("after the linger: %s", got)
	}
}

func newSource(t *testing.T, props map[string]any) *Source {
	t.Helper()
	r := connectortest.Registry(t, Register)
	s, err := r.NewSource(Type, props, deps())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s.(*Source)
}

func readIDs(t *testing.T, s *Source, n int) []int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var out []int64
	for range n {
		m, err := s.Read(ctx)
		if err != nil {
			t.Fatalf("read after %v: %v", out, err)
		}
		out = append(out, m.Data["id"].(int64))
	}
	return out
}

func TestSourceRewind(t *testing.T) {
	d := sqliteDB(t)
	d.exec(t, "CREATE TABLE ev (id INTEGER PRIMARY KEY, ts TEXT, v REAL)")
	for i := 1; i <= 5; i++ {
		d.exec(t, fmt.Sprintf("INSERT INTO ev VALUES (%d, 't%d', %d.5)", i, i, i))
	}
	tests := []struct {
		name  string
		props map[string]any
	}{
		{"table", map[string]any{"datasource": "ev", "internalSqlQueryCfg": map[string]any{"limit": 2, "indexFields": []any{"id"}}}},
		{"template", map[string]any{"templateSqlQueryCfg": map[string]any{
			"templateSql": "SELECT * FROM ev WHERE id > {{if .id}}{{.id}}{{else}}0{{end}} ORDER BY id LIMIT 2", "indexFields": []any{map[string]any{"indexField": "id"}}}}},
		{"initial index value", map[string]any{"datasource": "ev", "internalSqlQueryCfg": map[string]any{"indexFields": []any{map[string]any{"indexField": "id", "indexValue": 0}}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			props := map[string]any{"url": d.url, "interval": "10ms"}
			for k, v := range tc.props {
				props[k] = v
			}
			s := newSource(t, props)
			if err := s.Connect(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(readIDs(t, s, 3)); got != "[1 2 3]" {
				t.Fatalf("read %s", got)
			}
			off, err := s.Offset()
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(readIDs(t, s, 2)); got != "[4 5]" {
				t.Fatalf("read %s", got)
			}
			if err := s.Rewind(off); err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(readIDs(t, s, 2)); got != "[4 5]" {
				t.Fatalf("after rewind read %s", got)
			}
			s2 := newSource(t, props)
			if err := s2.Rewind(off); err != nil {
				t.Fatal(err)
			}
			if err := s2.Connect(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(readIDs(t, s2, 2)); got != "[4 5]" {
				t.Fatalf("new source after rewind read %s", got)
			}
		})
	}
	t.Run("bad offsets", func(t *testing.T) {
		s := newSource(t, map[string]any{"url": d.url, "datasource": "ev", "internalSqlQueryCfg": map[string]any{"indexFields": []any{"id"}}})
		for _, b := range []string{`x`, `{"v":2}`, `{"v":1,"index":[{"f":"other","t":"int","v":"1"}]}`, `{"v":1,"index":[{"f":"id","t":"int","v":"x"}]}`} {
			if err := s.Rewind([]byte(b)); err == nil {
				t.Errorf("Rewind(%s) succeeded", b)
			}
		}
	})
}

// TestLookupQueries looks rows up by one and by two columns; every lookup
// reads the database (the lookup join's cache is the engine's).
func TestLookupQueries(t *testing.T) {
	d := sqliteDB(t)
	d.exec(t, "CREATE TABLE dev (id BIGINT, name TEXT, zone TEXT)")
	d.exec(t, "INSERT INTO dev VALUES (1, 'a', 'z1'), (2, 'b', 'z1')")
	l := connectortest.OpenLookup(t, Register, Type, map[string]any{"url": d.url, "datasource": "dev"}, connector.Deps{})
	ctx := context.Background()
	name := func() any {
		t.Helper()
		rows, err := l.Lookup(ctx, map[string]any{"id": int64(1)})
		if err != nil || len(rows) != 1 {
			t.Fatalf("lookup: %v %v", rows, err)
		}
		return rows[0]["name"]
	}
	if got := name(); got != "a" {
		t.Fatalf("name %v", got)
	}
	d.exec(t, "UPDATE dev SET name = 'a2' WHERE id = 1")
	if got := name(); got != "a2" {
		t.Fatalf("after update: name %v, want a2", got)
	}
	rows, err := l.Lookup(ctx, map[string]any{"zone": "z1", "name": "b"})
	if err != nil || len(rows) != 1 || rows[0]["id"] != int64(2) {
		t.Fatalf("two keys: %v %v", rows, err)
	}
	if _, err := connectortest.Registry(t, Register).NewLookup(Type, map[string]any{"url": d.url, "datasource": "dev", "cacheSize": 3}, connector.Deps{}); err == nil {
		t.Fatal("unknown property accepted")
	}
}

func TestSQLiteDSNWaitsForLocks(t *testing.T) {
	for in, want := range map[string]string{
		"/data/x.db":                               "/data/x.db?_pragma=busy_timeout(5000)",
		"file:x.db?mode=rwc":                       "file:x.db?mode=rwc&_pragma=busy_timeout(5000)",
		"x.db?_pragma=busy_timeout(100)":           "x.db?_pragma=busy_timeout(100)",
		"x.db?_pragma=journal_mode(WAL)&_txlock=x": "x.db?_pragma=journal_mode(WAL)&_txlock=x&_pragma=busy_timeout(5000)",
	} {
		if got := sqliteDSN(in); got != want {
			t.Errorf("sqliteDSN(%q) = %q, want %q", in, got, want)
		}
	}
	// A writer holding the file's lock for a moment makes the sink wait,
	// not fail.
	d := sqliteDB(t)
	d.exec(t, "CREATE TABLE w (k TEXT, v BIGINT)")
	s := newSink(t, map[string]any{"url": d.url, "table": "w"})
	ctx := context.Background()
	tx, err := d.conn.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("INSERT INTO w VALUES ('held', 0)"); err != nil {
		t.Fatal(err)
	}
	written := make(chan error, 1)
	go func() { written <- s.Write(ctx, &api.SinkMessage{Rows: []map[string]any{{"k": "a", "v": int64(1)}}}) }()
	// The other writer lets go once the sink's write waits for the lock.
	testwait.Until(t, "the sink's write to wait in SQLite's busy handler", func() bool {
		select {
		case err := <-written:
			t.Fatalf("write returned while another connection held the lock (or its wait was not seen): %v", err)
		default:
		}
		return waitsForLock()
	})
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-written; err != nil {
		t.Fatalf("write while another connection holds the lock: %v", err)
	}
	if got := rowsOf(t, d, "SELECT k, v FROM w ORDER BY k"); got != "a:1,held:0" {
		t.Fatalf("rows: %s", got)
	}
}

// waitsForLock reports whether a goroutine writing through a Sink waits
// in SQLite's busy handler (the driver's, or SQLite's own callback).
func waitsForLock() bool {
	var b strings.Builder
	if err := pprof.Lookup("goroutine").WriteTo(&b, 2); err != nil {
		return false
	}
	for _, g := range strings.Split(b.String(), "\n\n") {
		if strings.Contains(g, "(*Sink).Write") &&
			(strings.Contains(g, "modernc.org/sqlite.busyHandler") || strings.Contains(g, "sqliteDefaultBusyCallback")) {
			return true
		}
	}
	return false
}

// panicValuer is a value whose conversion for the driver panics (a bug in
// a driver's or a value's conversion).
type panicValuer struct{}

func (panicValuer) Value() (driver.Value, error) { panic("conversion bug") }

// TestLingerFlushPanic: a panic in the flush the linger timer runs, on the
// timer's goroutine, does not end the process; the sink returns it from
// its next Write and PreCommit, so that the runtime stops the rule with it.
func TestLingerFlushPanic(t *testing.T) {
	d := sqliteDB(t)
	d.exec(t, "CREATE TABLE p (k TEXT, v BIGINT)")
	clk := clock.NewVirtual(0)
	s := newSinkOn(t, map[string]any{"url": d.url, "table": "p", "batchSize": 10, "lingerInterval": "10ms"},
		connector.Deps{Clock: clk})
	ctx := context.Background()
	if err := s.Write(ctx, &api.SinkMessage{Rows: []map[string]any{{"k": "a", "v": panicValuer{}}}}); err != nil {
		t.Fatalf("buffered write: %v", err)
	}
	clk.AdvanceTo(10, nil) // the linger flush runs, and panics, here
	err := s.Write(ctx, &api.SinkMessage{Rows: []map[string]any{{"k": "b", "v": int64(1)}}})
	if !panics.Is(err) || err.Error() != "panic: sql sink linger flush: conversion bug" {
		t.Fatalf("write after the linger flush: %v; want its panic", err)
	}
	if err := s.PreCommit(ctx, 1); !panics.Is(err) {
		t.Errorf("PreCommit after the panic: %v; want the panic", err)
	}
}
