package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/rule"
	"github.com/rekuiper/rekuiper/internal/rulemgr"
	"github.com/rekuiper/rekuiper/internal/sql/ast"
)

var _ rulemgr.Forgetter = (*Engine)(nil)

// Forget releases what a deleted rule kept on the servers it read from: a
// rule at qos >= 1 reads each stream through a source of its own, and a
// source that keeps a session under a name derived from the rule
// (connector.SessionEnder: MQTT's derived persistent session) is built
// again from the stream's current definition and told to end it, so the
// broker stops queueing for a rule that is gone. Every stream is tried;
// the errors are joined.
//
// On a cluster it also deletes the internal topic of a rule whose stream
// was repartitioned (rule.RepartitionTopic), if there is one.
func (rn *Engine) Forget(ctx context.Context, def *rule.Def) error {
	stmt, names, err := parseRule(def)
	if err != nil {
		if !def.Options.Qos.Checkpointed() {
			return nil
		}
		return err
	}
	var errs []error
	if rn.cfg.ClusterNode != "" && stmt.Window != nil && len(stmt.Dimensions) > 0 && len(stmt.Joins) == 0 {
		if err := rn.deleteRepartitionTopic(ctx, def.ID, stmt.From.Name); err != nil {
			errs = append(errs, err)
		}
	}
	if !def.Options.Qos.Checkpointed() {
		return errors.Join(errs...)
	}
	return errors.Join(append(errs, rn.endSessions(ctx, def.ID, names))...)
}

// EndSessions ends the sessions the whole rule def kept on the servers
// it read from (see Forget), without deleting anything else: a rule that
// now runs as one copy per node (rule.Split.Spread) must not leave the
// persistent session of its whole run subscribed, where the broker would
// keep queueing a share of the shared subscription for nobody.
func (rn *Engine) EndSessions(ctx context.Context, def *rule.Def) error {
	if !def.Options.Qos.Checkpointed() {
		return nil
	}
	_, names, err := parseRule(def)
	if err != nil {
		return err
	}
	return rn.endSessions(ctx, def.ID, names)
}

func (rn *Engine) endSessions(ctx context.Context, ruleID string, names []string) error {
	var errs []error
	slices.Sort(names)
	for _, name := range slices.Compact(names) {
		if err := rn.endSession(ctx, ruleID, name); err != nil {
			errs = append(errs, fmt.Errorf("stream %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// deleteRepartitionTopic deletes the internal topic of rule's
// repartitioning stage on the brokers of its kafka stream.
func (rn *Engine) deleteRepartitionTopic(ctx context.Context, ruleID, stream string) error {
	cs, _, err := rn.streamDef(ruleID, stream)
	if err != nil || cs.Kind != ast.KindStream || sourceType(cs) != "kafka" {
		return nil // nothing was repartitioned through a stream that is gone
	}
	typ, props, err := rn.sourceProps(cs)
	if err != nil {
		return err
	}
	src, err := rn.cfg.Registry.NewSource(typ, maps.Clone(props), rn.cfg.Deps)
	if err != nil {
		return fmt.Errorf("stream %s: %w", stream, err)
	}
	tm, ok := src.(topicMaker)
	if !ok {
		return nil
	}
	return tm.DeleteTopic(ctx, rule.RepartitionTopic(ruleID))
}

func (rn *Engine) endSession(ctx context.Context, ruleID, name string) error {
	cs, _, err := rn.streamDef(ruleID, name)
	if err != nil {
		return err
	}
	if cs.Kind != ast.KindStream {
		return nil // tables are shared, not read per rule
	}
	typ, props, err := rn.sourceProps(cs)
	if err != nil {
		return err
	}
	entry, ok := rn.cfg.Registry.Source(typ)
	if !ok {
		return nil
	}
	valid, err := entry.Spec.Validate(props)
	if err != nil {
		return err
	}
	deps := rn.cfg.Deps
	deps.SessionID = rn.sessionID(ruleID, name)
	src, err := entry.New(valid, deps)
	if err != nil {
		return err
	}
	if e, ok := src.(connector.SessionEnder); ok {
		return e.EndSession(ctx)
	}
	return nil
}
