package catalog

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// RuleStartMarker is implemented by stores that keep rule start markers:
// a marker is written before a rule starts and cleared once it runs, so a
// marker found at boot names a rule that was starting when the process
// died (the rule manager then leaves it stopped instead of crash-looping).
// Markers belong to the node that wrote them (its id; "" for a daemon
// alone): in a shared catalog a node reads and clears only its own, and
// the markers written before markers had a node ("" rows) count as every
// node's.
type RuleStartMarker interface {
	QueueRuleStarts(node string, changes []RuleStart) *QueuedStarts
	RuleStartMarks(ctx context.Context, node string) (map[string]time.Time, error)
}

// RuleStart is one change of a rule's start marker: the marker of rule ID
// is written with time At, or removed when Clear is set.
type RuleStart struct {
	ID    string
	At    time.Time
	Clear bool
}

var _ RuleStartMarker = (*SQLiteStore)(nil)

// QueuedStarts are start marker changes waiting for a write transaction.
// Call Wait or Drop, once.
type QueuedStarts struct {
	wait func(ctx context.Context) error
	drop func() bool
}

// Wait returns once the changes are committed, running a transaction for
// them when no other write carried them. A nil QueuedStarts (a store
// without markers) returns nil.
func (q *QueuedStarts) Wait(ctx context.Context) error {
	if q == nil {
		return nil
	}
	return q.wait(ctx)
}

// Drop withdraws the changes if no transaction took them yet, reporting
// whether it did; when it did not, Wait gives their outcome.
func (q *QueuedStarts) Drop() bool {
	return q == nil || q.drop()
}

// QueueRuleStarts queues changes to node's start markers, applied in order
// in one transaction. A clear removes the rule's marker of node and its
// marker from before markers had a node (""), if any; clearing an absent
// marker is not an error.
//
// Marker writes are group-committed: the first write transaction to take
// the write lock carries every marker change queued by then, whatever its
// own content. Rules starting together (a boot, concurrent creates, a
// shutdown) thus share durable writes instead of costing one each, and a
// marker queued before a catalog write (a rule's creation) rides on it.
func (s *sqlStore) QueueRuleStarts(node string, changes []RuleStart) *QueuedStarts {
	if len(changes) == 0 {
		return nil
	}
	req := &startsReq{node: node, changes: changes, done: make(chan error, 1)}
	s.startsMu.Lock()
	s.starts = append(s.starts, req)
	s.startsMu.Unlock()
	return &QueuedStarts{
		wait: func(ctx context.Context) error { return s.settleStarts(ctx, req) },
		drop: func() bool { return s.unqueue(req) },
	}
}

// WriteRuleStarts queues changes (see QueueRuleStarts) and waits until
// they are committed.
func (s *sqlStore) WriteRuleStarts(ctx context.Context, node string, changes []RuleStart) error {
	return s.QueueRuleStarts(node, changes).Wait(ctx)
}

func (s *sqlStore) settleStarts(ctx context.Context, req *startsReq) error {
	err := s.locked(func() error {
		if s.queued(req) {
			return s.txLocked(ctx, func(stmts) error { return nil }) // carries req
		}
		return nil
	})
	if s.unqueue(req) {
		// Never written (the store is closed, or this transaction failed
		// before carrying it).
		return fmt.Errorf("write %d rule start markers: %w", len(req.changes), err)
	}
	if err := <-req.done; err != nil {
		return fmt.Errorf("write %d rule start markers: %w", len(req.changes), err)
	}
	return nil
}

// startsReq is one QueueRuleStarts call waiting for a transaction.
type startsReq struct {
	node    string
	changes []RuleStart
	done    chan error // buffered: the outcome, once the carrier committed or failed
	// Under startsMu: taken by a transaction, or dropped by its caller.
	taken, dropped bool
}

type startsBatch []*startsReq

// carryStarts applies the queued marker writes in tx, in a savepoint: when
// applying them fails they are answered with the error and rolled back,
// and tx goes on. The caller answers the rest once tx commits or fails.
func (s *sqlStore) carryStarts(ctx context.Context, tx stmts) startsBatch {
	s.startsMu.Lock()
	var batch startsBatch
	for _, r := range s.starts {
		if !r.dropped {
			r.taken = true
			batch = append(batch, r)
		}
	}
	s.starts = nil
	s.startsMu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	if err := applyStarts(ctx, tx, batch); err != nil {
		batch.answer(err)
		return nil
	}
	return batch
}

func applyStarts(ctx context.Context, tx stmts, batch startsBatch) error {
	if _, err := tx.ExecContext(ctx, `SAVEPOINT rule_starts`); err != nil {
		return fmt.Errorf("savepoint: %w", err)
	}
	mark := upsertSQL("rule_starts", 2, "node", "id", "started_at")
	for _, r := range batch {
		for _, c := range r.changes {
			var err error
			if c.Clear {
				_, err = tx.ExecContext(ctx, `DELETE FROM rule_starts WHERE id = ? AND node IN (?, '')`, c.ID, r.node)
			} else {
				_, err = tx.ExecContext(ctx, mark, r.node, c.ID, c.At.UnixMilli())
			}
			if err != nil {
				if _, rerr := tx.ExecContext(ctx, `ROLLBACK TO SAVEPOINT rule_starts`); rerr != nil {
					return errors.Join(fmt.Errorf("rule %s: %w", c.ID, err), fmt.Errorf("roll back: %w", rerr))
				}
				return fmt.Errorf("rule %s: %w", c.ID, err)
			}
		}
	}
	if _, err := tx.ExecContext(ctx, `RELEASE SAVEPOINT rule_starts`); err != nil {
		return fmt.Errorf("release savepoint: %w", err)
	}
	return nil
}

func (b startsBatch) answer(err error) {
	for _, r := range b {
		r.done <- err
	}
}

// queued reports whether req still waits for a transaction.
func (s *sqlStore) queued(req *startsReq) bool {
	s.startsMu.Lock()
	defer s.startsMu.Unlock()
	return !req.taken
}

// unqueue drops req if no transaction took it, reporting whether it did.
func (s *sqlStore) unqueue(req *startsReq) bool {
	s.startsMu.Lock()
	defer s.startsMu.Unlock()
	if req.taken {
		return false
	}
	req.dropped = true
	return true
}

// RuleStartMarks returns node's start markers by rule id.
func (s *sqlStore) RuleStartMarks(ctx context.Context, node string) (map[string]time.Time, error) {
	type mark struct {
		id string
		at int64
	}
	rows, err := list(ctx, s, func(r rowScanner) (mark, error) {
		var m mark
		err := r.Scan(&m.id, &m.at)
		return m, err
	}, `SELECT id, started_at FROM rule_starts WHERE node IN (?, '') ORDER BY node`, node)
	if err != nil {
		return nil, fmt.Errorf("read rule start markers: %w", err)
	}
	out := make(map[string]time.Time, len(rows))
	for _, m := range rows {
		out[m.id] = fromMilli(m.at)
	}
	return out, nil
}

// QueueRuleStarts queues changes to node's start markers for the next
// write transaction (see RuleStartMarker). A store without markers gives
// nil, whose Wait returns nil.
func (c *Catalog) QueueRuleStarts(node string, changes []RuleStart) *QueuedStarts {
	if m, ok := c.store.(RuleStartMarker); ok {
		return m.QueueRuleStarts(node, changes)
	}
	return nil
}

// WriteRuleStarts applies changes to node's start markers in one
// transaction and returns once they are committed.
func (c *Catalog) WriteRuleStarts(ctx context.Context, node string, changes []RuleStart) error {
	return c.QueueRuleStarts(node, changes).Wait(ctx)
}

// MarkRuleStarting records, before rule id starts on node, that it is
// starting.
func (c *Catalog) MarkRuleStarting(ctx context.Context, node, id string, at time.Time) error {
	return c.WriteRuleStarts(ctx, node, []RuleStart{{ID: id, At: at}})
}

// ClearRuleStarting removes node's start marker of rule id.
func (c *Catalog) ClearRuleStarting(ctx context.Context, node, id string) error {
	return c.WriteRuleStarts(ctx, node, []RuleStart{{ID: id, Clear: true}})
}

// RuleStartMarks returns node's start markers left in the store (read at
// boot, before any rule starts).
func (c *Catalog) RuleStartMarks(ctx context.Context, node string) (map[string]time.Time, error) {
	if m, ok := c.store.(RuleStartMarker); ok {
		return m.RuleStartMarks(ctx, node)
	}
	return nil, nil
}
