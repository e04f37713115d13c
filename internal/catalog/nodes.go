package catalog

import (
	"context"
	"fmt"
	"time"
)

// NodeBeat is one daemon's heartbeat row in a shared catalog.
type NodeBeat struct {
	ID      string
	Address string // host:port of its REST API
	Version string
	Started time.Time
	// LastSeen is the database's time of the last beat; Age is how long
	// ago that was, by the database's clock (so nodes' clocks may differ).
	LastSeen time.Time
	Age      time.Duration
}

// Heartbeat records that node n is alive, stamped with the database's
// clock. It is not a catalog write: it takes no write lock and announces
// nothing.
func (s *PostgresStore) Heartbeat(ctx context.Context, n NodeBeat) error {
	db, err := s.readDB() // the pool; PostgreSQL has one for reads and writes
	if err != nil {
		return fmt.Errorf("heartbeat: %w", err)
	}
	_, err = db.ExecContext(ctx, `INSERT INTO nodes (id, address, version, started_at, last_seen)
		VALUES (?, ?, ?, ?, (extract(epoch from clock_timestamp()) * 1000)::bigint)
		ON CONFLICT (id) DO UPDATE SET address = excluded.address, version = excluded.version,
			started_at = excluded.started_at, last_seen = excluded.last_seen`,
		n.ID, n.Address, n.Version, n.Started.UnixMilli())
	if err != nil {
		return fmt.Errorf("heartbeat: %w", classifyPostgres(err))
	}
	return nil
}

// Nodes lists the heartbeat rows by id.
func (s *PostgresStore) Nodes(ctx context.Context) ([]NodeBeat, error) {
	out, err := list(ctx, s.sqlStore, func(r rowScanner) (NodeBeat, error) {
		var n NodeBeat
		var started, seen, age int64
		if err := r.Scan(&n.ID, &n.Address, &n.Version, &started, &seen, &age); err != nil {
			return NodeBeat{}, err
		}
		n.Started, n.LastSeen, n.Age = fromMilli(started), fromMilli(seen), time.Duration(age)*time.Millisecond
		return n, nil
	}, `SELECT id, address, version, started_at, last_seen,
		(extract(epoch from clock_timestamp()) * 1000)::bigint - last_seen FROM nodes ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	return out, nil
}
