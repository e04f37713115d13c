package sqldb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/connector/connection"
	"github.com/rekuiper/rekuiper/internal/panics"
	"github.com/rekuiper/rekuiper/internal/value"
)

// Row kinds of the rowkindField.
const (
	KindInsert = "insert"
	KindUpdate = "update"
	KindUpsert = "upsert"
	KindDelete = "delete"
)

// SinkSpec is the sql sink's property spec.
func SinkSpec() connector.Spec {
	return connector.Spec{Props: append(urlProps(),
		connector.Prop{Name: "table", Type: connector.TypeString, Required: true, Target: true},
		connector.Prop{Name: "fields", Type: connector.TypeList, Doc: "columns to write; default every field of the row"},
		connector.Prop{Name: "rowkindField", Type: connector.TypeString, Doc: "field holding insert, update, upsert or delete (default insert)"},
		connector.Prop{Name: "keyField", Type: connector.TypeString, Doc: "key column for update, upsert and delete"},
		connector.Prop{Name: "batchSize", Type: connector.TypeInt, Default: 1, Max: connector.MaxBatchSize, Doc: "rows buffered before they are written (qos < 2)"},
		connector.Prop{Name: "lingerInterval", Type: connector.TypeDuration, Default: "1s", Max: "1h", Doc: "longest time a buffered row waits (batchSize > 1)"},
		connector.Prop{Name: "transactionalID", Type: connector.TypeString, Doc: "write in transactions committed with checkpoints (qos 2); the engine sets a rule-derived id"},
	), WritesRows: true, Ping: true}
}

// Sink writes the rows of each message. Without transactionalID each
// flush runs in its own transaction: with batchSize 1 every Write is
// written before it returns; with batchSize n > 1 rows are buffered until n
// rows are there (the Write that fills the batch reports its failure) or
// lingerInterval passed (a failure of that background flush is logged and
// its rows are dropped). Consecutive inserts with the same columns become
// one multi-row INSERT.
//
// With transactionalID the sink is Transactional (see the package
// documentation) and batchSize does not apply: rows go into the
// checkpoint's transaction at once.
//
// Transient failures wrap api.ErrRetryable (see classify). Without
// transactionalID the sink shares its database pool (see database).
// Methods may be called from different goroutines; a mutex serialises them.
type Sink struct {
	d         dialect
	table     string
	fields    []string
	kindField string
	keyField  string
	batchSize int
	linger    time.Duration
	txnID     string
	deps      connector.Deps
	logger    *slog.Logger

	mu      sync.Mutex
	h       database
	db      *sql.DB
	buf     []map[string]any
	timer   interface{ Stop() bool }
	tx      *sql.Tx
	pending *uint64
	held    []map[string]any
	last    uint64 // last committed checkpoint
	// failed is a panic of the linger timer's flush; Write and PreCommit
	// return it from then on, and the rule stops with it.
	failed *panics.Error
}

var (
	_ api.Sink                = (*Sink)(nil)
	_ connector.Transactional = (*Sink)(nil)
)

// NewSink builds a sql sink from validated props.
func NewSink(props map[string]any, deps connector.Deps) (api.Sink, error) {
	d, err := parseURL(props)
	if err != nil {
		return nil, err
	}
	s := &Sink{
		d:         d,
		kindField: connector.Get[string](props, "rowkindField"),
		keyField:  connector.Get[string](props, "keyField"),
		batchSize: int(connector.Get[int64](props, "batchSize")),
		linger:    connector.Get[time.Duration](props, "lingerInterval"),
		txnID:     connector.Get[string](props, "transactionalID"),
		deps:      deps,
		logger:    deps.Logger,
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	s.h = database{reg: deps.Connections, d: d, private: s.txnID != "", link: connection.NewLink(deps.Clock)}
	if s.table, err = quoteIdent(connector.Get[string](props, "table")); err != nil {
		return nil, fmt.Errorf("property \"table\": %w", err)
	}
	for _, f := range connector.Get[[]any](props, "fields") {
		name, ok := f.(string)
		if !ok || name == "" {
			return nil, fmt.Errorf("property \"fields\": %v is not a column name", f)
		}
		s.fields = append(s.fields, name)
	}
	if s.batchSize < 1 {
		return nil, fmt.Errorf("property \"batchSize\": %d is less than 1", s.batchSize)
	}
	if s.batchSize > 1 && s.txnID == "" && deps.Clock == nil {
		return nil, errors.New("batchSize > 1 needs a clock")
	}
	return s, nil
}

// Connect opens the database and, when transactional, creates the
// bookkeeping table and reads the last committed checkpoint.
func (s *Sink) Connect(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closeLocked(ctx)
	db, err := s.h.connect(ctx)
	if err != nil {
		return err
	}
	if s.txnID != "" {
		ddl := fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (rule_sink TEXT PRIMARY KEY, checkpoint_id BIGINT NOT NULL)", CheckpointTable)
		if _, err := db.ExecContext(ctx, ddl); err != nil {
			return s.h.fail(classify(fmt.Errorf("create %s: %w", CheckpointTable, err)))
		}
		if s.last, err = lastCommitted(ctx, db, s.d, s.txnID); err != nil {
			return s.h.fail(err)
		}
	}
	s.db = db
	return nil
}

// Status reports the connection status (stream.ConnStatus).
func (s *Sink) Status() (state string, lastConnected, lastDisconnected time.Time, lastErr string) {
	return s.h.link.Status()
}

func lastCommitted(ctx context.Context, db *sql.DB, d dialect, id string) (uint64, error) {
	var n int64
	err := db.QueryRowContext(ctx, fmt.Sprintf("SELECT checkpoint_id FROM %s WHERE rule_sink = %s", CheckpointTable, d.placeholder(1)), id).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, classify(fmt.Errorf("read %s: %w", CheckpointTable, err))
	}
	return uint64(n), nil
}

// LastCommitted returns the id of the last checkpoint whose rows were
// committed (0 when none).
func (s *Sink) LastCommitted(ctx context.Context) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db == nil {
		return 0, api.Retryable(errors.New("sql sink not connected"))
	}
	n, err := lastCommitted(ctx, s.db, s.d, s.txnID)
	if err == nil {
		s.last = n
	}
	return n, err
}

// Write writes (or buffers) the rows of msg; see Sink.
func (s *Sink) Write(ctx context.Context, msg *api.SinkMessage) error {
	rows := msg.Rows
	if len(rows) == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed != nil {
		return s.failed
	}
	if s.db == nil {
		return api.Retryable(errors.New("sql sink not connected"))
	}
	if s.txnID != "" {
		if s.pending != nil {
			s.held = append(s.held, rows...)
			return nil
		}
		return s.execInTxn(ctx, rows)
	}
	if s.batchSize == 1 {
		return s.writeTx(ctx, rows)
	}
	s.buf = append(s.buf, rows...)
	if len(s.buf) >= s.batchSize {
		return s.flushLocked(ctx)
	}
	if s.timer == nil {
		s.timer = s.deps.Clock.AfterFunc(s.linger, s.lingerFlush)
	}
	return nil
}

func (s *Sink) lingerFlush() {
	// The timer's goroutine is the sink's own: a panic in the driver is
	// kept for the rule's next call instead of ending the process.
	defer panics.Catch("sql sink linger flush", func(e *panics.Error) {
		s.logger.Error("sql sink flush panicked", slog.String("error", e.Error()), slog.String("stack", string(e.Stack)))
		s.mu.Lock()
		s.failed = e
		s.mu.Unlock()
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	s.timer = nil
	if s.db == nil || len(s.buf) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.flushLocked(ctx); err != nil {
		s.logger.Error("sql sink flush", slog.Any("error", err))
	}
}

// flushLocked writes the buffered rows; they are dropped either way (the
// failure is reported to the caller).
func (s *Sink) flushLocked(ctx context.Context) error {
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	rows := s.buf
	s.buf = nil
	if len(rows) == 0 {
		return nil
	}
	return s.writeTx(ctx, rows)
}

// writeTx writes rows in one transaction.
func (s *Sink) writeTx(ctx context.Context, rows []map[string]any) error {
	return s.h.report(s.writeRows(ctx, rows))
}

func (s *Sink) writeRows(ctx context.Context, rows []map[string]any) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return classify(fmt.Errorf("begin transaction: %w", err))
	}
	if err := s.exec(ctx, tx, rows); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return classify(fmt.Errorf("commit rows into %s: %w", s.table, err))
	}
	return nil
}

func (s *Sink) execInTxn(ctx context.Context, rows []map[string]any) error {
	return s.h.report(s.execRowsInTxn(ctx, rows))
}

func (s *Sink) execRowsInTxn(ctx context.Context, rows []map[string]any) error {
	if s.tx == nil {
		// The transaction outlives this Write's ctx: it ends in Commit/Abort.
		tx, err := s.db.BeginTx(context.WithoutCancel(ctx), nil)
		if err != nil {
			return classify(fmt.Errorf("begin transaction: %w", err))
		}
		s.tx = tx
	}
	if err := s.exec(ctx, s.tx, rows); err != nil {
		// A failed statement poisons a PostgreSQL transaction: the
		// checkpoint fails and the engine replays after Abort.
		return err
	}
	return nil
}

// stmt is one statement with its arguments.
type stmt struct {
	sql  string
	args []any
}

// exec executes rows in order, merging runs of plain inserts.
func (s *Sink) exec(ctx context.Context, tx *sql.Tx, rows []map[string]any) error {
	stmts, err := s.statements(rows)
	if err != nil {
		return err
	}
	for _, st := range stmts {
		if _, err := tx.ExecContext(ctx, st.sql, st.args...); err != nil {
			return classify(fmt.Errorf("write into %s: %w", s.table, err))
		}
	}
	return nil
}

func (s *Sink) statements(rows []map[string]any) ([]stmt, error) {
	var out []stmt
	var run [][]any
	var runCols []string
	endRun := func() {
		if len(run) > 0 {
			out = append(out, s.insert(runCols, run))
		}
		run, runCols = nil, nil
	}
	for _, r := range rows {
		kind := KindInsert
		if s.kindField != "" {
			if k, ok := r[s.kindField]; ok && k != nil {
				kind = strings.ToLower(value.ToString(k))
			}
		}
		cols := s.columns(r)
		if len(cols) == 0 {
			return nil, errors.New("row has no column to write")
		}
		if kind == KindInsert {
			if run != nil && !slices.Equal(cols, runCols) {
				endRun()
			}
			runCols = cols
			run = append(run, rowArgs(r, cols))
			continue
		}
		endRun()
		if s.keyField == "" {
			return nil, fmt.Errorf("row kind %s needs property keyField", kind)
		}
		key, ok := r[s.keyField]
		if !ok {
			return nil, fmt.Errorf("row kind %s: row has no key field %s", kind, s.keyField)
		}
		st, err := s.keyed(kind, cols, r, key)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	endRun()
	return out, nil
}

func (s *Sink) columns(r map[string]any) []string {
	if len(s.fields) > 0 {
		return s.fields
	}
	cols := make([]string, 0, len(r))
	for _, k := range slices.Sorted(maps.Keys(r)) {
		if k != s.kindField {
			cols = append(cols, k)
		}
	}
	return cols
}

func rowArgs(r map[string]any, cols []string) []any {
	args := make([]any, len(cols))
	for i, c := range cols {
		args[i] = dbValue(r[c])
	}
	return args
}

// dbValue converts a runtime value to a driver argument: objects and
// arrays become JSON text.
func dbValue(v any) any {
	switch x := v.(type) {
	case map[string]any, []any:
		b, err := json.Marshal(x)
		if err != nil {
			return value.ToString(x)
		}
		return string(b)
	}
	return v
}

func quoteCols(cols []string) string {
	q := make([]string, len(cols))
	for i, c := range cols {
		q[i] = `"` + strings.ReplaceAll(c, `"`, `""`) + `"`
	}
	return strings.Join(q, ", ")
}

func (s *Sink) insert(cols []string, rows [][]any) stmt {
	var b strings.Builder
	fmt.Fprintf(&b, "INSERT INTO %s (%s) VALUES ", s.table, quoteCols(cols))
	args := make([]any, 0, len(cols)*len(rows))
	n := 0
	for i, r := range rows {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for j, a := range r {
			if j > 0 {
				b.WriteString(", ")
			}
			n++
			b.WriteString(s.d.placeholder(n))
			args = append(args, a)
		}
		b.WriteByte(')')
	}
	return stmt{sql: b.String(), args: args}
}

func (s *Sink) keyed(kind string, cols []string, r map[string]any, key any) (stmt, error) {
	keyCol := quoteCols([]string{s.keyField})
	switch kind {
	case KindDelete:
		return stmt{sql: fmt.Sprintf("DELETE FROM %s WHERE %s = %s", s.table, keyCol, s.d.placeholder(1)), args: []any{dbValue(key)}}, nil
	case KindUpdate:
		var sets []string
		var args []any
		for _, c := range cols {
			if c == s.keyField {
				continue
			}
			args = append(args, dbValue(r[c]))
			sets = append(sets, fmt.Sprintf("%s = %s", quoteCols([]string{c}), s.d.placeholder(len(args))))
		}
		if len(sets) == 0 {
			return stmt{}, errors.New("update row has no column besides the key")
		}
		args = append(args, dbValue(key))
		return stmt{sql: fmt.Sprintf("UPDATE %s SET %s WHERE %s = %s", s.table, strings.Join(sets, ", "), keyCol, s.d.placeholder(len(args))), args: args}, nil
	case KindUpsert:
		if !slices.Contains(cols, s.keyField) {
			cols = append(slices.Clone(cols), s.keyField)
		}
		ins := s.insert(cols, [][]any{rowArgs(r, cols)})
		var sets []string
		for _, c := range cols {
			if c != s.keyField {
				q := quoteCols([]string{c})
				sets = append(sets, fmt.Sprintf("%s = excluded.%s", q, q))
			}
		}
		action := "DO NOTHING"
		if len(sets) > 0 {
			action = "DO UPDATE SET " + strings.Join(sets, ", ")
		}
		ins.sql += fmt.Sprintf(" ON CONFLICT (%s) %s", keyCol, action)
		return ins, nil
	}
	return stmt{}, fmt.Errorf("unknown row kind %q (want insert, update, upsert or delete)", kind)
}

// PreCommit adds the checkpoint id to the open transaction. For a
// checkpoint that is already committed (a replay) it rolls the
// transaction's rows back instead.
func (s *Sink) PreCommit(ctx context.Context, checkpointID uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed != nil {
		return s.failed
	}
	if s.txnID == "" {
		if s.db == nil {
			return nil
		}
		return s.flushLocked(ctx)
	}
	if s.db == nil {
		return api.Retryable(errors.New("sql sink not connected"))
	}
	if len(s.held) > 0 {
		held := s.held
		s.held = nil
		if err := s.execInTxn(ctx, held); err != nil {
			return err
		}
	}
	id := checkpointID
	if s.tx == nil {
		tx, err := s.db.BeginTx(context.WithoutCancel(ctx), nil)
		if err != nil {
			return s.h.report(classify(fmt.Errorf("begin transaction: %w", err)))
		}
		s.tx = tx
	}
	up := fmt.Sprintf("INSERT INTO %s (rule_sink, checkpoint_id) VALUES (%s, %s) ON CONFLICT (rule_sink) DO UPDATE SET checkpoint_id = excluded.checkpoint_id",
		CheckpointTable, s.d.placeholder(1), s.d.placeholder(2))
	if _, err := s.tx.ExecContext(ctx, up, s.txnID, int64(checkpointID)); err != nil {
		return s.h.report(classify(fmt.Errorf("record checkpoint %d: %w", checkpointID, err)))
	}
	s.pending = &id
	return nil
}

// Commit commits the transaction prepared by PreCommit(checkpointID) and
// writes the rows held since then into a new one. A Commit of an older
// checkpoint than the prepared one does nothing.
func (s *Sink) Commit(ctx context.Context, checkpointID uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.txnID == "" || s.pending == nil || checkpointID < *s.pending {
		return nil
	}
	if checkpointID > *s.pending {
		return fmt.Errorf("commit checkpoint %d: prepared checkpoint is %d", checkpointID, *s.pending)
	}
	if s.tx != nil {
		if err := s.tx.Commit(); err != nil {
			s.tx = nil
			return s.h.report(classify(fmt.Errorf("commit checkpoint %d: %w", checkpointID, err)))
		}
		s.tx = nil
		s.last = checkpointID
	}
	s.pending = nil
	held := s.held
	s.held = nil
	if len(held) > 0 {
		return s.execInTxn(ctx, held)
	}
	return nil
}

func (s *Sink) rollbackLocked() {
	if s.tx != nil {
		_ = s.tx.Rollback()
		s.tx = nil
	}
}

// Abort rolls back the open transaction and drops held rows.
func (s *Sink) Abort(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rollbackLocked()
	s.pending, s.held = nil, nil
	return nil
}

func (s *Sink) closeLocked(ctx context.Context) error {
	var err error
	if s.db != nil && s.txnID == "" {
		err = s.flushLocked(ctx)
	}
	s.rollbackLocked()
	s.pending, s.held = nil, nil
	s.db = nil
	if cerr := s.h.release(); err == nil {
		err = cerr
	}
	return err
}

// Close writes buffered rows (qos < 2), rolls back an open transaction
// (qos 2: uncommitted rows are replayed from the checkpoint) and closes the
// database.
func (s *Sink) Close(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closeLocked(ctx)
}
