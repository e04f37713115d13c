package catalog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/rekuiper/rekuiper/internal/clock"
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
	*sqlStore // writer has one connection
	path      string
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
	s := &SQLiteStore{sqlStore: &sqlStore{clock: opts.Clock, writer: writer, prepared: map[string]*sql.Stmt{}}, path: path}
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
	if err := migrate(ctx, s.writer, s.d, s.nowMilli()); err != nil {
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

// IntegrityCheck runs PRAGMA integrity_check and returns an error unless
// the database reports "ok".
func (s *SQLiteStore) IntegrityCheck(ctx context.Context) error {
	db, err := s.readDB()
	if err != nil {
		return fmt.Errorf("integrity check: %w", err)
	}
	msgs, err := queryAll(ctx, db, scanString, "PRAGMA integrity_check")
	if err != nil {
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
