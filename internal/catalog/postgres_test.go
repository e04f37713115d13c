package catalog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/rekuiper/rekuiper/internal/connector/sqldb/pgtest"
)

// postgresFaults are the real ways a PostgreSQL catalog's writes fail.
func postgresFaults() []fault {
	ctx := context.Background()
	shared := func(t *testing.T) Store {
		return newPostgresStore(t)
	}
	// holdLocks runs stmts in a transaction of a session of its own that
	// stays open until the returned function rolls it back.
	holdLocks := func(t *testing.T, s Store, stmts ...string) func() {
		db, err := sql.Open("pgx", s.(*PostgresStore).cfg.ConnString())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range stmts {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				t.Fatal(fmt.Errorf("%s: %w", q, err))
			}
		}
		return func() {
			if err := tx.Rollback(); err != nil {
				t.Fatal(err)
			}
		}
	}
	var own *pgtest.Server // the server the "server stopped" fault stops
	return []fault{
		{
			name:  "postgres: tables locked by another session",
			setup: shared,
			inject: func(t *testing.T, s Store) func() {
				// The lock holder writes too, then gives up: its change
				// must never be seen.
				return holdLocks(t, s, `LOCK TABLE streams, rules, connections, conf_keys, catalog_version IN ACCESS EXCLUSIVE MODE`,
					`DELETE FROM rules`)
			},
			mutations: allMutations,
		},
		{
			name:  "postgres: another node holds the write lock",
			setup: shared,
			inject: func(t *testing.T, s Store) func() {
				return holdLocks(t, s, fmt.Sprintf(`SELECT pg_advisory_xact_lock(%d)`, writeLockKey))
			},
			mutations: allMutations,
		},
		{
			name: "postgres: server stopped",
			setup: func(t *testing.T) Store {
				own = pgtest.Start(t)
				return postgresBackend().openAt(t, own.URL, nil)
			},
			inject: func(t *testing.T, s Store) func() {
				own.Stop(t)
				return func() { own.Start(t) }
			},
			mutations: allMutations,
		},
	}
}

// TestPostgresRefusesWhatItCannotHold: text PostgreSQL cannot store (a NUL
// byte, invalid UTF-8) is refused as invalid input, as a 400, not as a
// storage failure; nothing is stored.
func TestPostgresRefusesWhatItCannotHold(t *testing.T) {
	ctx := context.Background()
	s := newPostgresStore(t)
	for name, sqlText := range map[string]string{"nul byte": "CREATE STREAM a\x00 ()", "invalid utf-8": "CREATE STREAM \xff ()"} {
		t.Run(name, func(t *testing.T) {
			_, err := s.PutStream(ctx, Stream{Name: "a", Kind: KindStream, SQL: sqlText}, Create)
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v, want ErrInvalid", err)
			}
		})
	}
	if _, err := s.GetStream(ctx, "a"); !errors.Is(err, ErrNotFound) {
		t.Errorf("refused stream is stored: %v", err)
	}
	if _, err := s.GetStream(ctx, "\x00"); !errors.Is(err, ErrInvalid) {
		t.Errorf("get by a name with a NUL byte: %v, want ErrInvalid", err)
	}
}

func TestOpenPostgresHidesPassword(t *testing.T) {
	_, err := OpenPostgres(context.Background(), "postgres://u:s3cret@127.0.0.1:notaport/db", PostgresOptions{})
	if !errors.Is(err, ErrInvalid) || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("bad URL: %v", err)
	}
	port := pgtest.FreePort(t)
	_, err = OpenPostgres(context.Background(), fmt.Sprintf("postgres://u:s3cret@127.0.0.1:%d/db?connect_timeout=2", port), PostgresOptions{})
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("unreachable server: %v", err)
	}
}
