package catalog

import (
	"context"
	"database/sql"
	"fmt"
)

// migration moves the schema from version-1 to version. Both databases
// have the same history: the same versions, tables and columns, each in
// its own dialect.
type migration struct {
	version int
	name    string
	// stmts are SQLite's; pg PostgreSQL's.
	stmts []string
	pg    []string
}

// migrations returns the schema history in order. Append only: a released
// migration is never edited.
func migrations() []migration {
	ms := sqliteMigrations()
	pg := postgresMigrations()
	for i := range ms {
		ms[i].pg = pg[i]
	}
	return ms
}

func sqliteMigrations() []migration {
	return []migration{{
		version: 1,
		name:    "initial catalog",
		stmts: []string{
			`CREATE TABLE streams (
				name       TEXT PRIMARY KEY,
				kind       TEXT NOT NULL CHECK (kind IN ('stream', 'table')),
				sql        TEXT NOT NULL,
				created_at INTEGER NOT NULL,
				updated_at INTEGER NOT NULL
			) STRICT`,
			`CREATE TABLE rules (
				id         TEXT PRIMARY KEY,
				definition TEXT NOT NULL CHECK (json_valid(definition)),
				state      TEXT NOT NULL CHECK (state IN ('running', 'stopped')),
				version    TEXT NOT NULL DEFAULT '',
				tags       TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(tags)),
				created_at INTEGER NOT NULL,
				updated_at INTEGER NOT NULL
			) STRICT`,
			`CREATE TABLE connections (
				id         TEXT PRIMARY KEY,
				type       TEXT NOT NULL,
				props      TEXT NOT NULL CHECK (json_valid(props)),
				created_at INTEGER NOT NULL,
				updated_at INTEGER NOT NULL
			) STRICT`,
			`CREATE TABLE conf_keys (
				category   TEXT NOT NULL CHECK (category IN ('source', 'sink', 'connection')),
				type       TEXT NOT NULL,
				key        TEXT NOT NULL,
				props      TEXT NOT NULL CHECK (json_valid(props)),
				created_at INTEGER NOT NULL,
				updated_at INTEGER NOT NULL,
				PRIMARY KEY (category, type, key)
			) STRICT`,
			`CREATE TABLE schemas (
				type       TEXT NOT NULL,
				name       TEXT NOT NULL,
				content    TEXT NOT NULL,
				file       TEXT NOT NULL,
				so_file    TEXT NOT NULL,
				version    TEXT NOT NULL,
				created_at INTEGER NOT NULL,
				updated_at INTEGER NOT NULL,
				PRIMARY KEY (type, name)
			) STRICT`,
			`CREATE TABLE uploads (
				name       TEXT PRIMARY KEY,
				path       TEXT NOT NULL,
				size       INTEGER NOT NULL,
				sha256     TEXT NOT NULL,
				created_at INTEGER NOT NULL,
				updated_at INTEGER NOT NULL
			) STRICT`,
		},
	}, {
		version: 2,
		name:    "rule start markers",
		stmts: []string{
			// A row is written before a rule starts and deleted once it
			// has run for a moment or stopped; one left at boot means the
			// process died while that rule was starting.
			`CREATE TABLE rule_starts (
				id         TEXT PRIMARY KEY,
				started_at INTEGER NOT NULL
			) STRICT`,
		},
	}, {
		version: 3,
		name:    "javascript functions",
		stmts: []string{
			`CREATE TABLE js_functions (
				id          TEXT PRIMARY KEY,
				description TEXT NOT NULL,
				script      TEXT NOT NULL,
				is_agg      INTEGER NOT NULL,
				created_at  INTEGER NOT NULL,
				updated_at  INTEGER NOT NULL
			) STRICT`,
		},
	}, {
		version: 4,
		name:    "catalog version",
		stmts: []string{
			// One row, incremented by every write of catalog content: a
			// node sharing the database reloads when it moved.
			`CREATE TABLE catalog_version (
				id      INTEGER PRIMARY KEY CHECK (id = 1),
				version INTEGER NOT NULL
			) STRICT`,
			`INSERT INTO catalog_version (id, version) VALUES (1, 0)`,
		},
	}, {
		version: 5,
		name:    "cluster nodes",
		stmts: []string{
			// A heartbeat row per daemon sharing the catalog.
			`CREATE TABLE nodes (
				id         TEXT PRIMARY KEY,
				address    TEXT NOT NULL,
				version    TEXT NOT NULL,
				started_at INTEGER NOT NULL,
				last_seen  INTEGER NOT NULL
			) STRICT`,
		},
	}, {
		version: 6,
		name:    "rule start markers per node",
		stmts: []string{
			// Markers of a shared catalog belong to the node that wrote
			// them; rows of before are kept with node ''.
			`CREATE TABLE rule_starts_by_node (
				node       TEXT NOT NULL DEFAULT '',
				id         TEXT NOT NULL,
				started_at INTEGER NOT NULL,
				PRIMARY KEY (node, id)
			) STRICT`,
			`INSERT INTO rule_starts_by_node (node, id, started_at) SELECT '', id, started_at FROM rule_starts`,
			`DROP TABLE rule_starts`,
			`ALTER TABLE rule_starts_by_node RENAME TO rule_starts`,
		},
	}, {
		version: 7,
		name:    "rule leases",
		stmts: []string{
			// Which node runs which rule (cluster placement). Only a
			// shared catalog uses it; the table keeps both histories equal.
			`CREATE TABLE rule_leases (
				rule_id    TEXT PRIMARY KEY,
				node_id    TEXT NOT NULL,
				token      INTEGER NOT NULL,
				expires_at INTEGER NOT NULL,
				state      TEXT NOT NULL DEFAULT '',
				message    TEXT NOT NULL DEFAULT '',
				last_start INTEGER NOT NULL DEFAULT 0,
				last_stop  INTEGER NOT NULL DEFAULT 0
			) STRICT`,
			`CREATE INDEX rule_leases_by_node ON rule_leases (node_id)`,
		},
	}, {
		version: 8,
		name:    "shared checkpoints",
		stmts: []string{
			// Checkpoints of rules placed on a cluster (see
			// checkpoints.go). Only a shared catalog uses them; the
			// tables keep both histories equal.
			`CREATE TABLE rule_checkpoints (
				rule_id  TEXT NOT NULL,
				task     TEXT NOT NULL DEFAULT '',
				id       INTEGER NOT NULL,
				node_id  TEXT NOT NULL,
				token    INTEGER NOT NULL,
				saved_at INTEGER NOT NULL,
				data     BLOB NOT NULL,
				PRIMARY KEY (rule_id, task, id)
			) STRICT`,
			`CREATE TABLE rule_checkpoint_commits (
				rule_id TEXT NOT NULL,
				task    TEXT NOT NULL DEFAULT '',
				id      INTEGER NOT NULL,
				PRIMARY KEY (rule_id, task)
			) STRICT`,
		},
	}}
}

// latestVersion is the schema version this code writes.
func latestVersion() int {
	ms := migrations()
	return ms[len(ms)-1].version
}

// migrate brings db to the latest schema in one transaction, so a crash
// leaves either the old or the new schema. A database written by a newer
// version is refused.
func migrate(ctx context.Context, db *sql.DB, d dialect, nowMilli int64) error {
	sqlTx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrate: begin: %w", err)
	}
	defer sqlTx.Rollback() //nolint:errcheck // no-op after commit
	tx := stmts{q: sqlTx, dollar: d.postgres}
	if d.lockWrites != "" {
		// Nodes starting together migrate one after the other.
		if _, err := tx.ExecContext(ctx, d.lockWrites); err != nil {
			return fmt.Errorf("migrate: lock: %w", err)
		}
	}
	versionDDL := `CREATE TABLE IF NOT EXISTS schema_version (
		version    INTEGER PRIMARY KEY,
		name       TEXT NOT NULL,
		applied_at INTEGER NOT NULL
	) STRICT`
	if d.postgres {
		versionDDL = `CREATE TABLE IF NOT EXISTS schema_version (
			version    INTEGER PRIMARY KEY,
			name       TEXT NOT NULL,
			applied_at BIGINT NOT NULL
		)`
	}
	if _, err := tx.ExecContext(ctx, versionDDL); err != nil {
		return fmt.Errorf("migrate: create schema_version: %w", err)
	}
	var current int
	if err := sqlTx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&current); err != nil {
		return fmt.Errorf("migrate: read version: %w", err)
	}
	if current > latestVersion() {
		return fmt.Errorf("migrate: database schema version %d is newer than this program's %d", current, latestVersion())
	}
	for _, m := range migrations() {
		if m.version <= current {
			continue
		}
		stmts := m.stmts
		if d.postgres {
			stmts = m.pg
		}
		for _, stmt := range stmts {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("migrate to %d (%s): %w", m.version, m.name, err)
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version (version, name, applied_at) VALUES (?, ?, ?)`,
			m.version, m.name, nowMilli); err != nil {
			return fmt.Errorf("migrate to %d: record version: %w", m.version, err)
		}
	}
	if err := sqlTx.Commit(); err != nil {
		return fmt.Errorf("migrate: commit: %w", err)
	}
	return nil
}
