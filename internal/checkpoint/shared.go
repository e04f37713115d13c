package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/rekuiper/rekuiper/internal/catalog"
)

// ErrUnavailable: the shared storage could not be read or written (the
// database is unreachable). A rule does not start without state because
// of it: its start fails and is retried.
var ErrUnavailable = errors.New("checkpoint storage unavailable")

// SharedBackend is the database side of Shared (catalog.PostgresStore).
// Writes are fenced by the database: they name the writer's lease on the
// rule (node and token) and fail with catalog.ErrLeaseLost unless that
// lease is live when they commit.
type SharedBackend = catalog.CheckpointStore

// Shared keeps checkpoints in the cluster's shared database, so that the
// node that takes a rule over restores the state its previous node saved
// and rewinds the sources to the same offsets. The bytes are those of a
// local checkpoint file (versioned, checksummed, tagged with the rule and
// its definition's fingerprint).
type Shared struct {
	Backend SharedBackend
	// Lease names this node's lease on the rule: its node id and the
	// fencing token of the grant. An error (the lease is not held)
	// refuses the write before the database is asked; the database
	// refuses it too when the token is no longer current.
	Lease func(ruleID string) (node string, token int64, err error)
	// Task is stored with every checkpoint: empty for whole rules.
	Task string
	// Keep is how many checkpoints to keep per rule (default 2), besides
	// the last committed one.
	Keep int
	// Timeout bounds each database call (default 5s).
	Timeout time.Duration
	Logger  *slog.Logger
}

func (s *Shared) ctx() (context.Context, context.CancelFunc) {
	d := s.Timeout
	if d <= 0 {
		d = 5 * time.Second
	}
	return context.WithTimeout(context.Background(), d)
}

func (s *Shared) keep() int {
	if s.Keep <= 0 {
		return 2
	}
	return s.Keep
}

// Save writes cp in one fenced transaction.
func (s *Shared) Save(cp *Checkpoint) (int, error) {
	node, token, err := s.Lease(cp.RuleID)
	if err != nil {
		return 0, fmt.Errorf("save checkpoint %d of rule %s: %w", cp.ID, cp.RuleID, err)
	}
	data := encode(cp)
	ctx, cancel := s.ctx()
	defer cancel()
	if err := s.Backend.PutCheckpoint(ctx, cp.RuleID, s.Task, cp.ID, node, token, data, s.keep()); err != nil {
		return 0, fmt.Errorf("save checkpoint: %w", err)
	}
	return len(data), nil
}

// Latest returns the newest readable checkpoint of the rule whose
// fingerprint matches; an unreadable one is skipped for the previous.
func (s *Shared) Latest(ruleID, fingerprint string) (*Checkpoint, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	ids, err := s.Backend.CheckpointIDs(ctx, ruleID, s.Task)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	var firstErr error
	for _, id := range ids {
		cp, err := s.load(ctx, ruleID, fingerprint, id)
		if errors.Is(err, ErrMismatch) || errors.Is(err, ErrUnavailable) {
			return nil, err
		}
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		return cp, nil
	}
	if firstErr != nil {
		return nil, fmt.Errorf("%w (%w)", ErrNotFound, firstErr)
	}
	return nil, fmt.Errorf("rule %s: %w", ruleID, ErrNotFound)
}

// Load returns checkpoint id of the rule, checked like Latest.
func (s *Shared) Load(ruleID, fingerprint string, id uint64) (*Checkpoint, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	return s.load(ctx, ruleID, fingerprint, id)
}

func (s *Shared) load(ctx context.Context, ruleID, fingerprint string, id uint64) (*Checkpoint, error) {
	data, err := s.Backend.Checkpoint(ctx, ruleID, s.Task, id)
	if err != nil {
		if isNotFound(err) {
			return nil, fmt.Errorf("checkpoint %d of rule %s: %w", id, ruleID, ErrNotFound)
		}
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return decodeFor(data, ruleID, fingerprint, id)
}

func isNotFound(err error) bool { return errors.Is(err, catalog.ErrNotFound) }

// MarkCommitted records, fenced, that checkpoint id committed.
func (s *Shared) MarkCommitted(ruleID string, id uint64) error {
	node, token, err := s.Lease(ruleID)
	if err != nil {
		return fmt.Errorf("mark checkpoint %d of rule %s committed: %w", id, ruleID, err)
	}
	ctx, cancel := s.ctx()
	defer cancel()
	return s.Backend.MarkCheckpointCommitted(ctx, ruleID, s.Task, id, node, token)
}

// Committed returns the last checkpoint id marked committed; an
// unreachable database reads as none (Check fails a start before).
func (s *Shared) Committed(ruleID string) (uint64, bool) {
	ctx, cancel := s.ctx()
	defer cancel()
	id, ok, err := s.Backend.CommittedCheckpoint(ctx, ruleID, s.Task)
	if err != nil {
		if s.Logger != nil {
			s.Logger.Warn("read committed checkpoint", "rule", ruleID, "err", err)
		}
		return 0, false
	}
	return id, ok
}

// Check reads the rule's commit mark: the engine calls it before a
// restore, so that a rule does not start without its state because the
// database did not answer. It returns an error wrapping ErrUnavailable.
func (s *Shared) Check(ruleID string) error {
	ctx, cancel := s.ctx()
	defer cancel()
	if _, _, err := s.Backend.CommittedCheckpoint(ctx, ruleID, s.Task); err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return nil
}

// Delete removes every checkpoint of the rule.
func (s *Shared) Delete(ruleID string) error {
	ctx, cancel := s.ctx()
	defer cancel()
	return s.Backend.DeleteCheckpoints(ctx, ruleID)
}
