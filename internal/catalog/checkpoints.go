package catalog

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"
)

// ErrLeaseLost: a write for a rule was refused because the writer does
// not hold the rule's lease with the token it named (fencing).
var ErrLeaseLost = errors.New("lease of the rule not held with this token")

// CheckpointStore is implemented by the shared store: the checkpoints of
// rules placed on a cluster, kept as opaque bytes by rule, task (empty for
// a whole rule; a partition's task for a partitioned one) and checkpoint
// id. Writes name the writer's lease (node and fencing token) and are
// refused by the database with ErrLeaseLost unless that lease is live, in
// the same transaction, holding a share lock on the lease row: a grant to
// another node commits either before the write (which is then refused) or
// after it (and the new holder reads it).
type CheckpointStore interface {
	PutCheckpoint(ctx context.Context, rule, task string, id uint64, node string, token int64, data []byte, keep int) error
	MarkCheckpointCommitted(ctx context.Context, rule, task string, id uint64, node string, token int64) error
	CheckpointIDs(ctx context.Context, rule, task string) ([]uint64, error)
	Checkpoint(ctx context.Context, rule, task string, id uint64) ([]byte, error)
	CommittedCheckpoint(ctx context.Context, rule, task string) (uint64, bool, error)
	DeleteCheckpoints(ctx context.Context, rule string) error
}

var _ CheckpointStore = (*PostgresStore)(nil)

// fencedTx runs fn in one transaction after checking, under a share lock
// on the lease row, that node holds rule's live lease with token.
func (s *PostgresStore) fencedTx(ctx context.Context, rule, node string, token int64, fn func(tx stmts) error) error {
	db, err := s.leaseDB()
	if err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return classifyPostgres(err)
	}
	defer tx.Rollback() //nolint:errcheck // no-op after commit
	st := stmts{q: tx, dollar: true}
	held, err := queryAll(ctx, st, scanInt64, `SELECT 1 FROM rule_leases
		WHERE rule_id = ? AND node_id = ? AND token = ? AND expires_at > `+dbNowMilli+` FOR SHARE`, rule, node, token)
	if err != nil {
		return classifyPostgres(err)
	}
	if len(held) == 0 {
		return fmt.Errorf("%w (node %s, token %d)", ErrLeaseLost, node, token)
	}
	if err := fn(st); err != nil {
		return classifyPostgres(err)
	}
	return classifyPostgres(tx.Commit())
}

// PutCheckpoint stores checkpoint id of rule's task (replacing one of the
// same id), fenced by node's lease with token, and removes the task's
// checkpoints older than the newest keep, except the one marked
// committed.
func (s *PostgresStore) PutCheckpoint(ctx context.Context, rule, task string, id uint64, node string, token int64, data []byte, keep int) error {
	keep = max(keep, 1)
	err := s.fencedTx(ctx, rule, node, token, func(tx stmts) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO rule_checkpoints (rule_id, task, id, node_id, token, saved_at, data)
			VALUES (?, ?, ?, ?, ?, `+dbNowMilli+`, ?)
			ON CONFLICT (rule_id, task, id) DO UPDATE SET node_id = excluded.node_id, token = excluded.token,
				saved_at = excluded.saved_at, data = excluded.data`, rule, task, int64(id), node, token, data); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM rule_checkpoints c
			WHERE c.rule_id = ? AND c.task = ?
			AND c.id NOT IN (SELECT k.id FROM rule_checkpoints k WHERE k.rule_id = c.rule_id AND k.task = c.task ORDER BY k.id DESC LIMIT ?)
			AND c.id <> COALESCE((SELECT m.id FROM rule_checkpoint_commits m WHERE m.rule_id = c.rule_id AND m.task = c.task), -1)`,
			rule, task, keep)
		return err
	})
	if err != nil {
		return fmt.Errorf("store checkpoint %d of rule %s: %w", id, ruleTask(rule, task), err)
	}
	return nil
}

// MarkCheckpointCommitted records that checkpoint id of rule's task
// committed its transactional sinks, fenced like PutCheckpoint.
func (s *PostgresStore) MarkCheckpointCommitted(ctx context.Context, rule, task string, id uint64, node string, token int64) error {
	err := s.fencedTx(ctx, rule, node, token, func(tx stmts) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO rule_checkpoint_commits (rule_id, task, id) VALUES (?, ?, ?)
			ON CONFLICT (rule_id, task) DO UPDATE SET id = excluded.id`, rule, task, int64(id))
		return err
	})
	if err != nil {
		return fmt.Errorf("mark checkpoint %d of rule %s committed: %w", id, ruleTask(rule, task), err)
	}
	return nil
}

// CheckpointIDs lists the ids of rule's task's checkpoints, newest first.
func (s *PostgresStore) CheckpointIDs(ctx context.Context, rule, task string) ([]uint64, error) {
	ids, err := list(ctx, s.sqlStore, scanInt64, `SELECT id FROM rule_checkpoints WHERE rule_id = ? AND task = ? ORDER BY id DESC`, rule, task)
	if err != nil {
		return nil, fmt.Errorf("list checkpoints of rule %s: %w", ruleTask(rule, task), err)
	}
	out := make([]uint64, len(ids))
	for i, id := range ids {
		out[i] = uint64(id)
	}
	return out, nil
}

// Checkpoint returns the bytes of checkpoint id of rule's task, or
// ErrNotFound.
func (s *PostgresStore) Checkpoint(ctx context.Context, rule, task string, id uint64) ([]byte, error) {
	rows, err := list(ctx, s.sqlStore, func(r rowScanner) ([]byte, error) {
		var b []byte
		return b, r.Scan(&b)
	}, `SELECT data FROM rule_checkpoints WHERE rule_id = ? AND task = ? AND id = ?`, rule, task, int64(id))
	if err == nil && len(rows) == 0 {
		err = ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("read checkpoint %d of rule %s: %w", id, ruleTask(rule, task), err)
	}
	return rows[0], nil
}

// CommittedCheckpoint returns the id last marked committed for rule's
// task; ok is false when none is.
func (s *PostgresStore) CommittedCheckpoint(ctx context.Context, rule, task string) (uint64, bool, error) {
	rows, err := list(ctx, s.sqlStore, scanInt64, `SELECT id FROM rule_checkpoint_commits WHERE rule_id = ? AND task = ?`, rule, task)
	if err != nil {
		return 0, false, fmt.Errorf("read committed checkpoint of rule %s: %w", ruleTask(rule, task), err)
	}
	if len(rows) == 0 {
		return 0, false, nil
	}
	return uint64(rows[0]), true, nil
}

// DeleteCheckpoints removes every checkpoint and commit mark of rule, of
// all its tasks (partitioned rules), in one transaction.
func (s *PostgresStore) DeleteCheckpoints(ctx context.Context, rule string) error {
	err := func() error {
		db, err := s.leaseDB()
		if err != nil {
			return err
		}
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback() //nolint:errcheck // no-op after commit
		st := stmts{q: tx, dollar: true}
		// A partitioned rule's tasks checkpoint under "<rule>#p<n>" and
		// "<rule>#r<n>" (rule.TaskID, rule.RepartitionTaskID); rule ids
		// cannot contain '#'.
		prefix := rule + "#"
		n := utf8.RuneCountInString(prefix)
		for _, q := range []string{`DELETE FROM rule_checkpoints WHERE rule_id = ? OR left(rule_id, ?) = ?`, `DELETE FROM rule_checkpoint_commits WHERE rule_id = ? OR left(rule_id, ?) = ?`} {
			if _, err := st.ExecContext(ctx, q, rule, n, prefix); err != nil {
				return err
			}
		}
		return tx.Commit()
	}()
	if err != nil {
		return fmt.Errorf("delete checkpoints of rule %s: %w", rule, classifyPostgres(err))
	}
	return nil
}

func ruleTask(rule, task string) string {
	if task == "" {
		return rule
	}
	return rule + " task " + task
}

// Database is the name of the database: the nodes that share it form one
// cluster.
func (s *PostgresStore) Database() string { return s.cfg.Database }
