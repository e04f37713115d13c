package engine

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rekuiper/rekuiper/internal/function"
	"github.com/rekuiper/rekuiper/internal/rule"
	"github.com/rekuiper/rekuiper/internal/sql/ast"
)

// spread decides, for a rule reading one MQTT stream, whether it runs as
// one copy on every node of a cluster (rule.Split.Spread): the broker
// hands each message of a shared subscription to one member of the group,
// so copies whose results depend on the message alone give, together,
// the results of one rule. A copy must keep no state across messages and
// must not share a broker identity with the others. SpreadReason says
// which condition failed.
func (rn *Engine) spread(def *rule.Def, stmt *ast.SelectStmt, props map[string]any) rule.Split {
	sp := rule.Split{Stream: stmt.From.Name}
	sp.SpreadReason = statefulReason(def, stmt, rn.cfg.Funcs)
	if sp.SpreadReason == "" {
		sp.SpreadReason = shareReason(def, props)
	}
	sp.Spread = sp.SpreadReason == ""
	sp.Reason = sp.SpreadReason
	return sp
}

// statefulReason names what makes a rule keep state across messages, or
// returns "": a window, GROUP BY or HAVING, a join, an aggregate or
// analytic function (lag, latest, changed_col, acc_*, …), last_hit_count
// and its kin, or event time (the watermark and the late-record check
// span messages).
func statefulReason(def *rule.Def, stmt *ast.SelectStmt, funcs *function.Registry) string {
	switch {
	case len(stmt.Joins) > 0:
		return "it joins another stream or table"
	case stmt.Window != nil:
		return "it has a window"
	case len(stmt.Dimensions) > 0:
		return "it has a GROUP BY"
	case stmt.Having != nil:
		return "it has a HAVING"
	case def.Options.IsEventTime:
		return "it runs at event time (the watermark spans messages)"
	}
	exprs := rowExprs(stmt)
	reason := ""
	for _, e := range exprs {
		ast.Walk(e, func(n ast.Expr) bool {
			c, ok := n.(*ast.Call)
			if !ok || reason != "" {
				return reason == ""
			}
			if c.Over != nil || slices.Contains(hitFuncs, strings.ToLower(c.Name)) {
				reason = fmt.Sprintf("%s keeps state across messages", c.Name)
			} else if funcs != nil {
				if d, ok := funcs.Lookup(c.Name); ok && (d.Kind == function.Aggregate || d.Kind == function.Analytic) {
					reason = fmt.Sprintf("%s function %s keeps state across messages", d.Kind, c.Name)
				}
			}
			return reason == ""
		})
	}
	return reason
}

// hitFuncs are evaluated by the engine, not the function registry, and
// read what earlier messages did.
var hitFuncs = []string{"last_hit_count", "last_hit_time", "last_agg_hit_count", "last_agg_hit_time"}

// shareReason says why the MQTT input or output of a stateless rule cannot
// be split among copies on several nodes, or returns "".
func shareReason(def *rule.Def, props map[string]any) string {
	ds, _ := props["datasource"].(string)
	for _, f := range strings.Split(ds, ",") {
		if !strings.HasPrefix(strings.TrimSpace(f), "$share/") {
			return fmt.Sprintf("topic %q is not a shared subscription ($share/<group>/<topic>): every copy would get every message", strings.TrimSpace(f))
		}
	}
	if id, _ := props["clientid"].(string); id != "" {
		return "its stream's source has a fixed clientid, which the copies on several nodes would take from each other"
	}
	if on, _ := props["enableClientSession"].(bool); on {
		return "its stream's source keeps a persistent session (enableClientSession)"
	}
	for _, a := range def.Actions {
		if id, _ := a.Props["clientid"].(string); strings.EqualFold(a.Type, "mqtt") && id != "" {
			return "its mqtt action has a fixed clientid, which the copies on several nodes would take from each other"
		}
	}
	return ""
}
