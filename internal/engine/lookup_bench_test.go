package engine

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/connector/membus"
	"github.com/rekuiper/rekuiper/internal/connector/redis/redistest"
	"github.com/rekuiper/rekuiper/internal/connector/sqldb/pgtest"
	"github.com/rekuiper/rekuiper/internal/eval"
	"github.com/rekuiper/rekuiper/internal/operator"
	"github.com/rekuiper/rekuiper/internal/row"
	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// benchKeys is the number of distinct keys the stream joins on (devices).
const benchKeys = 1000

// BenchmarkLookupJoin joins one stream row at a time with a lookup table
// of benchKeys rows in memory, redis-server and PostgreSQL (both started
// on ephemeral ports), with lookup.cache on and off. It reports lookups/s
// and the p99 latency of one row through the LookupJoin operator.
func BenchmarkLookupJoin(b *testing.B) {
	backends := []struct {
		name  string
		setup func(b *testing.B, e *testEnv) string // returns the CREATE TABLE
	}{
		{"memory", setupMemoryBench},
		{"redis", setupRedisBench},
		{"postgres", setupPostgresBench},
	}
	for _, be := range backends {
		for _, cache := range []bool{true, false} {
			b.Run(fmt.Sprintf("%s/cache=%v", be.name, cache), func(b *testing.B) {
				e := newTestEnv(b)
				def := mustDef(b, be.setup(b, e))
				benchLookup(b, e, def, cache)
			})
		}
	}
}

func benchLookup(b *testing.B, e *testEnv, def *ast.CreateStreamStmt, cache bool) {
	ctx := context.Background()
	typ, props, opts, err := e.runner.lookupProps(def)
	if err != nil {
		b.Fatal(err)
	}
	var src connector.LookupSource
	if isMemory(typ) {
		src, err = e.runner.pinMemoryTable(ctx, typ, props)
	} else {
		src, err = e.runner.cfg.Registry.NewLookup(typ, props, e.runner.cfg.Deps)
		if err == nil {
			err = src.Connect(ctx)
			b.Cleanup(func() { src.Close(ctx) })
		}
	}
	if err != nil {
		b.Fatal(err)
	}
	key := func(c *eval.Ctx) (any, error) {
		v, _ := c.Row.Value("s", "k")
		return v, nil
	}
	lj := &operator.LookupJoin{Type: ast.InnerJoin, Table: def.Name, Columns: []string{"id"}, Keys: []eval.Expr{key}, Source: src, Ctx: ctx}
	if cache {
		lj.Cache = operator.NewLookupCache(opts.ttl.Milliseconds(), opts.size, opts.missing)
	}
	start := time.Now()
	octx := &operator.Context{NowMS: func() int64 { return time.Since(start).Milliseconds() }}
	joined := 0
	emit := func(it operator.Item) { joined += len(it.Set.Rows) }
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t := &row.Tuple{Emitter: "s", Message: map[string]any{"k": int64(i % benchKeys)}}
		t0 := time.Now()
		if err := lj.Process(octx, operator.Item{Kind: operator.Data, Tuples: []*row.Tuple{t}}, emit); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	elapsed := b.Elapsed()
	b.StopTimer()
	if joined != b.N {
		b.Fatalf("joined %d rows of %d", joined, b.N)
	}
	slices.Sort(lat)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "lookups/s")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

func setupMemoryBench(b *testing.B, e *testEnv) string {
	sql := `CREATE TABLE devices () WITH (DATASOURCE="devices", TYPE="memory", KIND="lookup", KEY="id")`
	e.confKey(b, "memory", "default", map[string]any{"lookup": map[string]any{"cache": true}})
	e.createDef(b, sql)
	ctx := context.Background()
	for i := 0; i < benchKeys; i++ {
		if err := e.bus.Publish(ctx, membus.Message{Topic: "devices", Data: map[string]any{"id": int64(i), "name": "d" + strconv.Itoa(i)}}); err != nil {
			b.Fatal(err)
		}
	}
	tbl := e.memoryTable(b, sql)
	testwait.Until(b, "the memory table to fill", func() bool {
		rows, _ := tbl.Lookup(ctx, map[string]any{"id": int64(benchKeys - 1)})
		return len(rows) == 1
	})
	return sql
}

func setupRedisBench(b *testing.B, e *testEnv) string {
	srv := redistest.Start(b)
	cl := goredis.NewClient(&goredis.Options{Addr: srv.Addr()})
	defer cl.Close()
	ctx := context.Background()
	for i := 0; i < benchKeys; i++ {
		if err := cl.Set(ctx, strconv.Itoa(i), fmt.Sprintf(`{"id":%d,"name":"d%d"}`, i, i), 0).Err(); err != nil {
			b.Fatal(err)
		}
	}
	e.confKey(b, "redis", "bench", map[string]any{"addr": srv.Addr(), "lookup": map[string]any{"cache": true}})
	sql := `CREATE TABLE devices () WITH (DATASOURCE="0", TYPE="redis", KIND="lookup", CONF_KEY="bench")`
	e.createDef(b, sql)
	return sql
}

func setupPostgresBench(b *testing.B, e *testEnv) string {
	pg := pgtest.Start(b)
	db, err := sql.Open("pgx", pg.URL)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `CREATE TABLE devices (id BIGINT PRIMARY KEY, name TEXT)`); err != nil {
		b.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO devices SELECT g, 'd' || g FROM generate_series(0, $1) g`, benchKeys-1); err != nil {
		b.Fatal(err)
	}
	e.confKey(b, "sql", "bench", map[string]any{"url": pg.URL, "lookup": map[string]any{"cache": true}})
	sql := `CREATE TABLE devices () WITH (DATASOURCE="devices", TYPE="sql", KIND="lookup", CONF_KEY="bench")`
	e.createDef(b, sql)
	return sql
}
