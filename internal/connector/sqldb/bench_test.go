package sqldb

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/connector"
)

// BenchmarkSQLiteSinkRows measures the SQL sink's rows per second into a
// SQLite file, one row per Write, with and without batching.
func BenchmarkSQLiteSinkRows(b *testing.B) {
	for _, batch := range []int{1, 100} {
		b.Run(fmt.Sprintf("batchSize=%d", batch), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "bench.db")
			conn, err := sql.Open("sqlite", path)
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			if _, err := conn.Exec(`CREATE TABLE t (seq BIGINT, name TEXT, v DOUBLE)`); err != nil {
				b.Fatal(err)
			}
			r := connector.NewRegistry()
			if err := Register(r); err != nil {
				b.Fatal(err)
			}
			s, err := r.NewSink(Type, map[string]any{"url": "sqlite://" + path, "table": "t", "batchSize": batch}, deps())
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
		})
	}
}
