package catalog

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/connector/sqldb/pgtest"
)

// pg is the PostgreSQL server the whole package's tests share (each takes
// a database of its own); nil with pgErr saying why when there is none.
var (
	pg    *pgtest.Server
	pgErr error
)

func TestMain(m *testing.M) {
	var stop func()
	pg, stop, pgErr = pgtest.StartMain(pgtest.Options{})
	code := m.Run()
	if stop != nil {
		stop()
	}
	os.Exit(code)
}

// backend is one database the Store runs on.
type backend struct {
	name string
	// target makes a fresh, empty database and returns what open takes.
	target func(t *testing.T) string
	open   func(ctx context.Context, target string, clk clock.Clock) (Store, error)
}

func sqliteBackend() backend {
	return backend{
		name:   "sqlite",
		target: func(t *testing.T) string { return filepath.Join(t.TempDir(), "data", DefaultFileName) },
		open: func(ctx context.Context, path string, clk clock.Clock) (Store, error) {
			return Open(ctx, path, Options{Clock: clk, BusyTimeout: 100 * time.Millisecond})
		},
	}
}

func postgresBackend() backend {
	return backend{
		name:   "postgres",
		target: func(t *testing.T) string { return pgDatabase(t) },
		open: func(ctx context.Context, url string, clk clock.Clock) (Store, error) {
			return OpenPostgres(ctx, url, PostgresOptions{Clock: clk, LockTimeout: 100 * time.Millisecond})
		},
	}
}

// pgDatabase returns the URL of a fresh database on the shared server, or
// skips the test when there is no PostgreSQL.
func pgDatabase(t *testing.T) string {
	t.Helper()
	if pg == nil {
		t.Skipf("no PostgreSQL: %v", pgErr)
	}
	return pg.NewDatabase(t)
}

// forEachBackend runs fn as one subtest per backend.
func forEachBackend(t *testing.T, fn func(t *testing.T, b backend)) {
	for _, b := range []backend{sqliteBackend(), postgresBackend()} {
		t.Run(b.name, func(t *testing.T) { fn(t, b) })
	}
}

// openAt opens the store at target, closed at the end of the test.
func (b backend) openAt(t *testing.T, target string, clk clock.Clock) Store {
	t.Helper()
	s, err := b.open(context.Background(), target, clk)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// fresh opens a store on a fresh database with the wall clock, closed at
// the end of the test, and returns it with the target it was opened at (to
// reopen it; a second Close does nothing).
func (b backend) fresh(t *testing.T) (Store, string) {
	t.Helper()
	target := b.target(t)
	return b.openAt(t, target, nil), target
}

// newPostgresStore opens a PostgreSQL store on a fresh database with the
// wall clock, closed at the end of the test; it skips the test when there
// is no PostgreSQL.
func newPostgresStore(t *testing.T) *PostgresStore {
	t.Helper()
	return postgresBackend().openAt(t, pgDatabase(t), nil).(*PostgresStore)
}

// newStore opens a store on a fresh database with a virtual clock at t0.
func (b backend) newStore(t *testing.T) (Store, *clock.Virtual) {
	t.Helper()
	clk := clock.NewVirtual(t0)
	return b.openAt(t, b.target(t), clk), clk
}

// core returns the database/sql layer of a store.
func core(t *testing.T, s Store) *sqlStore {
	t.Helper()
	switch s := s.(type) {
	case *SQLiteStore:
		return s.sqlStore
	case *PostgresStore:
		return s.sqlStore
	}
	t.Fatalf("no sql core in %T", s)
	return nil
}

// execRaw runs a statement with ? placeholders on a store's own connection.
func execRaw(t *testing.T, s Store, query string, args ...any) {
	t.Helper()
	c := core(t, s)
	if _, err := (stmts{q: c.writer, dollar: c.d.postgres}).ExecContext(context.Background(), query, args...); err != nil {
		t.Fatal(fmt.Errorf("%s: %w", query, err))
	}
}
