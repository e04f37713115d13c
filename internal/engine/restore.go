package engine

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/rekuiper/rekuiper/internal/checkpoint"
	"github.com/rekuiper/rekuiper/internal/clock"
)

// waitStorage asks checkpoint storage that can be unreachable (the
// cluster's database) until it answers or ctx ends, and returns its last
// error then: a rule does not start without its state. A node that takes
// a rule over during a short database outage thus waits for it; a long
// one also costs the node the rule's lease, and the rule is placed again
// once the database answers.
func (rn *Engine) waitStorage(ctx context.Context, id string, logger *slog.Logger) error {
	c, ok := rn.cfg.Checkpoints.(interface{ Check(ruleID string) error })
	if !ok {
		return nil
	}
	for warned := false; ; warned = true {
		err := c.Check(id)
		if err == nil {
			return nil
		}
		if !warned {
			logger.Warn("checkpoint storage does not answer; waiting for it before restoring", "err", err)
		}
		if !clock.Sleep(ctx, rn.cfg.Clock, 500*time.Millisecond) {
			return err
		}
	}
}

// latestCheckpoint loads the rule's newest checkpoint; a checkpoint of an
// earlier definition of the rule is discarded (state does not survive a
// change of the rule or its streams).
func (rn *Engine) latestCheckpoint(id, fp string, logger *slog.Logger) (*checkpoint.Checkpoint, error) {
	cp, err := rn.cfg.Checkpoints.Latest(id, fp)
	switch {
	case err == nil:
		return cp, nil
	case errors.Is(err, checkpoint.ErrUnavailable):
		return nil, err
	case errors.Is(err, checkpoint.ErrMismatch):
		logger.Info("rule definition changed: discarding its checkpoints")
		if err := rn.cfg.Checkpoints.Delete(id); err != nil {
			logger.Warn("discard checkpoints", "err", err)
		}
	case !errors.Is(err, checkpoint.ErrNotFound):
		logger.Warn("checkpoint unreadable; starting without state", "err", err)
	}
	return nil, nil
}

// restorePoint picks the checkpoint to restore, and the id checkpoint
// numbering must continue after.
//
// Without transactional sinks it is the newest checkpoint. With them it is
// the newest checkpoint every transactional sink committed: the store's
// marker says all of them committed it; a sink that keeps its own
// bookkeeping (LastCommitted: the SQL and Kafka sinks) may know a newer
// one. With several transactional sinks a crash between their commits
// leaves them at different checkpoints; restoring the oldest replays the
// others' newest results a second time (at least once) rather than lose
// the rest's.
//
// Numbering continues after the newest id any sink committed, even when
// nothing is restored (a checkpoint lost or of another definition, a rule
// re-created with the same id): a sink's bookkeeping then never meets an
// id it has already committed.
//
// Storage that does not answer (checkpoint.ErrUnavailable) is an error:
// the rule does not start rather than start without its state.
func (rn *Engine) restorePoint(ctx context.Context, id, fp string, sinks []*sinkNode, logger *slog.Logger) (*checkpoint.Checkpoint, uint64, error) {
	marker, _ := rn.cfg.Checkpoints.Committed(id)
	floor := marker
	txn := false
	var target uint64
	for _, s := range sinks {
		if _, ok := s.sink.(transactional); !ok {
			continue
		}
		committed := marker
		if lc, ok := s.sink.(interface {
			LastCommitted(context.Context) (uint64, error)
		}); ok {
			if n, err := lc.LastCommitted(ctx); err != nil {
				logger.Warn("sink bookkeeping unreadable; using the checkpoint store's marker", "sink", s.name, "err", err)
			} else {
				committed = max(committed, n)
			}
		}
		floor = max(floor, committed)
		if !txn || committed < target {
			target = committed
		}
		txn = true
	}
	if !txn {
		cp, err := rn.latestCheckpoint(id, fp, logger)
		if cp != nil {
			floor = max(floor, cp.ID)
		}
		return cp, floor, err
	}
	if target == 0 {
		logger.Info("no committed checkpoint: starting without state")
		return nil, floor, nil
	}
	cp, err := rn.cfg.Checkpoints.Load(id, fp, target)
	if errors.Is(err, checkpoint.ErrUnavailable) {
		return nil, floor, err
	}
	if err != nil {
		logger.Warn("committed checkpoint not restorable; starting without state", "id", target, "err", err)
		return nil, floor, nil
	}
	return cp, floor, nil
}

// Cleanup removes what a deleted rule leaves on disk (its checkpoints).
func (rn *Engine) Cleanup(ruleID string) error {
	if rn.cfg.Checkpoints == nil {
		return nil
	}
	return rn.cfg.Checkpoints.Delete(ruleID)
}
