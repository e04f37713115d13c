package kafka

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/rule"
	"github.com/rekuiper/rekuiper/internal/testwait"
	"github.com/rekuiper/rekuiper/internal/value"
)

// groupStream adds stream name, reading topic in consumer group group.
func (e *ruleEnv) groupStream(t *testing.T, name, topic, group string) {
	t.Helper()
	extra, _ := json.Marshal(map[string]any{"brokers": e.k.addr(), "groupID": group})
	sql := fmt.Sprintf(`CREATE STREAM %s (v BIGINT) WITH (DATASOURCE=%q, TYPE="kafka", FORMAT="json", EXTRA=%q)`, name, topic, extra)
	st := catalog.Stream{Name: name, Kind: catalog.KindStream, SQL: sql}
	if _, err := e.cat.PutStream(context.Background(), st, catalog.Create); err != nil {
		t.Fatal(err)
	}
}

// groupRule parses a rule reading stream g into the output topic.
func (e *ruleEnv) groupRule(t *testing.T, id, options string) *rule.Def {
	t.Helper()
	action, _ := json.Marshal(map[string]any{"kafka": map[string]any{"brokers": e.k.addr(), "topic": e.out}})
	def, err := rule.ParseDef(fmt.Appendf(nil, `{"id":%q,"sql":"SELECT v FROM g","actions":[%s],"options":%s}`, id, action, options), rule.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return def
}

// checkTotals appends a marker to the output (call it with the rule
// stopped) and checks that every value in 1..to was emitted want(v) times,
// and no other value.
func (e *ruleEnv) checkTotals(t *testing.T, to int64, want func(v int64) int) {
	t.Helper()
	e.k.produce(t, e.out, &kgo.Record{Value: []byte("marker")})
	got := e.results(t, 0, 1)
	for v := int64(1); v <= to; v++ {
		if got[v] != want(v) {
			t.Errorf("result %d seen %d times, want %d", v, got[v], want(v))
		}
	}
	if len(got) != int(to) {
		t.Errorf("results %v, want values 1..%d", got, to)
	}
}

// TestRuleGroupQos0: without checkpoints the source commits what it read
// to its consumer group, so a restarted rule reads only the new records.
func TestRuleGroupQos0(t *testing.T) {
	e := newRuleEnv(t)
	e.groupStream(t, "g", e.in, "rekuiper-q0")
	def := e.groupRule(t, "q0", `{"qos":0}`)
	ctx := context.Background()

	run := e.start(t, def)
	e.input(t, 1, 10)
	e.results(t, 10, 0)
	if err := run.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.k.groupOffsets(t, "rekuiper-q0", e.in); sum(got) != 10 {
		t.Fatalf("group offsets %v after the first run, want 10 on the one partition", got)
	}

	e.input(t, 11, 20)
	run = e.start(t, def)
	// One partition: a re-read of 1..10 would come before 11..20.
	e.results(t, 20, 0)
	if err := run.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	e.checkTotals(t, 20, func(int64) int { return 1 })
	if got := e.k.groupOffsets(t, "rekuiper-q0", e.in); sum(got) != 20 {
		t.Fatalf("group offsets %v after the second run, want 20 on the one partition", got)
	}
}

// TestRuleGroupCheckpointed: under checkpoints the group's offsets are
// those of the last committed checkpoint, never those merely read, and a
// restore still resumes from the checkpoint.
func TestRuleGroupCheckpointed(t *testing.T) {
	e := newRuleEnv(t)
	topic := e.in + "-p3"
	e.k.createTopic(t, topic, 3)
	e.groupStream(t, "g", topic, "rekuiper-q1")
	input := func(from, to int) {
		t.Helper()
		var recs []*kgo.Record
		for v := from; v <= to; v++ {
			recs = append(recs, &kgo.Record{Key: fmt.Append(nil, v), Value: fmt.Appendf(nil, `{"v":%d}`, v)})
		}
		e.k.produce(t, topic, recs...)
	}
	ctx := context.Background()

	// No checkpoint completes within an hour: nothing is committed,
	// although the rule read and emitted everything.
	run := e.start(t, e.groupRule(t, "q1", `{"qos":1,"checkpointInterval":"1h"}`))
	input(1, 10)
	e.results(t, 10, 0)
	if err := run.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.k.groupOffsets(t, "rekuiper-q1", topic); len(got) != 0 {
		t.Fatalf("group offsets %v without a checkpoint, want none", got)
	}

	// Same definition, checkpoints every 50ms. Nothing to restore, no
	// group offsets: 1..10 are read again.
	def := e.groupRule(t, "q1", `{"qos":1,"checkpointInterval":"50ms"}`)
	run = e.start(t, def)
	input(11, 20)
	e.results(t, 30, 0)
	var id uint64
	var want, got map[int32]int64
	if !testwait.Poll(testwait.Limit, func() bool {
		c, ok := e.store.Committed("q1")
		if !ok {
			return false
		}
		id, want = c, e.checkpointOffsets(t, "q1", c, "source:g", topic)
		got = e.k.groupOffsets(t, "rekuiper-q1", topic)
		return sum(want) == 20 && maps.Equal(got, want)
	}) {
		t.Fatalf("group offsets %v, want those of committed checkpoint %d (%v) once all 20 records are in it", got, id, want)
	}
	if err := run.Stop(ctx); err != nil {
		t.Fatal(err)
	}

	// The restore resumes at the checkpoint's offsets.
	input(21, 25)
	run = e.start(t, def)
	e.results(t, 35, 0)
	if err := run.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	e.checkTotals(t, 25, func(v int64) int {
		if v <= 10 {
			return 2
		}
		return 1
	})
}

// checkpointOffsets returns the offsets of topic's source key in
// checkpoint id of rule ruleID. The engine keeps the rule's fingerprint to itself, so it
// is read from the checkpoint file (magic, version, body length, then the
// body: rule id, fingerprint, ...).
func (e *ruleEnv) checkpointOffsets(t *testing.T, ruleID string, id uint64, key, topic string) map[int32]int64 {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(e.store.Dir, "rule_"+ruleID, "checkpoints", fmt.Sprintf("ckpt-%020d.bin", id)))
	if err != nil {
		t.Fatal(err)
	}
	if len(data) < 9 || uint64(len(data)) < 9+uint64(binary.LittleEndian.Uint32(data[5:9])) {
		t.Fatalf("checkpoint %d: short file", id)
	}
	r := value.NewReader(data[9:])
	_ = r.String() // rule id
	fp := r.String()
	cp, err := e.store.Load(ruleID, fp, id)
	if err != nil {
		t.Fatal(err)
	}
	next, err := (&Source{topic: topic}).decodeOffset(cp.Offsets[key])
	if err != nil {
		t.Fatalf("checkpoint %d: offset of %s: %v", id, key, err)
	}
	return next
}
