package sqldb

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/connector/connectortest"
	"github.com/rekuiper/rekuiper/internal/connector/sqldb/pgtest"
)

// BenchmarkSQLiteSinkRows measures the SQL sink's rows per second into a
// SQLite file (WAL, synchronous FULL), one row per Write, with and without
// batching.
func BenchmarkSQLiteSinkRows(b *testing.B) {
	for _, batch := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("batchSize=%d", batch), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "bench.db")
			conn, err := sql.Open("sqlite", path)
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			benchSinkRows(b, conn, "sqlite://"+path, batch)
		})
	}
}

// BenchmarkPostgresSinkRows is the same into PostgreSQL on loopback
// (pgtest's throwaway cluster), with fsync on (durable, the server's
// default) and off.
func BenchmarkPostgresSinkRows(b *testing.B) {
	for _, durable := range []bool{true, false} {
		b.Run(fmt.Sprintf("fsync=%v", durable), func(b *testing.B) {
			pg := pgtest.StartWith(b, pgtest.Options{Durable: durable})
			conn, err := sql.Open("pgx", pg.URL)
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			for _, batch := range []int{1, 100, 1000} {
				b.Run(fmt.Sprintf("batchSize=%d", batch), func(b *testing.B) {
					benchSinkRows(b, conn, pg.URL, batch)
				})
			}
		})
	}
}

// benchSinkRows writes b.N three-column rows through a sql sink into a
// fresh table t, one row per Write, and checks that all arrived.
func benchSinkRows(b *testing.B, conn *sql.DB, url string, batch int) {
	if _, err := conn.Exec(`DROP TABLE IF EXISTS t`); err != nil {
		b.Fatal(err)
	}
	if _, err := conn.Exec(`CREATE TABLE t (seq BIGINT, name TEXT, v DOUBLE PRECISION)`); err != nil {
		b.Fatal(err)
	}
	r := connectortest.Registry(b, Register)
	s, err := r.NewSink(Type, map[string]any{"url": url, "table": "t", "batchSize": batch}, deps())
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Connect(ctx); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		msg := &api.SinkMessage{Rows: []map[string]any{{"seq": int64(i), "name": "dev", "v": 21.5}}}
		if err := s.Write(ctx, msg); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Close(ctx); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	var n int
	if err := conn.QueryRow(`SELECT count(*) FROM t`).Scan(&n); err != nil || n != b.N {
		b.Fatalf("table holds %d rows, want %d (%v)", n, b.N, err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
