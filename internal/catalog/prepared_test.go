package catalog

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"testing"
)

func putRules(tb testing.TB, s Store, from, n int) {
	tb.Helper()
	ctx := context.Background()
	for i := from; i < from+n; i++ {
		id := "r" + strconv.Itoa(i)
		def := json.RawMessage(`{"id":"` + id + `","sql":"SELECT * FROM demo"}`)
		if _, err := s.PutRule(ctx, Rule{ID: id, Definition: def, State: RuleRunning}, Create); err != nil {
			tb.Fatal(err)
		}
	}
}

// Write transactions prepare each statement text once and reuse it, also
// across a backup (VACUUM INTO on the same connection).
func TestWritesReusePreparedStatements(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	putRules(t, s, 0, 3)
	s.mu.Lock()
	n := len(s.prepared)
	s.mu.Unlock()
	if n == 0 {
		t.Fatal("no statement was prepared")
	}
	putRules(t, s, 3, 50)
	if err := s.Backup(ctx, filepath.Join(t.TempDir(), "b.db")); err != nil {
		t.Fatal(err)
	}
	putRules(t, s, 53, 50)
	s.mu.Lock()
	m := len(s.prepared)
	s.mu.Unlock()
	if m != n {
		t.Fatalf("%d prepared statements after 100 more writes of the same kind, want %d", m, n)
	}
	if _, err := s.PutRule(ctx, Rule{ID: "r0", Definition: json.RawMessage(`{"id":"r0"}`), State: RuleRunning}, Create); err == nil {
		t.Fatal("create of an existing rule succeeded through a prepared statement")
	}
	rules, err := s.ListRules(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rules) != 103 {
		t.Fatalf("%d rules stored, want 103", len(rules))
	}
}

// BenchmarkPutRule creates rules one transaction each (synchronous=FULL:
// one fsync each), with and without the statement cache.
func BenchmarkPutRule(b *testing.B) {
	for _, cached := range []bool{false, true} {
		b.Run("prepared="+strconv.FormatBool(cached), func(b *testing.B) {
			s, err := Open(context.Background(), filepath.Join(b.TempDir(), DefaultFileName), Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			if !cached {
				s.prepared = nil
			}
			i := 0
			for b.Loop() {
				putRules(b, s, i, 1)
				i++
			}
		})
	}
}
