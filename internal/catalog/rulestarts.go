package catalog

import (
	"context"
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
	MarkRuleStarting(ctx context.Context, node, id string, at time.Time) error
	ClearRuleStarting(ctx context.Context, node, id string) error
	RuleStartMarks(ctx context.Context, node string) (map[string]time.Time, error)
}

var _ RuleStartMarker = (*SQLiteStore)(nil)

// MarkRuleStarting records that rule id is starting on node.
func (s *sqlStore) MarkRuleStarting(ctx context.Context, node, id string, at time.Time) error {
	err := s.tx(ctx, func(tx stmts) error {
		_, err := tx.ExecContext(ctx, upsertSQL("rule_starts", 2, "node", "id", "started_at"), node, id, at.UnixMilli())
		return err
	})
	if err != nil {
		return fmt.Errorf("mark rule %s starting: %w", id, err)
	}
	return nil
}

// ClearRuleStarting removes node's start marker of rule id, if any.
func (s *sqlStore) ClearRuleStarting(ctx context.Context, node, id string) error {
	err := s.tx(ctx, func(tx stmts) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM rule_starts WHERE id = ? AND node IN (?, '')`, id, node)
		return err
	})
	if err != nil {
		return fmt.Errorf("clear start marker of rule %s: %w", id, err)
	}
	return nil
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

// MarkRuleStarting records, before rule id starts on node, that it is
// starting. A store without markers makes it a no-op.
func (c *Catalog) MarkRuleStarting(ctx context.Context, node, id string, at time.Time) error {
	if m, ok := c.store.(RuleStartMarker); ok {
		return m.MarkRuleStarting(ctx, node, id, at)
	}
	return nil
}

// ClearRuleStarting removes node's start marker of rule id.
func (c *Catalog) ClearRuleStarting(ctx context.Context, node, id string) error {
	if m, ok := c.store.(RuleStartMarker); ok {
		return m.ClearRuleStarting(ctx, node, id)
	}
	return nil
}

// RuleStartMarks returns node's start markers left in the store (read at
// boot, before any rule starts).
func (c *Catalog) RuleStartMarks(ctx context.Context, node string) (map[string]time.Time, error) {
	if m, ok := c.store.(RuleStartMarker); ok {
		return m.RuleStartMarks(ctx, node)
	}
	return nil, nil
}
