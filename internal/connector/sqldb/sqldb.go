// Package sqldb provides the sql source, sink and lookup source on
// database/sql, with pgx for PostgreSQL (postgres:// and postgresql://
// URLs) and modernc SQLite (sqlite:// URLs, file: URIs and plain paths).
//
// The sink, given a transactionalID, takes part in checkpoints with the
// same hooks as the kafka sink (connector.Transactional: PreCommit,
// Commit, Abort) plus LastCommitted. Protocol at qos 2: Write executes
// rows inside the open transaction; PreCommit(id) at the barrier adds an upsert of
// (transactionalID, id) into the bookkeeping table
// rekuiper_checkpoints(rule_sink TEXT PRIMARY KEY, checkpoint_id BIGINT);
// Commit(id), called once checkpoint id is durable, commits the
// transaction, so a checkpoint's rows and its id become visible together or
// not at all. Rows written between PreCommit and Commit are held in memory
// and executed in the next transaction. Abort rolls back and drops held
// rows.
//
// Replay after a crash: a crash before Commit leaves nothing in the
// database (the transaction dies with the connection), and the engine
// restores the checkpoint before it, so each row is inserted once. A crash
// after Commit but before the engine marked the checkpoint committed is
// covered by LastCommitted: it returns the id of the last committed
// checkpoint, which the engine restores instead of the older one it marked.
// The engine numbers checkpoints after LastCommitted even when it starts
// without state, so ids never go back. A checkpoint id at or below
// LastCommitted can still reach PreCommit when a rule has several
// transactional sinks and a crash fell between their commits (the engine
// then restores the oldest): it commits again, at least once, since a
// replay's barriers need not fall where the original's did.
package sqldb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/connector/connection"
)

// Type is the connector type name.
const Type = "sql"

// CheckpointTable is the bookkeeping table of transactional sinks.
const CheckpointTable = "rekuiper_checkpoints"

// Register adds the sql source, sink and lookup source to r.
func Register(r *connector.Registry) error {
	if err := r.RegisterSource(Type, SourceSpec(), NewSource); err != nil {
		return err
	}
	if err := r.RegisterSink(Type, SinkSpec(), NewSink); err != nil {
		return err
	}
	if err := r.RegisterLookup(Type, LookupSpec(), NewLookup); err != nil {
		return err
	}
	return r.RegisterConnectionKey(Type, ConnectionKey)
}

func urlProps() []connector.Prop {
	return []connector.Prop{
		{Name: "url", Type: connector.TypeString, Secret: true, Doc: "postgres://user:pass@host:port/db, sqlite://path or a file path"},
		{Name: "dburl", Type: connector.TypeString, Secret: true, Doc: "alias of url"},
	}
}

// dialect holds what differs between the supported databases.
type dialect struct {
	driver, dsn string
	postgres    bool
}

func (d dialect) placeholder(n int) string {
	if d.postgres {
		return fmt.Sprintf("$%d", n)
	}
	return "?"
}

// parseURL picks the driver for the url or dburl property.
func parseURL(props map[string]any) (dialect, error) {
	u := connector.Get[string](props, "url")
	if u == "" {
		u = connector.Get[string](props, "dburl")
	}
	if u == "" {
		return dialect{}, errors.New("property \"url\" is required")
	}
	lower := strings.ToLower(u)
	switch {
	case strings.HasPrefix(lower, "postgres://"), strings.HasPrefix(lower, "postgresql://"):
		return dialect{driver: "pgx", dsn: u, postgres: true}, nil
	case strings.HasPrefix(lower, "sqlite://"):
		return dialect{driver: "sqlite", dsn: sqliteDSN(u[len("sqlite://"):])}, nil
	case strings.HasPrefix(lower, "sqlite:"):
		return dialect{driver: "sqlite", dsn: sqliteDSN(u[len("sqlite:"):])}, nil
	case strings.HasPrefix(lower, "file:"), !strings.Contains(u, "://"):
		return dialect{driver: "sqlite", dsn: sqliteDSN(u)}, nil
	}
	return dialect{}, fmt.Errorf("unsupported database url %q: use postgres://, sqlite:// or a file path", redact(u))
}

// sqliteBusyTimeout is how long a SQLite statement waits for another
// connection's lock (another process reading or writing the same file)
// before it fails with SQLITE_BUSY.
const sqliteBusyTimeout = "5000"

// sqliteDSN adds a busy timeout to a SQLite DSN that sets none, so that a
// reader of the same file (a dashboard, a backup, another rule) makes a
// write wait briefly instead of failing at once.
func sqliteDSN(dsn string) string {
	if strings.Contains(strings.ToLower(dsn), "busy_timeout") {
		return dsn
	}
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + "_pragma=busy_timeout(" + sqliteBusyTimeout + ")"
}

// redact hides the password of a URL in error messages.
func redact(u string) string {
	at := strings.LastIndex(u, "@")
	scheme := strings.Index(u, "://")
	if at < 0 || scheme < 0 || at < scheme {
		return u
	}
	cred := u[scheme+3 : at]
	if i := strings.Index(cred, ":"); i >= 0 {
		cred = cred[:i] + ":" + connector.MaskedValue
	}
	return u[:scheme+3] + cred + u[at:]
}

// ConnectionKey is the connection.KeyFunc of named sql connections: the
// key of the database pool that connectors with this url share.
func ConnectionKey(props map[string]any) (string, error) {
	d, err := parseURL(connection.Pick(props, "url", "dburl"))
	if err != nil {
		return "", err
	}
	return d.key(), nil
}

func (d dialect) key() string { return connection.Digest("sql", d.driver, d.dsn) }

// openDB opens a database pool; it does no I/O.
func openDB(d dialect) (*sql.DB, error) {
	db, err := sql.Open(d.driver, d.dsn)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	if !d.postgres {
		// One writer at a time avoids SQLITE_BUSY between pooled connections.
		db.SetMaxOpenConns(1)
	}
	return db, nil
}

// database is one connector's hold on a database pool. Sources, lookups
// and non-transactional sinks with the same url share one pool through
// Deps.Connections; a transactional sink has its own (it keeps a
// transaction open from checkpoint to checkpoint, which on SQLite's single
// connection would block every other user of a shared pool). Its owner
// serialises the calls.
type database struct {
	reg     *connection.Registry
	d       dialect
	private bool

	use *connection.Use
	own *sql.DB             // private pool
	tr  *connection.Tracker // the pool's tracker
	// link, set for sinks, is this connector's connection status, kept
	// across failed connects.
	link *connection.Link
}

// connect drops the previous hold, takes the pool and pings the database.
// After a failed ping the hold is kept (the connector still counts as a
// user of the connection) until the next connect or release.
func (h *database) connect(ctx context.Context) (*sql.DB, error) {
	h.release()
	h.use = h.reg.Join(h.d.key())
	var db *sql.DB
	if h.private {
		h.tr = h.use.Track()
		var err error
		if db, err = openDB(h.d); err != nil {
			return nil, h.fail(err)
		}
		h.own = db
	} else {
		var err error
		if db, h.tr, err = connection.Shared(h.use, func(*connection.Tracker) (*sql.DB, error) { return openDB(h.d) }, (*sql.DB).Close); err != nil {
			h.link.Failed(err)
			return nil, err
		}
	}
	if err := db.PingContext(ctx); err != nil {
		return nil, h.fail(classify(fmt.Errorf("connect to database: %w", err)))
	}
	h.tr.Connected()
	h.link.Connected()
	return db, nil
}

// fail records a failure to connect, whatever its kind, and returns it.
func (h *database) fail(err error) error {
	h.tr.Failed(err)
	h.link.Failed(err)
	return err
}

// report records the outcome of an operation that used the database: a
// retryable failure marks the connection disconnected, a success
// connected. It returns err.
func (h *database) report(err error) error {
	h.link.Report(err)
	return h.tr.Report(err)
}

// release drops the hold; the last holder of a shared pool closes it.
func (h *database) release() error {
	var err error
	if h.own != nil {
		err = h.own.Close()
		h.own = nil
	}
	if h.private {
		h.tr.Close()
	}
	h.tr = nil
	if lerr := h.use.Leave(); err == nil {
		err = lerr
	}
	h.use = nil
	return err
}

// quoteIdent quotes a possibly schema-qualified identifier.
func quoteIdent(name string) (string, error) {
	if strings.TrimSpace(name) == "" {
		return "", errors.New("empty identifier")
	}
	parts := strings.Split(name, ".")
	for i, p := range parts {
		if p == "" {
			return "", fmt.Errorf("bad identifier %q", name)
		}
		parts[i] = `"` + strings.ReplaceAll(p, `"`, `""`) + `"`
	}
	return strings.Join(parts, "."), nil
}

// classify wraps transient database failures with api.Retryable: lost or
// refused connections, timeouts, PostgreSQL connection, resource,
// shutdown, serialization and deadlock errors, and SQLite busy/locked.
// Constraint violations, syntax errors and missing tables are permanent.
func classify(err error) error {
	if err == nil || errors.Is(err, api.ErrRetryable) {
		return err
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case strings.HasPrefix(pe.Code, "08"), strings.HasPrefix(pe.Code, "53"),
			strings.HasPrefix(pe.Code, "57P"), pe.Code == "40001", pe.Code == "40P01":
			return api.Retryable(err)
		}
		return err
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_IOERR:
			return api.Retryable(err)
		}
		return err
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, driver.ErrBadConn) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, context.Canceled) || errors.Is(err, sql.ErrConnDone) ||
		pgconn.Timeout(err) || pgconn.SafeToRetry(err) {
		return api.Retryable(err)
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return api.Retryable(err)
	}
	return err
}
