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
	WriteRuleStarts(ctx context.Context, node string, changes []RuleStart) error
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

// WriteRuleStarts applies changes to node's start markers in order, in one
// transaction: rules starting together cost one durable write, not one
// each. A clear removes the rule's marker of node and its marker from
// before markers had a node (""), if any; clearing an absent marker is not
// an error.
func (s *sqlStore) WriteRuleStarts(ctx context.Context, node string, changes []RuleStart) error {
	if len(changes) == 0 {
		return nil
	}
	mark := upsertSQL("rule_starts", 2, "node", "id", "started_at")
	err := s.tx(ctx, func(tx stmts) error {
		for _, c := range changes {
			var err error
			if c.Clear {
				_, err = tx.ExecContext(ctx, `DELETE FROM rule_starts WHERE id = ? AND node IN (?, '')`, c.ID, node)
			} else {
				_, err = tx.ExecContext(ctx, mark, node, c.ID, c.At.UnixMilli())
			}
			if err != nil {
				return fmt.Errorf("rule %s: %w", c.ID, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("write %d rule start markers: %w", len(changes), err)
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

// WriteRuleStarts applies changes to node's start markers in one
// transaction (see RuleStartMarker). A store without markers makes it a
// no-op.
func (c *Catalog) WriteRuleStarts(ctx context.Context, node string, changes []RuleStart) error {
	if m, ok := c.store.(RuleStartMarker); ok {
		return m.WriteRuleStarts(ctx, node, changes)
	}
	return nil
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
