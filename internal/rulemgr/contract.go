// Package rulemgr owns the lifecycle of the daemon's rules: each rule's
// commands (start, stop, restart, update, delete) are applied one at a
// time, by a goroutine that exists only while some are pending. It
// persists the wanted state in the catalog before acting on it, restarts
// failed rules with backoff and runs cron-scheduled rules. A rule's actor
// (actor.go) starts it by asking the Runner of contract.go, which the
// engine implements (internal/engine, start.go), and stops it through the
// Running it got back.
package rulemgr

import (
	"context"
	"errors"

	"github.com/rekuiper/rekuiper/internal/rule"
)

// Runner starts rules. The engine glue implements it.
type Runner interface {
	// Validate plans the rule against the current stream definitions and
	// checks its actions, without running it.
	Validate(ctx context.Context, def *rule.Def) error
	// Start runs the rule; ctx covers only the start phase.
	Start(ctx context.Context, def *rule.Def) (Running, error)
}

// Forgetter is implemented by runners that release what a rule holds
// outside the daemon (a persistent MQTT session on the broker) when it is
// deleted. The manager calls Forget once the rule has stopped and left the
// catalog; a failure is logged and does not undo the delete.
type Forgetter interface {
	Forget(ctx context.Context, def *rule.Def) error
}

// Running is a started rule.
type Running interface {
	// Stop drains (soft stop) within ctx, then aborts.
	Stop(ctx context.Context) error
	// Done is closed when the rule stops by itself (error or end of a
	// bounded source); Err tells why (nil for EOF).
	Done() <-chan struct{}
	Err() error
	// Metrics returns the per-node metrics in eKuiper's key format:
	// source_<name>_0_records_in_total, op_<n>_<name>_0_...,
	// sink_<type>_<i>_0_...
	Metrics() map[string]any
	// Topo returns {"sources":[...],"edges":{...}} as eKuiper does.
	Topo() map[string]any
}

// ScanTabler is implemented by running rules that can show the rows their
// joins hold for scan tables (GET /rules/{id}/scantables).
type ScanTabler interface {
	// ScanTables returns at most limit rows, table by table in the order
	// the rule joins them, as the join holds them now; ErrNoScanTable when
	// the rule joins no scan table. It may be called from any goroutine.
	ScanTables(limit int) ([]TableRow, error)
}

// TableRow is one row of a scan table as a running rule holds it.
type TableRow struct {
	Table string
	Row   map[string]any
}

// DoneNotifier may be implemented by a Running so that the manager needs no
// goroutine per rule waiting on Done: NotifyDone registers f, which is
// called once when Done is closed (at once if it already is), from any
// goroutine. f does not block.
type DoneNotifier interface {
	NotifyDone(f func())
}

// Errors of the manager beyond the catalog's sentinels (catalog.ErrNotFound
// for unknown rules, catalog.ErrConflict for existing ones), which the
// manager's errors wrap where they apply.
var (
	// ErrVersion: an update carried a version not greater than the stored
	// one. It wraps catalog.ErrConflict.
	ErrVersion = errors.New("version is not newer than the stored version")
	// ErrNotRunning: the operation needs a running rule.
	ErrNotRunning = errors.New("rule is not running")
	// ErrNoScanTable: the rule joins no scan table.
	ErrNoScanTable = errors.New("rule joins no scan table")
	// ErrClosed: the manager has been closed.
	ErrClosed = errors.New("rule manager closed")
)
