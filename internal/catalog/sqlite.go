package catalog

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/value"
)

// DefaultFileName is the catalog database file inside the data folder.
const DefaultFileName = "sqliteKV.db"

// Options tune an SQLiteStore. Zero values take the defaults.
type Options struct {
	// BusyTimeout is how long a statement waits for a lock held by another
	// connection before failing with SQLITE_BUSY. Default 5s.
	BusyTimeout time.Duration
	// ReadConns caps the reader pool. Default 4.
	ReadConns int
	// Clock stamps Created and Updated. Default the wall clock.
	Clock clock.Clock
}

// SQLiteStore is the Store over one SQLite file in WAL mode with
// synchronous=FULL: a committed mutation survives a crash or power loss.
// Writes go through one connection, serialized by a mutex; reads use a
// separate pool of query-only connections and see every committed write.
type SQLiteStore struct {
	path  string
	clock clock.Clock

	mu     sync.Mutex // serializes writes, Backup and Close
	writer *sql.DB    // one connection
	reader *sql.DB
	closed bool
}

var _ Store = (*SQLiteStore)(nil)

// Open opens (creating if needed) the catalog database at path, creating
// its folder, and migrates it to the current schema.
func Open(ctx context.Context, path string, opts Options) (*SQLiteStore, error) {
	if strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("open catalog %s: %w: path must not contain '?' or '#'", path, ErrInvalid)
	}
	if opts.BusyTimeout <= 0 {
		opts.BusyTimeout = 5 * time.Second
	}
	if opts.ReadConns <= 0 {
		opts.ReadConns = 4
	}
	if opts.Clock == nil {
		opts.Clock = clock.Wall{}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("open catalog %s: %w", path, err)
	}
	busy := fmt.Sprintf("_pragma=busy_timeout(%d)", opts.BusyTimeout.Milliseconds())
	common := busy + "&_pragma=synchronous(FULL)&_pragma=foreign_keys(1)"
	writer, err := sql.Open("sqlite", path+"?"+common+"&_pragma=journal_mode(WAL)&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("open catalog %s: %w", path, err)
	}
	writer.SetMaxOpenConns(1)
	writer.SetMaxIdleConns(1)
	writer.SetConnMaxIdleTime(0)
	writer.SetConnMaxLifetime(0)
	s := &SQLiteStore{path: path, clock: opts.Clock, writer: writer}
	if err := s.init(ctx, common, opts.ReadConns); err != nil {
		s.Close() //nolint:errcheck // reporting the init error
		return nil, fmt.Errorf("open catalog %s: %w", path, err)
	}
	return s, nil
}

func (s *SQLiteStore) init(ctx context.Context, common string, readConns int) error {
	var mode string
	if err := s.writer.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return fmt.Errorf("read journal mode: %w", err)
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("journal mode is %s, want wal", mode)
	}
	if err := migrate(ctx, s.writer, s.nowMilli()); err != nil {
		return err
	}
	reader, err := sql.Open("sqlite", s.path+"?"+common+"&_pragma=query_only(1)")
	if err != nil {
		return err
	}
	reader.SetMaxOpenConns(readConns)
	s.reader = reader
	return reader.PingContext(ctx)
}

// Path returns the database file.
func (s *SQLiteStore) Path() string { return s.path }

// Close closes both pools. It is safe to call more than once.
func (s *SQLiteStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	if s.reader != nil {
		errs = append(errs, s.reader.Close())
	}
	errs = append(errs, s.writer.Close())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close catalog: %w", err)
	}
	return nil
}

// SchemaVersion returns the schema version recorded in the database.
func (s *SQLiteStore) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	if err := s.reader.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&v); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}

// IntegrityCheck runs PRAGMA integrity_check and returns an error unless
// the database reports "ok".
func (s *SQLiteStore) IntegrityCheck(ctx context.Context) error {
	rows, err := s.reader.QueryContext(ctx, "PRAGMA integrity_check")
	if err != nil {
		return fmt.Errorf("integrity check: %w", err)
	}
	defer rows.Close()
	var msgs []string
	for rows.Next() {
		var m string
		if err := rows.Scan(&m); err != nil {
			return fmt.Errorf("integrity check: %w", err)
		}
		msgs = append(msgs, m)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("integrity check: %w", err)
	}
	if len(msgs) != 1 || msgs[0] != "ok" {
		return fmt.Errorf("integrity check: %s", strings.Join(msgs, "; "))
	}
	return nil
}

// Backup writes a consistent copy of the database to path with VACUUM INTO,
// via a temporary file that is synced and then renamed, so path holds either
// nothing or a complete copy. path must not exist.
func (s *SQLiteStore) Backup(ctx context.Context, path string) error {
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("backup catalog to %s: %w", path, fs.ErrExist)
	}
	tmp := path + ".tmp"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("backup catalog to %s: %w", path, err)
	}
	err := s.locked(func() error {
		_, err := s.writer.ExecContext(ctx, "VACUUM INTO ?", tmp)
		return err
	})
	if err == nil {
		err = syncFile(tmp)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = syncFile(filepath.Dir(path))
	}
	if err != nil {
		os.Remove(tmp) //nolint:errcheck // best effort cleanup
		return fmt.Errorf("backup catalog to %s: %w", path, err)
	}
	return nil
}

func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// locked runs fn holding the write mutex, or returns ErrClosed.
func (s *SQLiteStore) locked(fn func() error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	return fn()
}

// tx runs fn in one write transaction (BEGIN IMMEDIATE) and commits it.
func (s *SQLiteStore) tx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return s.locked(func() error {
		tx, err := s.writer.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("begin: %w", err)
		}
		if err := fn(tx); err != nil {
			tx.Rollback() //nolint:errcheck // SQLite may have rolled back already
			return err
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("commit: %w", err)
		}
		return nil
	})
}

// readDB returns the reader pool, or ErrClosed.
func (s *SQLiteStore) readDB() (*sql.DB, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	return s.reader, nil
}

func (s *SQLiteStore) nowMilli() int64 { return s.clock.Now().UnixMilli() }

// put implements the PutMode rules: in one transaction it looks the row up
// with existsSQL, refuses per mode, then calls write with the creation time
// (kept from the existing row) and the update time, both in ms.
func (s *SQLiteStore) put(ctx context.Context, mode PutMode, existsSQL string, key []any, write func(tx *sql.Tx, created, updated int64) error) (created, updated int64, err error) {
	updated = s.nowMilli()
	err = s.tx(ctx, func(tx *sql.Tx) error {
		var c int64
		err := tx.QueryRowContext(ctx, existsSQL, key...).Scan(&c)
		exists := err == nil
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		switch {
		case exists && mode == Create:
			return ErrConflict
		case !exists && mode == Replace:
			return ErrNotFound
		}
		if !exists {
			c = updated
		}
		created = c
		return write(tx, created, updated)
	})
	return created, updated, err
}

// del deletes with stmt and reports ErrNotFound when no row matched.
func (s *SQLiteStore) del(ctx context.Context, stmt string, key ...any) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, stmt, key...)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if n == 0 {
			return ErrNotFound
		}
		return nil
	})
}

// queryer is what reads need; *sql.DB and *sql.Tx have it.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// queryAll runs query and scans every row with scan.
func queryAll[T any](ctx context.Context, q queryer, scan func(rowScanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// getOne runs a query expected to return at most one row.
func getOne[T any](ctx context.Context, s *SQLiteStore, scan func(rowScanner) (T, error), query string, args ...any) (T, error) {
	var zero T
	db, err := s.readDB()
	if err != nil {
		return zero, err
	}
	all, err := queryAll(ctx, db, scan, query, args...)
	if err != nil {
		return zero, err
	}
	if len(all) == 0 {
		return zero, ErrNotFound
	}
	return all[0], nil
}

// list runs a query on the reader pool.
func list[T any](ctx context.Context, s *SQLiteStore, scan func(rowScanner) (T, error), query string, args ...any) ([]T, error) {
	db, err := s.readDB()
	if err != nil {
		return nil, err
	}
	return queryAll(ctx, db, scan, query, args...)
}

type rowScanner interface{ Scan(dest ...any) error }

func fromMilli(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// encodeProps encodes properties as a JSON object; nil is {}.
func encodeProps(p map[string]any) (string, error) {
	if p == nil {
		return "{}", nil
	}
	b, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("%w: properties: %w", ErrInvalid, err)
	}
	return string(b), nil
}

// decodeProps decodes a JSON object into the value model.
func decodeProps(s string) (map[string]any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("decode properties: %w", err)
	}
	if m == nil {
		m = map[string]any{}
	}
	return value.Normalize(m).(map[string]any), nil
}
