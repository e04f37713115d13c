package kafka

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/connector/connectortest"
)

// lastCommitted connects a fresh sink with props (fencing any other
// instance of its transactional id) and returns its LastCommitted.
func lastCommitted(t *testing.T, props map[string]any) uint64 {
	t.Helper()
	s := newSink(t, props)
	connectT(t, s)
	defer s.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := s.LastCommitted(ctx)
	if err != nil {
		t.Fatalf("LastCommitted: %v", err)
	}
	return n
}

// markerKeys counts the readable (read_committed) records of the checkpoint
// topic per key, reading until the topic's end.
func markerKeys(t *testing.T, k *cluster, topic string) map[string]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ends, err := kadm.NewClient(k.client(t)).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup(topic, 0)
	cl := k.client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	out := map[string]int{}
	for next := int64(0); next < end.Offset; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %s: reached %d of %d", topic, next, end.Offset)
		}
		fs.EachRecord(func(r *kgo.Record) {
			next = r.Offset + 1
			if !r.Attrs.IsControl() {
				out[string(r.Key)]++
			}
		})
	}
	return out
}

// TestSinkLastCommitted: a transactional sink records each committed
// checkpoint in the checkpoint topic, which it creates compacted; a fresh
// sink with the same transactional id reads the last one back, whatever
// other sinks, aborted transactions and compaction did to the topic.
func TestSinkLastCommitted(t *testing.T) {
	k := newCluster(t)
	topic := topicName(t)
	k.createTopic(t, topic, 2)
	ckTopic := topic + "-ck"
	props := map[string]any{"brokers": k.addr(), "topic": topic, "transactionalID": "lc-1", "checkpointTopic": ckTopic}
	other := map[string]any{"brokers": k.addr(), "topic": topic, "transactionalID": "lc-2", "checkpointTopic": ckTopic}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	checkpoint := func(s *Sink, id uint64, commit bool, vs ...string) {
		t.Helper()
		for _, v := range vs {
			if err := s.Write(ctx, msg(v)); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.PreCommit(ctx, id); err != nil {
			t.Fatal(err)
		}
		var err error
		if commit {
			err = s.Commit(ctx, id)
		} else {
			err = s.Abort(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
	}

	if n := lastCommitted(t, props); n != 0 {
		t.Fatalf("LastCommitted of a new transactional id = %d, want 0", n)
	}
	cfgs, err := kadm.NewClient(k.client(t)).DescribeTopicConfigs(ctx, ckTopic)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := cfgs.On(ckTopic, nil); err != nil || !strings.Contains(configValue(c, "cleanup.policy"), "compact") {
		t.Fatalf("checkpoint topic configs %+v (%v), want cleanup.policy compact", c.Configs, err)
	}

	s := newSink(t, props)
	connectT(t, s)
	checkpoint(s, 3, true, "a1", "a2")
	checkpoint(s, 4, true) // nothing written: no transaction, no record
	checkpoint(s, 5, false, "b1")
	if n, err := s.LastCommitted(ctx); err != nil || n != 3 {
		t.Fatalf("LastCommitted = %d, %v; want 3", n, err)
	}
	checkpoint(s, 7, true, "c1")
	if n, err := s.LastCommitted(ctx); err != nil || n != 7 {
		t.Fatalf("LastCommitted = %d, %v; want 7", n, err)
	}
	s.Close(ctx)

	s2 := newSink(t, other)
	connectT(t, s2)
	checkpoint(s2, 100, true, "x1")
	s2.Close(ctx)

	for _, tc := range []struct {
		name  string
		props map[string]any
		want  uint64
	}{
		{"same transactional id", props, 7},
		{"other transactional id", other, 100},
		{"unknown transactional id", map[string]any{"brokers": k.addr(), "topic": topic, "transactionalID": "lc-3", "checkpointTopic": ckTopic}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if n := lastCommitted(t, tc.props); n != tc.want {
				t.Fatalf("LastCommitted = %d, want %d", n, tc.want)
			}
		})
	}

	t.Run("after compaction", func(t *testing.T) {
		if got := markerKeys(t, k, ckTopic); got["lc-1"] != 2 || got["lc-2"] != 1 {
			t.Fatalf("committed records per key before compaction: %v, want lc-1:2 lc-2:1", got)
		}
		k.mu.Lock()
		k.c.Compact()
		k.mu.Unlock()
		if got := markerKeys(t, k, ckTopic); got["lc-1"] != 1 {
			t.Fatalf("committed records per key after compaction: %v, want lc-1:1", got)
		}
		if n := lastCommitted(t, props); n != 7 {
			t.Fatalf("LastCommitted after compaction = %d, want 7", n)
		}
	})

	t.Run("non-transactional", func(t *testing.T) {
		plain := newSink(t, map[string]any{"brokers": k.addr(), "topic": topic})
		connectT(t, plain)
		defer plain.Close(ctx)
		if n, err := plain.LastCommitted(ctx); err != nil || n != 0 {
			t.Fatalf("LastCommitted = %d, %v; want 0", n, err)
		}
	})
}

func configValue(c kadm.ResourceConfig, key string) string {
	for i := range c.Configs {
		if cfg := &c.Configs[i]; cfg.Key == key {
			return cfg.MaybeValue()
		}
	}
	return ""
}

// TestSinkReplayedCheckpointsCommit: checkpoint ids at or below
// LastCommitted (which the engine avoids: numbering continues after it)
// commit like any other (at least once: a replay's barriers need not fall
// where the original's did, so dropping them could lose results), and
// LastCommitted stays the highest id committed.
func TestSinkReplayedCheckpointsCommit(t *testing.T) {
	k := newCluster(t)
	topic := topicName(t)
	k.createTopic(t, topic, 1)
	props := map[string]any{"brokers": k.addr(), "topic": topic, "transactionalID": "replay-1"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	write := func(s *Sink, vs ...string) {
		t.Helper()
		for _, v := range vs {
			if err := s.Write(ctx, msg(v)); err != nil {
				t.Fatal(err)
			}
		}
	}
	step := func(f func(context.Context, uint64) error, id uint64) {
		t.Helper()
		if err := f(ctx, id); err != nil {
			t.Fatal(err)
		}
	}

	s := newSink(t, props)
	connectT(t, s)
	write(s, "a1")
	step(s.PreCommit, 1)
	step(s.Commit, 1)
	write(s, "a2")
	step(s.PreCommit, 2)
	step(s.Commit, 2)
	s.Close(ctx)

	// The restarted rule replays checkpoints 1 and 2 before going on.
	s2 := newSink(t, props)
	connectT(t, s2)
	defer s2.Close(ctx)
	if n, err := s2.LastCommitted(ctx); err != nil || n != 2 {
		t.Fatalf("LastCommitted = %d, %v; want 2", n, err)
	}
	write(s2, "r1")
	step(s2.PreCommit, 1)
	step(s2.Commit, 1)
	write(s2, "r2")
	step(s2.PreCommit, 2)
	write(s2, "c3") // after barrier 2: checkpoint 3's
	step(s2.Commit, 2)
	step(s2.PreCommit, 3)
	step(s2.Commit, 3)
	if n, err := s2.LastCommitted(ctx); err != nil || n != 3 {
		t.Fatalf("LastCommitted = %d, %v; want 3", n, err)
	}
	k.produce(t, topic, &kgo.Record{Value: []byte("marker")})
	if got := strings.Join(sorted(values(k.consume(t, topic, 0, 1, 10*time.Second))), ","); got != "a1,a2,c3,r1,r2" {
		t.Fatalf("read_committed sees %s, want a1,a2,c3,r1,r2", got)
	}
}

// TestSinkCheckpointTopicProps: the checkpoint topic must be named and
// must not be the sink's own topic.
func TestSinkCheckpointTopicProps(t *testing.T) {
	for _, tc := range []struct {
		name    string
		props   map[string]any
		wantErr string
	}{
		{"empty", map[string]any{"checkpointTopic": ""}, `"checkpointTopic" is empty`},
		{"the sink's topic", map[string]any{"checkpointTopic": "out"}, "is the sink's topic"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			props := map[string]any{"brokers": "127.0.0.1:1", "topic": "out", "transactionalID": "x"}
			for k, v := range tc.props {
				props[k] = v
			}
			r := connectortest.Registry(t, Register)
			_, err := r.NewSink(Type, props, connector.Deps{})
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// TestSinkLastCommittedWaitsForOpenTransactions: a record of this sink that
// sits behind another sink's open transaction in the checkpoint topic is
// not readable read_committed until that transaction ends; the read waits
// for it instead of stopping early with an older checkpoint.
func TestSinkLastCommittedWaitsForOpenTransactions(t *testing.T) {
	k := newCluster(t)
	topic := topicName(t)
	k.createTopic(t, topic, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	propsFor := func(id string) map[string]any {
		return map[string]any{"brokers": k.addr(), "topic": topic, "transactionalID": id}
	}
	x := newSink(t, propsFor("open-x"))
	connectT(t, x)
	defer x.Close(ctx)
	// Connected before x's transaction opens: a Connect reads the topic
	// too, and would wait.
	y := newSink(t, propsFor("open-y"))
	connectT(t, y)
	if err := x.Write(ctx, msg("x1")); err != nil {
		t.Fatal(err)
	}
	if err := x.PreCommit(ctx, 1); err != nil { // x's record opens a transaction in the checkpoint topic
		t.Fatal(err)
	}
	if err := y.Write(ctx, msg("y1")); err != nil {
		t.Fatal(err)
	}
	if err := y.PreCommit(ctx, 5); err != nil {
		t.Fatal(err)
	}
	if err := y.Commit(ctx, 5); err != nil {
		t.Fatal(err)
	}
	y.Close(ctx)

	// Commit x only once the new instance of y reads the checkpoint topic.
	reading := make(chan struct{})
	var once sync.Once
	k.c.ControlKey(kmsg.Fetch.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		if req.(*kmsg.FetchRequest).IsolationLevel == 1 {
			once.Do(func() { close(reading) })
		}
		k.c.KeepControl()
		return nil, nil, false
	})
	type result struct {
		n   uint64
		err error
	}
	done := make(chan result, 1)
	y2 := newSink(t, propsFor("open-y"))
	defer y2.Close(ctx)
	go func() {
		if err := y2.Connect(ctx); err != nil {
			done <- result{err: err}
			return
		}
		n, err := y2.LastCommitted(ctx)
		done <- result{n, err}
	}()
	select {
	case <-reading:
	case r := <-done:
		t.Fatalf("LastCommitted returned %d, %v while an earlier transaction was open", r.n, r.err)
	}
	if err := x.Commit(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.err != nil || r.n != 5 {
		t.Fatalf("LastCommitted = %d, %v; want 5", r.n, r.err)
	}
}
