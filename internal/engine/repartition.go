package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/function"
	"github.com/rekuiper/rekuiper/internal/rule"
	"github.com/rekuiper/rekuiper/internal/sql/ast"
)

// topicMaker is implemented by sources whose broker can hold the internal
// topic of a repartitioned rule (the kafka source).
type topicMaker interface {
	// EnsureTopic creates topic with partitions partitions unless it
	// exists, and returns the partitions it has.
	EnsureTopic(ctx context.Context, topic string, partitions int) (int, error)
	// DeleteTopic deletes topic; a topic that does not exist is no error.
	DeleteTopic(ctx context.Context, topic string) error
}

// repartition decides a windowed GROUP BY rule over a kafka stream whose
// key is not the record key: when its GROUP BY is made of stream fields,
// its records are re-keyed by those fields' values into the internal topic
// rule.RepartitionTopic (created here unless it exists, with the rule
// option repartitionPartitions or as many partitions as the stream's
// topic) by one first-stage task per partition of the stream, and the
// rule runs as one task per partition of the internal topic. The rule's
// other checks (joins, window kind, LIMIT) passed already.
func (rn *Engine) repartition(ctx context.Context, def *rule.Def, stmt *ast.SelectStmt, cs *ast.CreateStreamStmt, streamSQL, keyField string) (rule.Split, error) {
	sp := rule.Split{Stream: cs.Name, Keyed: true}
	fields, reason := rn.repartitionKey(stmt, cs)
	if reason == "" {
		reason = repartitionReason(def, stmt, cs)
	}
	if reason == "" {
		isGroupField := func(e ast.Expr) bool {
			f, ok := unparen(e).(*ast.FieldRef)
			return ok && slices.ContainsFunc(fields, func(n string) bool { return rn.sameField(f.Name, n) })
		}
		reason = rn.analyticReason(stmt, isGroupField)
	}
	typ, props, err := rn.sourceProps(cs)
	if err != nil {
		return rule.Split{}, err
	}
	if p, ok := props["partition"]; ok && fmt.Sprint(p) != "-1" && reason == "" {
		reason = "its stream reads one partition (property partition)"
	}
	if reason != "" {
		sp.Reason = keyReason(keyField) + "; it is not repartitioned: " + reason
		return sp, nil
	}
	pt, reason, err := rn.partitionedSource(cs, typ, props)
	if err != nil || reason != "" {
		sp.Reason = reason
		return sp, err
	}
	tm, ok := pt.(topicMaker)
	if !ok {
		sp.Reason = "its source cannot create the internal topic of a repartitioning"
		return sp, nil
	}
	n, err := pt.Partitions(ctx)
	if err != nil {
		return rule.Split{}, fmt.Errorf("stream %s: %w", cs.Name, err)
	}
	want := n
	if o := def.Options.RepartitionPartitions; o > 0 {
		want = o
	}
	if n < 2 && want < 2 {
		sp.Reason = "its topic has one partition (rule option repartitionPartitions spreads it over more)"
		return sp, nil
	}
	topic := rule.RepartitionTopic(def.ID)
	parts, err := tm.EnsureTopic(ctx, topic, want)
	if err != nil {
		return rule.Split{}, fmt.Errorf("rule %s: internal topic: %w", def.ID, err)
	}
	first, second := splitWhere(stmt, rn.cfg.Funcs)
	sink := rn.repartitionSink(props)
	sink["topic"] = topic
	sink["key"] = keyTemplate(fields)
	sink["sendSingle"] = true
	sp.Partitions = parts
	sp.Repartition = &rule.Repartition{Topic: topic, Sources: n, SQL: first.String(), Sink: sink, RuleSQL: second.String(),
		Generation: generation(first.String(), streamSQL, def.Options.SendNilField)}
	return sp, nil
}

// generation names what a first stage writes: a hash of everything that
// shapes its rows, which is also everything its checkpoint fingerprint
// covers (Engine.prepare).
func generation(firstSQL, streamSQL string, sendNil bool) string {
	h := sha256.New()
	fmt.Fprintf(h, "repartition\nsql:%s\nstream:%s\nnil:%v\n", firstSQL, streamSQL, sendNil)
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// repartitionKey returns the stream fields the rule groups by, named as
// the first stage's rows name them (the schema's spelling); a reason when
// a GROUP BY expression is not a stream field.
func (rn *Engine) repartitionKey(stmt *ast.SelectStmt, cs *ast.CreateStreamStmt) ([]string, string) {
	var fields []string
	for _, d := range stmt.Dimensions {
		f, ok := unparen(d).(*ast.FieldRef)
		if !ok {
			return nil, fmt.Sprintf("GROUP BY %s is not a field of the stream", d)
		}
		name := f.Name
		if len(cs.Fields) > 0 {
			i := slices.IndexFunc(cs.Fields, func(sf ast.StreamField) bool { return rn.sameField(sf.Name, f.Name) })
			if i < 0 {
				return nil, fmt.Sprintf("GROUP BY %s is not a field of stream %s", d, cs.Name)
			}
			name = cs.Fields[i].Name
		}
		fields = append(fields, name)
	}
	return fields, ""
}

// repartitionReason says why a rule cannot read its stream's rows from
// the internal topic instead: they reach the second stage as JSON, with
// the internal topic's metadata and the second stage's arrival times.
func repartitionReason(def *rule.Def, stmt *ast.SelectStmt, cs *ast.CreateStreamStmt) string {
	if f, _ := cs.Option("FORMAT"); f != "" && !strings.EqualFold(f, "json") {
		return fmt.Sprintf("its stream's format is %s (only json streams are repartitioned)", f)
	}
	if ts, _ := cs.Option("TIMESTAMP"); def.Options.IsEventTime && ts == "" {
		return "it runs at event time without the stream's TIMESTAMP field, so the event time would not survive the internal topic"
	}
	if usesMeta(stmt) {
		return "it reads meta(), which would describe the internal topic's records"
	}
	return ""
}

// usesMeta reports whether the statement calls meta() or mqtt().
func usesMeta(stmt *ast.SelectStmt) bool {
	found := false
	for _, e := range append(rowExprs(stmt), stmt.Dimensions...) {
		ast.Walk(e, func(n ast.Expr) bool {
			if c, ok := n.(*ast.Call); ok && (strings.EqualFold(c.Name, "meta") || strings.EqualFold(c.Name, "mqtt")) {
				found = true
			}
			return !found
		})
	}
	return found
}

// splitWhere returns the first stage's statement (SELECT * of the stream,
// filtered by the rule's WHERE unless the WHERE calls an analytic
// function, whose state needs the rule's key) and the second stage's (the
// rule's, without the WHERE the first stage applies).
func splitWhere(stmt *ast.SelectStmt, funcs *function.Registry) (first, second *ast.SelectStmt) {
	first = &ast.SelectStmt{Fields: []ast.Field{{Expr: &ast.Wildcard{}}}, From: stmt.From}
	s := *stmt
	second = &s
	if stmt.Where == nil || callsAnalytic(stmt.Where, funcs) {
		return first, second
	}
	first.Where, second.Where = stmt.Where, nil
	return first, second
}

func callsAnalytic(e ast.Expr, funcs *function.Registry) bool {
	if funcs == nil {
		return true
	}
	found := false
	ast.Walk(e, func(n ast.Expr) bool {
		if c, ok := n.(*ast.Call); ok {
			if d, ok := funcs.Lookup(c.Name); !ok || d.Kind == function.Analytic {
				// An unknown function is kept with the rule: it fails there.
				found = true
			}
		}
		return !found
	})
	return found
}

// repartitionSink returns the kafka sink properties that reach the
// brokers the stream reads: the stream's connection properties that the
// kafka sink also knows.
func (rn *Engine) repartitionSink(props map[string]any) map[string]any {
	out := map[string]any{}
	spec, ok := rn.cfg.Registry.Sink("kafka")
	if !ok {
		return out
	}
	for _, p := range spec.Spec.Props {
		if v, ok := props[p.Name]; ok && !p.Target {
			out[p.Name] = v
		}
	}
	return out
}

// keyTemplate is the kafka sink's key template: the JSON of each GROUP BY
// field's value, comma-separated, so that equal groups get equal keys.
func keyTemplate(fields []string) string {
	parts := make([]string, len(fields))
	for i, f := range fields {
		parts[i] = "{{index . " + strconv.Quote(f) + " | json}}"
	}
	return strings.Join(parts, ",")
}

// sameField compares two field names as the rule's SQL does.
func (rn *Engine) sameField(a, b string) bool {
	if rn.cfg.IgnoreCase {
		return strings.EqualFold(a, b)
	}
	return a == b
}

func unparen(e ast.Expr) ast.Expr {
	for {
		p, ok := e.(*ast.ParenExpr)
		if !ok {
			return e
		}
		e = p.X
	}
}

// generationFilter is the source of the second stage of a repartitioned
// rule: the internal topic's reader, passing on only the records whose
// rule.GenerationHeader is gen, so that a rule started afresh does not
// count what an earlier first stage wrote. It is Rewindable as its
// source is (the kafka source); offsets count the skipped records too.
// As an OffsetCommitter (qos 1 and 2) it purges, once a checkpoint
// committed, the records before the checkpoint's offsets from the
// internal topic: no restore reads them again.
type generationFilter struct {
	src api.Source
	gen string
}

// recordPurger is implemented by sources that can delete the records
// before an offset (the kafka source).
type recordPurger interface {
	DeleteBefore(ctx context.Context, offset []byte) error
}

var (
	_ api.OffsetCommitter = generationFilter{}
	_ api.Source          = generationFilter{}
)

// CommitOnCheckpoints turns the source's own commits off.
func (g generationFilter) CommitOnCheckpoints() {
	if oc, ok := g.src.(api.OffsetCommitter); ok {
		oc.CommitOnCheckpoints()
	}
}

// CommitOffset purges the internal topic's records before offset.
func (g generationFilter) CommitOffset(ctx context.Context, offset []byte) error {
	if p, ok := g.src.(recordPurger); ok {
		return p.DeleteBefore(ctx, offset)
	}
	return nil
}

func (g generationFilter) Connect(ctx context.Context) error { return g.src.Connect(ctx) }
func (g generationFilter) Close(ctx context.Context) error   { return g.src.Close(ctx) }

// Inner is the filtered source (its connection status).
func (g generationFilter) Inner() api.Source { return g.src }

func (g generationFilter) Read(ctx context.Context) (*api.Message, error) {
	for {
		m, err := g.src.Read(ctx)
		if err != nil || m == nil {
			return m, err
		}
		if h, _ := m.Meta["headers"].(map[string]any); h != nil && h[rule.GenerationHeader] == g.gen {
			return m, nil
		}
	}
}

func (g generationFilter) Offset() ([]byte, error) {
	r, ok := g.src.(api.Rewindable)
	if !ok {
		return nil, errors.New("the internal topic's source cannot tell its offset")
	}
	return r.Offset()
}

func (g generationFilter) Rewind(offset []byte) error {
	r, ok := g.src.(api.Rewindable)
	if !ok {
		return errors.New("the internal topic's source cannot rewind")
	}
	return r.Rewind(offset)
}
