package engine

import (
	"context"
	"fmt"
	"maps"
	"strings"

	"github.com/rekuiper/rekuiper/internal/function"
	"github.com/rekuiper/rekuiper/internal/rule"
	"github.com/rekuiper/rekuiper/internal/sql/ast"
)

// partitioned is implemented by sources that can tell how many partitions
// their input has and read just one of them (the kafka source).
type partitioned interface {
	Partitions(ctx context.Context) (int, error)
}

// Split decides whether def runs as one copy on every node (a stateless
// rule over MQTT shared subscriptions, see spread), or whether it can run
// as one task per partition with the same results as one rule: it reads one Kafka stream (no join), groups
// it in tumbling or hopping windows by keys of which one is the record's
// Kafka key — meta(key), or the field the source's keyField property
// names — so that every group's records are in one partition, has no
// LIMIT across groups, and its analytic functions, if any, are
// partitioned by the key too. The error is for failures to ask the
// brokers; a rule that does not qualify gets a Reason.
func (rn *Engine) Split(ctx context.Context, def *rule.Def) (rule.Split, error) {
	stmt, _, err := parseRule(def)
	if err != nil {
		return rule.Split{}, err
	}
	sp := rule.Split{Stream: stmt.From.Name}
	cs, streamSQL, err := rn.streamDef(def.ID, stmt.From.Name)
	if err != nil {
		return rule.Split{}, err
	}
	if sourceType(cs) == "mqtt" && cs.Kind == ast.KindStream && len(stmt.Joins) == 0 {
		_, props, err := rn.sourceProps(cs)
		if err != nil {
			// Runs whole, and fails there with this error in its status.
			return rule.Split{Stream: cs.Name, Reason: err.Error()}, nil
		}
		return rn.spread(def, stmt, props), nil
	}
	if sourceType(cs) != "kafka" || cs.Kind != ast.KindStream || stmt.Window == nil || len(stmt.Dimensions) == 0 {
		sp.Reason = "not a windowed GROUP BY over a kafka stream"
		return sp, nil
	}
	sp.Keyed = true
	typ, props, err := rn.sourceProps(cs)
	if err != nil {
		return rule.Split{}, err
	}
	keyField, _ := props["keyField"].(string)
	isKey := func(e ast.Expr) bool { return rn.isRecordKey(e, keyField) }
	switch {
	case len(stmt.Joins) > 0:
		sp.Reason = "it joins another stream or table"
	case stmt.Window.Type != ast.TumblingWindow && stmt.Window.Type != ast.HoppingWindow:
		sp.Reason = fmt.Sprintf("a %s spans the records of every key", stmt.Window.Name)
	case stmt.HasLimit:
		sp.Reason = "LIMIT applies across the groups of a window"
	case !anyOf(stmt.Dimensions, isKey):
		return rn.repartition(ctx, def, stmt, cs, streamSQL, keyField)
	}
	if sp.Reason == "" {
		sp.Reason = rn.analyticReason(stmt, isKey)
	}
	if sp.Reason != "" {
		return sp, nil
	}
	if p, ok := props["partition"]; ok && fmt.Sprint(p) != "-1" {
		sp.Reason = "its stream reads one partition already (property partition)"
		return sp, nil
	}
	pt, reason, err := rn.partitionedSource(cs, typ, props)
	if err != nil || reason != "" {
		sp.Reason = reason
		return sp, err
	}
	n, err := pt.Partitions(ctx)
	if err != nil {
		return rule.Split{}, fmt.Errorf("stream %s: %w", cs.Name, err)
	}
	if n < 2 {
		sp.Reason = "its topic has one partition"
		return sp, nil
	}
	sp.Partitions = n
	return sp, nil
}

// partitionedSource builds the stream's source to ask about its topic; a
// reason when it cannot read a single partition.
func (rn *Engine) partitionedSource(cs *ast.CreateStreamStmt, typ string, props map[string]any) (partitioned, string, error) {
	src, err := rn.cfg.Registry.NewSource(typ, maps.Clone(props), rn.cfg.Deps)
	if err != nil {
		return nil, "", fmt.Errorf("stream %s: %w", cs.Name, err)
	}
	pt, ok := src.(partitioned)
	if !ok {
		return nil, "its source cannot read a single partition", nil
	}
	return pt, "", nil
}

// keyReason explains a GROUP BY that does not include the record key.
func keyReason(keyField string) string {
	if keyField == "" {
		return "GROUP BY does not include meta(key), and the stream names no keyField: the records of one group may be in several partitions"
	}
	return fmt.Sprintf("GROUP BY includes neither meta(key) nor the stream's keyField %q: the records of one group may be in several partitions", keyField)
}

// isRecordKey reports whether e is the record's Kafka key: meta(key) or
// the keyField column.
func (rn *Engine) isRecordKey(e ast.Expr, keyField string) bool {
	switch x := e.(type) {
	case *ast.ParenExpr:
		return rn.isRecordKey(x.X, keyField)
	case *ast.Call:
		if !strings.EqualFold(x.Name, "meta") || len(x.Args) != 1 {
			return false
		}
		f, ok := x.Args[0].(*ast.FieldRef)
		return ok && f.Stream == "" && strings.EqualFold(f.Name, "key")
	case *ast.FieldRef:
		if keyField == "" {
			return false
		}
		if rn.cfg.IgnoreCase {
			return strings.EqualFold(x.Name, keyField)
		}
		return x.Name == keyField
	}
	return false
}

// analyticReason names an analytic function not partitioned by the key:
// its state would span the records of several keys.
func (rn *Engine) analyticReason(stmt *ast.SelectStmt, isKey func(ast.Expr) bool) string {
	exprs := rowExprs(stmt)
	reason := ""
	for _, e := range exprs {
		ast.Walk(e, func(n ast.Expr) bool {
			c, ok := n.(*ast.Call)
			if !ok || reason != "" || rn.cfg.Funcs == nil {
				return reason == ""
			}
			if d, ok := rn.cfg.Funcs.Lookup(c.Name); ok && d.Kind == function.Analytic {
				if c.Over == nil || !anyOf(c.Over.Partition, isKey) {
					reason = fmt.Sprintf("analytic function %s is not partitioned by the record key (OVER (PARTITION BY meta(key)))", c.Name)
				}
			}
			return reason == ""
		})
	}
	return reason
}

func anyOf(es []ast.Expr, f func(ast.Expr) bool) bool {
	for _, e := range es {
		if f(e) {
			return true
		}
	}
	return false
}

// taskProps narrows a stream's source properties to the partition of a
// task: the source reads that partition alone, outside any consumer group
// (the task's checkpoints hold its offsets).
func taskProps(props map[string]any, t *rule.Task) map[string]any {
	out := maps.Clone(props)
	out["partition"] = int64(t.Partition)
	delete(out, "groupID")
	if t.Topic != "" {
		out["datasource"] = t.Topic
	}
	return out
}

// rowExprs lists the expressions a SELECT evaluates on its rows: WHERE,
// HAVING, the fields and ORDER BY (nil entries where a clause is absent;
// ast.Walk takes them).
func rowExprs(stmt *ast.SelectStmt) []ast.Expr {
	exprs := []ast.Expr{stmt.Where, stmt.Having}
	for _, f := range stmt.Fields {
		exprs = append(exprs, f.Expr)
	}
	for _, o := range stmt.OrderBy {
		exprs = append(exprs, o.Expr)
	}
	return exprs
}
