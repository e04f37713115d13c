package catalog

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/rekuiper/rekuiper/internal/clock"
)

// NotifyChannel is the PostgreSQL channel every committed catalog write is
// announced on; the payload is a Change in JSON.
const NotifyChannel = "rekuiper_catalog"

// writeLockKey names the transaction-scoped advisory lock every catalog
// write takes first, so the writes of all nodes are serialized as SQLite's
// single writer serializes them.
const writeLockKey int64 = 0x72656b7569706572 // "rekuiper"

// maxNotifyPayload stays under PostgreSQL's 8000-byte NOTIFY limit; a
// longer change is announced without its key, and receivers reload.
const maxNotifyPayload = 7000

// PostgresOptions tune a PostgresStore. Zero values take the defaults.
type PostgresOptions struct {
	// LockTimeout bounds how long a statement waits for a lock another
	// session holds before it fails. Default 5s.
	LockTimeout time.Duration
	// MaxConns caps the connection pool. Default 4.
	MaxConns int
	// Clock stamps Created and Updated and paces reconnection. Default
	// the wall clock.
	Clock clock.Clock
	// Logger reports lost and restored notification connections.
	Logger *slog.Logger
}

// PostgresStore is the Store over a PostgreSQL database that several
// daemons share. It has the SQLite store's schema, migrations and
// guarantees: each write is one transaction, writes of all nodes are
// serialized by an advisory lock, and a committed write is announced on
// NotifyChannel in the same transaction, so it is announced if and only if
// it committed.
type PostgresStore struct {
	*sqlStore
	cfg    *pgx.ConnConfig // for the LISTEN connection
	origin string          // this instance, in the changes it announces
	where  string          // host:port/database, for messages (no password)
	log    *slog.Logger
}

var (
	_ Store           = (*PostgresStore)(nil)
	_ Shared          = (*PostgresStore)(nil)
	_ JSFunctionStore = (*PostgresStore)(nil)
	_ RuleStartMarker = (*PostgresStore)(nil)
)

// OpenPostgres connects to the database that url (postgres://…) names and
// migrates it to the current schema. Errors never contain the password.
func OpenPostgres(ctx context.Context, url string, opts PostgresOptions) (*PostgresStore, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		// The parser's message may quote the URL: say only what is wrong.
		return nil, fmt.Errorf("open catalog: %w: not a valid PostgreSQL URL", ErrInvalid)
	}
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = 5 * time.Second
	}
	if opts.MaxConns <= 0 {
		opts.MaxConns = 4
	}
	if opts.Clock == nil {
		opts.Clock = clock.Wall{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.RuntimeParams["lock_timeout"] = strconv.FormatInt(opts.LockTimeout.Milliseconds(), 10)
	if cfg.RuntimeParams["application_name"] == "" {
		cfg.RuntimeParams["application_name"] = "rekuiper"
	}
	origin := make([]byte, 8)
	if _, err := rand.Read(origin); err != nil {
		return nil, fmt.Errorf("open catalog: %w", err)
	}
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(opts.MaxConns)
	s := &PostgresStore{
		sqlStore: &sqlStore{clock: opts.Clock, writer: db, reader: db},
		cfg:      cfg, origin: hex.EncodeToString(origin), log: opts.Logger,
		where: net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))) + "/" + cfg.Database,
	}
	s.d = dialect{
		postgres:   true,
		lockWrites: fmt.Sprintf("SELECT pg_advisory_xact_lock(%d)", writeLockKey),
		readTx:     sql.TxOptions{ReadOnly: true, Isolation: sql.LevelRepeatableRead},
		notify:     s.notify,
		classify:   classifyPostgres,
	}
	if err := migrate(ctx, db, s.d, s.nowMilli()); err != nil {
		db.Close()
		return nil, fmt.Errorf("open catalog on PostgreSQL %s: %w", s.where, classifyPostgres(err))
	}
	return s, nil
}

// Where names the database (host:port/database) without credentials.
func (s *PostgresStore) Where() string { return s.where }

// Backup is not offered for a shared catalog: PostgreSQL's own tools
// (pg_dump, base backups) copy it consistently.
func (s *PostgresStore) Backup(ctx context.Context, path string) error {
	return fmt.Errorf("backup catalog: %w: a PostgreSQL catalog is backed up with PostgreSQL's tools (pg_dump)", ErrInvalid)
}

func (s *PostgresStore) notify(ctx context.Context, tx stmts, ch Change) error {
	ch.Origin = s.origin
	b, err := json.Marshal(ch)
	if err == nil && len(b) > maxNotifyPayload {
		b, err = json.Marshal(Change{Version: ch.Version, Origin: s.origin})
	}
	if err != nil {
		return fmt.Errorf("announce change: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `SELECT pg_notify(?, ?)`, NotifyChannel, string(b)); err != nil {
		return fmt.Errorf("announce change: %w", err)
	}
	return nil
}

// classifyPostgres maps PostgreSQL's errors to the sentinels the SQLite
// store returns for the same cause: a unique violation is ErrConflict; a
// value the database cannot hold (a NUL byte or invalid UTF-8 in a text,
// malformed JSON) or a failed check is ErrInvalid.
func classifyPostgres(err error) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return err
	}
	switch {
	case pe.Code == "23505":
		return fmt.Errorf("%w: %w", ErrConflict, err)
	case strings.HasPrefix(pe.Code, "22"), pe.Code == "23514":
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return err
}

// Watch implements Shared: it LISTENs on NotifyChannel over a connection of
// its own and calls fn, on the calling goroutine, with every change another
// store instance committed, in commit order. After each (re)connection it
// first calls fn with an empty Change, since announcements may have been
// missed while disconnected. A lost connection is retried with backoff
// (0.5s doubling to 10s). It returns when ctx ends.
func (s *PostgresStore) Watch(ctx context.Context, fn func(Change)) error {
	const minWait, maxWait = 500 * time.Millisecond, 10 * time.Second
	wait := minWait
	for ctx.Err() == nil {
		err := s.listen(ctx, fn, func() { wait = minWait })
		if ctx.Err() != nil {
			break
		}
		s.log.Warn("catalog change notifications lost; reconnecting", "database", s.where, "err", err, "retry", wait)
		if !clock.Sleep(ctx, s.clock, wait) {
			break
		}
		wait = min(2*wait, maxWait)
	}
	return nil
}

// listen runs one LISTEN connection until it fails or ctx ends.
func (s *PostgresStore) listen(ctx context.Context, fn func(Change), connected func()) error {
	conn, err := pgx.ConnectConfig(ctx, s.cfg)
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		conn.Close(cctx) //nolint:errcheck // the connection is being dropped
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+NotifyChannel); err != nil {
		return err
	}
	connected()
	fn(Change{})
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		var ch Change
		if err := json.Unmarshal([]byte(n.Payload), &ch); err != nil || !ch.wellFormed() {
			fn(Change{}) // not ours to read: reload instead
			continue
		}
		if ch.Origin != s.origin {
			fn(ch)
		}
	}
}

// wellFormed reports whether the key has the length the kind needs; an
// empty Kind (reload) needs none.
func (ch Change) wellFormed() bool {
	switch ch.Kind {
	case "":
		return true
	case ChangeConfKey:
		return len(ch.Key) == 3
	case ChangeSchema:
		return len(ch.Key) == 2
	case ChangeStream, ChangeRule, ChangeConnection, ChangeUpload, ChangeJSFunction:
		return len(ch.Key) == 1
	}
	return false
}
