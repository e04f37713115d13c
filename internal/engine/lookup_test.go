package engine

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/connector/membus"
	"github.com/rekuiper/rekuiper/internal/connector/redis/redistest"
	"github.com/rekuiper/rekuiper/internal/connector/sqldb/pgtest"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// startRule starts a rule writing to the counting sink and waits until its
// stream is subscribed (subs is the number of bus subscribers to expect).
func (e *testEnv) startRule(t *testing.T, sql string, subs int) {
	t.Helper()
	e.startSubscribed(t, mustParseDef(t, fmt.Sprintf(`{"id":"r","sql":%q,"actions":[{"counting":{}}]}`, sql)), subs)
}

// TestMemoryLookupSeesRowsBeforeRuleStart publishes the table's rows after
// CREATE TABLE but before any rule runs: the join finds them.
func TestMemoryLookupSeesRowsBeforeRuleStart(t *testing.T) {
	e := newTestEnv(t)
	e.createDef(t, `CREATE TABLE dim () WITH (DATASOURCE="dim", TYPE="memory", KIND="lookup", KEY="id")`)
	ctx := context.Background()
	for _, m := range []membus.Message{
		{Topic: "dim", Data: map[string]any{"id": int64(1), "name": "one"}},
		{Topic: "dim", Data: map[string]any{"id": int64(2), "name": "two"}},
		{Topic: "dim", Data: map[string]any{"id": int64(3), "name": "three"}},
		{Topic: "dim", Rowkind: "delete", Key: int64(3)},
	} {
		if err := e.bus.Publish(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	// The table applies rows on its own goroutine: wait until it has.
	e.waitTable(t, `CREATE TABLE dim () WITH (DATASOURCE="dim", TYPE="memory", KIND="lookup", KEY="id")`, func(l func(any) int) bool {
		return l(int64(3)) == 0 && l(int64(2)) == 1
	})

	e.startRule(t, `SELECT s.v, dim.name FROM s INNER JOIN dim ON s.v = dim.id`, 2)
	e.publish(t, 1, 3, 2, 4)
	msgs, _ := e.out.wait(t, 2)
	if got := strings.Join(msgs, " "); got != `[{"name":"one","v":1}] [{"name":"two","v":2}]` {
		t.Fatalf("inner lookup join: %s", got)
	}
}

// waitTable waits until done, given the number of rows of the memory
// lookup table sql has for an id, is true.
func (e *testEnv) waitTable(t testing.TB, sql string, done func(rows func(id any) int) bool) {
	t.Helper()
	ctx := context.Background()
	tbl := e.memoryTable(t, sql)
	rows := func(id any) int {
		r, err := tbl.Lookup(ctx, map[string]any{"id": id})
		if err != nil {
			t.Fatal(err)
		}
		return len(r)
	}
	testwait.Until(t, "the memory table to apply the published rows", func() bool { return done(rows) })
}

// memoryTable pins the memory lookup table sql declares, as a rule
// joining it would.
func (e *testEnv) memoryTable(t testing.TB, sql string) connector.LookupSource {
	t.Helper()
	typ, props, _, err := e.runner.lookupProps(mustDef(t, sql))
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := e.runner.pinMemoryTable(context.Background(), typ, props)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// TestRedisLookupJoinWithCache joins with rows stored in a real
// redis-server; with lookup.cache on, a changed value is not seen until
// its key leaves the cache.
func TestRedisLookupJoinWithCache(t *testing.T) {
	srv := redistest.Start(t)
	cl := goredis.NewClient(&goredis.Options{Addr: srv.Addr()})
	defer cl.Close()
	ctx := context.Background()
	for k, v := range map[string]string{"1": `{"id":1,"alarm":50}`, "2": `{"id":2,"alarm":80}`} {
		if err := cl.Set(ctx, k, v, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	e := newTestEnv(t)
	e.confKey(t, "redis", "local", map[string]any{"addr": srv.Addr(), "lookup": map[string]any{"cache": true, "cacheTtl": 600}})
	e.createDef(t, `CREATE TABLE alerts () WITH (DATASOURCE="0", TYPE="redis", KIND="lookup", CONF_KEY="local")`)
	e.startRule(t, `SELECT s.v, alerts.alarm FROM s LEFT JOIN alerts ON s.v = alerts.id`, 1)
	e.publish(t, 1, 2, 9)
	e.out.wait(t, 3)
	if err := cl.Set(ctx, "1", `{"id":1,"alarm":55}`, 0).Err(); err != nil {
		t.Fatal(err)
	}
	e.publish(t, 1)
	msgs, _ := e.out.wait(t, 4)
	if got := strings.Join(msgs, " "); got != `[{"alarm":50,"v":1}] [{"alarm":80,"v":2}] [{"v":9}] [{"alarm":50,"v":1}]` {
		t.Fatalf("redis lookup join: %s", got)
	}
}

// TestRedisLookupWithoutCacheSeesUpdates is the same join without the
// cache: every row queries redis.
func TestRedisLookupWithoutCacheSeesUpdates(t *testing.T) {
	srv := redistest.Start(t)
	cl := goredis.NewClient(&goredis.Options{Addr: srv.Addr()})
	defer cl.Close()
	ctx := context.Background()
	if err := cl.Set(ctx, "1", `{"id":1,"alarm":50}`, 0).Err(); err != nil {
		t.Fatal(err)
	}
	e := newTestEnv(t)
	e.confKey(t, "redis", "local", map[string]any{"addr": srv.Addr()})
	e.createDef(t, `CREATE TABLE alerts () WITH (DATASOURCE="0", TYPE="redis", KIND="lookup", CONF_KEY="local")`)
	e.startRule(t, `SELECT s.v, alerts.alarm FROM s INNER JOIN alerts ON s.v = alerts.id`, 1)
	e.publish(t, 1)
	e.out.wait(t, 1)
	if err := cl.Set(ctx, "1", `{"id":1,"alarm":55}`, 0).Err(); err != nil {
		t.Fatal(err)
	}
	e.publish(t, 1)
	msgs, _ := e.out.wait(t, 2)
	if got := strings.Join(msgs, " "); got != `[{"alarm":50,"v":1}] [{"alarm":55,"v":1}]` {
		t.Fatalf("redis lookup join without cache: %s", got)
	}
}

// testSQLLookup joins with a devices table of a real database; the ON
// clause has a second condition applied after the lookup. cols is the
// lookup table's declared columns ("" for a schemaless table).
func testSQLLookup(t *testing.T, url string, db *sql.DB, cols string) {
	ctx := context.Background()
	for _, q := range []string{
		`CREATE TABLE devices (id BIGINT, name TEXT, kind BIGINT)`,
		`INSERT INTO devices VALUES (1, 'pump', 7), (2, 'fan', 8), (3, 'valve', 7)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	e := newTestEnv(t)
	e.confKey(t, "sql", "db", map[string]any{"url": url, "lookup": map[string]any{"cache": true, "cacheTtl": 60, "cacheMissingKey": false}})
	e.createDef(t, `CREATE TABLE devices (`+cols+`) WITH (DATASOURCE="devices", TYPE="sql", KIND="lookup", CONF_KEY="db")`)
	e.startRule(t, `SELECT s.v, devices.name FROM s INNER JOIN devices ON devices.id = s.v AND devices.kind = 7`, 1)
	e.publish(t, 1, 2, 3, 4, 1)
	msgs, _ := e.out.wait(t, 3)
	if got := strings.Join(msgs, " "); got != `[{"name":"pump","v":1}] [{"name":"valve","v":3}] [{"name":"pump","v":1}]` {
		t.Fatalf("sql lookup join: %s", got)
	}
}

func TestSQLiteLookupJoin(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dim.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	testSQLLookup(t, "sqlite://"+path, db, "id BIGINT, name STRING, kind BIGINT")
}

func TestPostgresLookupJoin(t *testing.T) {
	pg := pgtest.Start(t)
	db, err := sql.Open("pgx", pg.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	testSQLLookup(t, pg.URL, db, "")
}

// TestHTTPPullLookupJoin joins with the rows an HTTP endpoint returns; with
// the cache on, the endpoint is requested once per key.
func TestHTTPPullLookupJoin(t *testing.T) {
	var requests atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if r.URL.Path != "/devices" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `[{"id":1,"name":"pump"},{"id":2,"name":"fan"}]`)
	}))
	defer ts.Close()
	e := newTestEnv(t)
	e.confKey(t, "httppull", "api", map[string]any{"url": ts.URL, "lookup": map[string]any{"cache": true}})
	e.createDef(t, `CREATE TABLE devices () WITH (DATASOURCE="/devices", TYPE="httppull", KIND="lookup", CONF_KEY="api")`)
	e.startRule(t, `SELECT s.v, devices.name FROM s LEFT JOIN devices ON s.v = devices.id`, 1)
	e.publish(t, 2, 1, 5, 2, 1)
	msgs, _ := e.out.wait(t, 5)
	if got := strings.Join(msgs, " "); got != `[{"name":"fan","v":2}] [{"name":"pump","v":1}] [{"v":5}] [{"name":"fan","v":2}] [{"name":"pump","v":1}]` {
		t.Fatalf("httppull lookup join: %s", got)
	}
	if n := requests.Load(); n != 3 {
		t.Fatalf("requests with the cache on = %d, want 3 (one per key)", n)
	}
}

// TestLookupTableChecks refuses what a lookup table cannot do at creation.
func TestLookupTableChecks(t *testing.T) {
	e := newTestEnv(t)
	for _, tc := range []struct{ sql, want string }{
		{`CREATE TABLE t () WITH (DATASOURCE="x", TYPE="file", KIND="lookup")`, `TYPE "file" cannot serve a lookup table`},
		{`CREATE TABLE t () WITH (DATASOURCE="x", TYPE="simulator", KIND="lookup")`, `property "data" is required`},
		{`CREATE TABLE t () WITH (DATASOURCE="x", TYPE="memory", KIND="lookup")`, `property "key" is required`},
		{`CREATE TABLE t () WITH (DATASOURCE="x", TYPE="memory", KIND="lookup", KEY="id", CONF_KEY="badcache")`, `lookup cache option cacheTtl: must be a positive number of seconds`},
		{`CREATE TABLE t () WITH (DATASOURCE="x", TYPE="memory", KIND="lookup", KEY="id", CONF_KEY="unknown")`, `unknown lookup cache option "size"`},
	} {
		e.confKey(t, "memory", "badcache", map[string]any{"lookup": map[string]any{"cache": true, "cacheTtl": 0}})
		e.confKey(t, "memory", "unknown", map[string]any{"lookup": map[string]any{"size": 3}})
		err := e.runner.CheckStream(context.Background(), mustDef(t, tc.sql))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.sql, err, tc.want)
		}
		_ = e.runner.cfg.Catalog.DeleteConfKey(context.Background(), catalog.ConfSource, "memory", "badcache")
		_ = e.runner.cfg.Catalog.DeleteConfKey(context.Background(), catalog.ConfSource, "memory", "unknown")
	}
}

// TestMemoryLookupTablesStartWithDaemon: a memory lookup table stored
// before the daemon started follows its topic from StartLookupTables, and
// a dropped one is stopped when the next lookup table is created.
func TestMemoryLookupTablesStartWithDaemon(t *testing.T) {
	e := newTestEnv(t)
	ctx := context.Background()
	for _, sql := range []string{
		`CREATE TABLE dim () WITH (DATASOURCE="dim", TYPE="memory", KIND="lookup", KEY="id")`,
		`CREATE TABLE old () WITH (DATASOURCE="old", TYPE="memory", KIND="lookup", KEY="id")`,
	} {
		// Stored without CheckStream: as found in the catalog at start.
		e.put(t, catalog.KindTable, mustDef(t, sql).Name, sql)
	}
	if e.bus.Subscribers() != 0 {
		t.Fatalf("%d subscribers before start", e.bus.Subscribers())
	}
	if err := e.runner.StartLookupTables(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.runner.CloseLookupTables(ctx) })
	if n := e.bus.Subscribers(); n != 2 {
		t.Fatalf("%d subscribers after StartLookupTables, want 2 (one per memory lookup table)", n)
	}
	if err := e.bus.Publish(ctx, membus.Message{Topic: "dim", Data: map[string]any{"id": "a", "name": "alpha"}}); err != nil {
		t.Fatal(err)
	}
	e.waitTable(t, `CREATE TABLE dim () WITH (DATASOURCE="dim", TYPE="memory", KIND="lookup", KEY="id")`, func(l func(any) int) bool { return l("a") == 1 })
	if err := e.runner.cfg.Catalog.DeleteStream(ctx, "old"); err != nil {
		t.Fatal(err)
	}
	e.createDef(t, `CREATE TABLE other () WITH (DATASOURCE="other", TYPE="memory", KIND="lookup", KEY="id")`)
	if n := e.bus.Subscribers(); n != 2 {
		t.Fatalf("%d subscribers after dropping old and creating other, want 2", n)
	}
	e.putStream(t, "s2", `CREATE STREAM s2 (k STRING) WITH (DATASOURCE="in2", TYPE="memory")`)
	e.startRule(t, `SELECT s2.k, dim.name FROM s2 LEFT JOIN dim ON s2.k = dim.id`, 3)
	for _, k := range []string{"a", "b"} {
		if err := e.bus.Publish(ctx, membus.Message{Topic: "in2", Data: map[string]any{"k": k}}); err != nil {
			t.Fatal(err)
		}
	}
	msgs, _ := e.out.wait(t, 2)
	if got := strings.Join(msgs, " "); got != `[{"k":"a","name":"alpha"}] [{"k":"b"}]` {
		t.Fatalf("left lookup join: %s", got)
	}
}

// TestRedisLookupSurvivesOutage: while redis-server is down the rows that
// need a lookup are lost and counted as exceptions of the lookup join; the
// rule keeps running and joins again once the server is back.
func TestRedisLookupSurvivesOutage(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	set := func() {
		cl := goredis.NewClient(&goredis.Options{Addr: srv.Addr()})
		defer cl.Close()
		if err := cl.Set(ctx, "1", `{"id":1,"alarm":50}`, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	set()
	e := newTestEnv(t)
	e.confKey(t, "redis", "local", map[string]any{"addr": srv.Addr(), "timeout": "500ms"})
	e.createDef(t, `CREATE TABLE alerts () WITH (DATASOURCE="0", TYPE="redis", KIND="lookup", CONF_KEY="local")`)
	run := startRule(t, e, `{"id":"r","sql":"SELECT s.v, alerts.alarm FROM s INNER JOIN alerts ON s.v = alerts.id","actions":[{"counting":{}}]}`)
	e.publish(t, 1)
	e.out.wait(t, 1)

	srv.Stop()
	e.publish(t, 1)
	exceptions := func() int64 {
		for k, v := range run.Metrics() {
			if strings.HasSuffix(k, "_lookupjoin_0_exceptions_total") {
				n, _ := v.(int64)
				return n
			}
		}
		t.Fatal("no lookupjoin metrics")
		return 0
	}
	if !testwait.Poll(testwait.Limit, func() bool { return exceptions() >= 1 }) {
		t.Fatalf("no exception counted while redis is down: %v", run.Metrics())
	}
	requireRunning(t, run, "rule stopped after a failed lookup")

	srv.Restart(t)
	set()
	e.publish(t, 1)
	msgs, _ := e.out.wait(t, 2)
	if got := strings.Join(msgs, " "); got != `[{"alarm":50,"v":1}] [{"alarm":50,"v":1}]` {
		t.Fatalf("joins before and after the outage: %s", got)
	}
}
