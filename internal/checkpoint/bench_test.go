package checkpoint

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/connector/sqldb/pgtest"
)

// BenchmarkSave compares saving and reading back one checkpoint in the
// data folder (tmp file, fsync, rename) and in the cluster's PostgreSQL
// (one fenced transaction; the server runs with fsync on), for a small
// window's state and a large one.
func BenchmarkSave(b *testing.B) {
	ctx := context.Background()
	db, err := catalog.OpenPostgres(ctx, pgtest.StartWith(b, pgtest.Options{Durable: true}).NewDatabase(b), catalog.PostgresOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	tok, ok, err := db.AcquireLease(ctx, "r", "A", time.Hour)
	if err != nil || !ok {
		b.Fatal(ok, err)
	}
	stores := []struct {
		name string
		s    Storage
	}{
		{"local", &Store{Dir: b.TempDir()}},
		{"postgres", &Shared{Backend: db, Lease: func(string) (string, int64, error) { return "A", tok, nil }, Timeout: time.Minute}},
	}
	for _, size := range []int{1 << 10, 10 << 20} {
		// Incompressible, so PostgreSQL's TOAST compression does not
		// flatter it.
		state := make([]byte, size)
		rand.NewChaCha8([32]byte{1}).Read(state) //nolint:errcheck // never fails
		cp := &Checkpoint{RuleID: "r", Fingerprint: "fp", Ops: map[string][]byte{"3:window": state},
			State: map[string][]byte{}, Offsets: map[string][]byte{"source:s": []byte(`{"v":1,"i":7}`)}}
		for _, st := range stores {
			b.Run(fmt.Sprintf("%s/%dKB/save", st.name, size>>10), func(b *testing.B) {
				b.SetBytes(int64(size))
				for i := 0; b.Loop(); i++ {
					cp.ID = uint64(i + 1)
					if _, err := st.s.Save(cp); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(fmt.Sprintf("%s/%dKB/latest", st.name, size>>10), func(b *testing.B) {
				b.SetBytes(int64(size))
				for b.Loop() {
					if _, err := st.s.Latest("r", "fp"); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
