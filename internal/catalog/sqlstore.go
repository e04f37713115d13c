package catalog

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/value"
)

// sqlStore implements Store over database/sql for SQLite and PostgreSQL
// alike. Statements are written with ? placeholders in the SQL both
// databases understand; the dialect covers what differs. Every write is one
// transaction that also bumps the catalog version, so a node sharing the
// database can tell that something changed (see Change).
type sqlStore struct {
	d     dialect
	clock clock.Clock

	mu     sync.Mutex // serializes writes, Backup and Close
	writer *sql.DB
	reader *sql.DB
	closed bool
	// prepared caches the write transactions' statements, prepared once
	// on the writer (guarded by mu); nil prepares every statement each
	// time it runs. Set where the writer has a single connection
	// (SQLite): there a prepared statement is reused by every transaction.
	prepared map[string]*sql.Stmt
	pending  []string // statements to prepare after the transaction (guarded by mu)

	// starts are rule start marker writes waiting for a transaction: the
	// next write transaction carries them all (see WriteRuleStarts).
	startsMu sync.Mutex
	starts   []*startsReq
	commits  atomic.Int64 // committed write transactions
}

// dialect is what differs between the databases a sqlStore runs on.
type dialect struct {
	// postgres: the database is PostgreSQL (placeholders $1, $2, …, its
	// migrations), else SQLite.
	postgres bool
	// lockWrites, when set, runs first in every write transaction; it
	// serializes the writers of every process sharing the database.
	lockWrites string
	// readTx are the options of Load's transaction.
	readTx sql.TxOptions
	// notify, when set, publishes ch in the transaction that made it, so
	// it is delivered if and only if the transaction commits.
	notify func(ctx context.Context, tx stmts, ch Change) error
	// classify maps a driver error to a sentinel where one applies; nil
	// leaves errors as they are.
	classify func(error) error
}

// maxPrepared bounds the cache of prepared write statements; the catalog's
// statements are a fixed set of texts well below it.
const maxPrepared = 128

// errNotPrepared: the statement runs unprepared this time.
var errNotPrepared = errors.New("statement not prepared yet")

// preparedStmt returns the cached statement of query (already bound). On a
// miss the statement is noted and prepared after the transaction
// (preparePending): the writer's one connection is the transaction's
// until then. The caller holds mu.
func (s *sqlStore) preparedStmt(_ context.Context, query string) (*sql.Stmt, error) {
	if st, ok := s.prepared[query]; ok {
		return st, nil
	}
	if len(s.prepared)+len(s.pending) < maxPrepared {
		s.pending = append(s.pending, query)
	}
	return nil, errNotPrepared
}

// preparePending prepares on the writer the statements a transaction ran
// unprepared. The caller holds mu, and no transaction is open. A statement
// that does not prepare stays unprepared (and is tried again when next
// run).
func (s *sqlStore) preparePending(ctx context.Context) {
	for _, q := range s.pending {
		if _, ok := s.prepared[q]; ok {
			continue
		}
		if st, err := s.writer.PrepareContext(ctx, q); err == nil {
			s.prepared[q] = st
		}
	}
	s.pending = s.pending[:0]
}

// stmts runs statements written with ? placeholders on a pool or a
// transaction, rewriting the placeholders for the dialect.
type stmts struct {
	q interface {
		ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
		QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	}
	dollar bool
	// tx and prep, when set, run each statement through tx as a
	// statement prepared once (sqlStore.preparedStmt); one not prepared
	// yet runs unprepared.
	tx   *sql.Tx
	prep func(ctx context.Context, query string) (*sql.Stmt, error)
}

func (s stmts) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	query = bind(query, s.dollar)
	if s.prep != nil {
		if st, err := s.prep(ctx, query); err == nil {
			return s.tx.StmtContext(ctx, st).ExecContext(ctx, args...)
		}
	}
	return s.q.ExecContext(ctx, query, args...)
}

func (s stmts) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	query = bind(query, s.dollar)
	if s.prep != nil {
		if st, err := s.prep(ctx, query); err == nil {
			return s.tx.StmtContext(ctx, st).QueryContext(ctx, args...)
		}
	}
	return s.q.QueryContext(ctx, query, args...)
}

// bind rewrites ? placeholders as $1, $2, … when dollar is set. The
// catalog's statements hold no ? inside string literals.
func bind(query string, dollar bool) string {
	if !dollar || !strings.Contains(query, "?") {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// upsertSQL is an INSERT of cols into table that replaces the row with the
// same keys (the first nkeys of cols); SQLite and PostgreSQL both take it.
func upsertSQL(table string, nkeys int, cols ...string) string {
	marks := strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ")
	sets := make([]string, 0, len(cols)-nkeys)
	for _, c := range cols[nkeys:] {
		sets = append(sets, c+" = excluded."+c)
	}
	return "INSERT INTO " + table + " (" + strings.Join(cols, ", ") + ") VALUES (" + marks +
		") ON CONFLICT (" + strings.Join(cols[:nkeys], ", ") + ") DO UPDATE SET " + strings.Join(sets, ", ")
}

// Close closes both pools. It is safe to call more than once.
func (s *sqlStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	for _, st := range s.prepared {
		errs = append(errs, st.Close())
	}
	if s.reader != nil && s.reader != s.writer {
		errs = append(errs, s.reader.Close())
	}
	errs = append(errs, s.writer.Close())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close catalog: %w", err)
	}
	return nil
}

// SchemaVersion returns the schema version recorded in the database.
func (s *sqlStore) SchemaVersion(ctx context.Context) (int, error) {
	v, err := getOne(ctx, s, scanInt64, `SELECT COALESCE(MAX(version), 0) FROM schema_version`)
	if err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return int(v), nil
}

// Version returns the catalog version: a counter every committed write of
// any process sharing the database increments.
func (s *sqlStore) Version(ctx context.Context) (int64, error) {
	v, err := getOne(ctx, s, scanInt64, `SELECT version FROM catalog_version`)
	if err != nil {
		return 0, fmt.Errorf("read catalog version: %w", err)
	}
	return v, nil
}

// locked runs fn holding the write mutex, or returns ErrClosed.
func (s *sqlStore) locked(fn func() error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	return fn()
}

// tx runs fn in one write transaction and commits it.
func (s *sqlStore) tx(ctx context.Context, fn func(tx stmts) error) error {
	return s.locked(func() error { return s.txLocked(ctx, fn) })
}

// txLocked is tx for a caller holding the write mutex. The transaction
// also carries the rule start markers queued by then (see WriteRuleStarts).
func (s *sqlStore) txLocked(ctx context.Context, fn func(tx stmts) error) error {
	err := func() error {
		tx, err := s.writer.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("begin: %w", err)
		}
		st := stmts{q: tx, dollar: s.d.postgres}
		if s.prepared != nil {
			st.tx, st.prep = tx, s.preparedStmt
			defer s.preparePending(context.WithoutCancel(ctx))
		}
		if s.d.lockWrites != "" {
			if _, err := tx.ExecContext(ctx, s.d.lockWrites); err != nil {
				tx.Rollback() //nolint:errcheck // reporting the lock error
				return fmt.Errorf("lock catalog: %w", err)
			}
		}
		if err := fn(st); err != nil {
			tx.Rollback() //nolint:errcheck // the database may have rolled back already
			return err
		}
		carried := s.carryStarts(ctx, st)
		if err := tx.Commit(); err != nil {
			err = fmt.Errorf("commit: %w", err)
			carried.answer(err)
			return err
		}
		s.commits.Add(1)
		carried.answer(nil)
		return nil
	}()
	if err != nil && s.d.classify != nil {
		return s.d.classify(err)
	}
	return err
}

// write is tx for a change of catalog content: it also bumps the catalog
// version and, where the dialect does, publishes ch with that version.
func (s *sqlStore) write(ctx context.Context, ch Change, fn func(tx stmts) error) error {
	return s.tx(ctx, func(tx stmts) error {
		if err := fn(tx); err != nil {
			return err
		}
		rows, err := queryAll(ctx, tx, scanInt64,
			`UPDATE catalog_version SET version = version + 1 RETURNING version`)
		if err != nil {
			return fmt.Errorf("bump catalog version: %w", err)
		}
		if len(rows) != 1 {
			return fmt.Errorf("bump catalog version: %d version rows, want 1", len(rows))
		}
		ch.Version = rows[0]
		if s.d.notify != nil {
			return s.d.notify(ctx, tx, ch)
		}
		return nil
	})
}

// readDB returns the reader pool, or ErrClosed.
func (s *sqlStore) readDB() (stmts, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return stmts{}, ErrClosed
	}
	return stmts{q: s.reader, dollar: s.d.postgres}, nil
}

func (s *sqlStore) nowMilli() int64 { return s.clock.Now().UnixMilli() }

// put implements the PutMode rules: in one transaction it looks the row up
// with existsSQL, refuses per mode, then calls write with the creation time
// (kept from the existing row) and the update time, both in ms.
func (s *sqlStore) put(ctx context.Context, mode PutMode, ch Change, existsSQL string, key []any, write func(tx stmts, created, updated int64) error) (created, updated int64, err error) {
	updated = s.nowMilli()
	err = s.write(ctx, ch, func(tx stmts) error {
		found, err := queryAll(ctx, tx, scanInt64, existsSQL, key...)
		if err != nil {
			return err
		}
		exists := len(found) > 0
		switch {
		case exists && mode == Create:
			return ErrConflict
		case !exists && mode == Replace:
			return ErrNotFound
		}
		created = updated
		if exists {
			created = found[0]
		}
		return write(tx, created, updated)
	})
	return created, updated, err
}

// del deletes with stmt and reports ErrNotFound when no row matched.
func (s *sqlStore) del(ctx context.Context, ch Change, stmt string, key ...any) error {
	return s.write(ctx, ch, func(tx stmts) error {
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

// queryer is what reads need.
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
func getOne[T any](ctx context.Context, s *sqlStore, scan func(rowScanner) (T, error), query string, args ...any) (T, error) {
	var zero T
	all, err := list(ctx, s, scan, query, args...)
	if err != nil {
		return zero, err
	}
	if len(all) == 0 {
		return zero, ErrNotFound
	}
	return all[0], nil
}

// list runs a query on the reader pool.
func list[T any](ctx context.Context, s *sqlStore, scan func(rowScanner) (T, error), query string, args ...any) ([]T, error) {
	db, err := s.readDB()
	if err != nil {
		return nil, err
	}
	out, err := queryAll(ctx, db, scan, query, args...)
	if err != nil && s.d.classify != nil {
		return nil, s.d.classify(err)
	}
	return out, err
}

type rowScanner interface{ Scan(dest ...any) error }

func scanInt64(r rowScanner) (v int64, err error) { return v, r.Scan(&v) }

func scanString(r rowScanner) (v string, err error) { return v, r.Scan(&v) }

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
