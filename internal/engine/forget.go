package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/rule"
	"github.com/rekuiper/rekuiper/internal/rulemgr"
	"github.com/rekuiper/rekuiper/internal/sql/ast"
)

var _ rulemgr.Forgetter = (*Runner)(nil)

// Forget releases what a deleted rule kept on the servers it read from: a
// rule at qos >= 1 reads each stream through a source of its own, and a
// source that keeps a session under a name derived from the rule
// (connector.SessionEnder: MQTT's derived persistent session) is built
// again from the stream's current definition and told to end it, so the
// broker stops queueing for a rule that is gone. Every stream is tried;
// the errors are joined.
func (rn *Runner) Forget(ctx context.Context, def *rule.Def) error {
	if def.Options.Qos == 0 {
		return nil
	}
	_, names, err := parseRule(def)
	if err != nil {
		return err
	}
	slices.Sort(names)
	var errs []error
	for _, name := range slices.Compact(names) {
		if err := rn.endSession(ctx, def.ID, name); err != nil {
			errs = append(errs, fmt.Errorf("stream %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

func (rn *Runner) endSession(ctx context.Context, ruleID, name string) error {
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
	entry, ok := rn.Registry.Source(typ)
	if !ok {
		return nil
	}
	valid, err := entry.Spec.Validate(props)
	if err != nil {
		return err
	}
	deps := rn.Deps
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
