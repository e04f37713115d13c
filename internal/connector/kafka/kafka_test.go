package kafka

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/connector/conformancetest"
	"github.com/rekuiper/rekuiper/internal/connector/connectortest"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// cluster is an in-process Kafka cluster that can be restarted on the same
// port, keeping its data.
type cluster struct {
	mu   sync.Mutex
	c    *kfake.Cluster
	port int
	dir  string
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	k := &cluster{dir: t.TempDir()}
	k.start(t)
	t.Cleanup(func() { k.mu.Lock(); k.c.Close(); k.mu.Unlock() })
	return k
}

func (k *cluster) start(t *testing.T) {
	t.Helper()
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.DataDir(k.dir)}
	if k.port != 0 {
		opts = append(opts, kfake.Ports(k.port))
	}
	var err error
	// On a restart the old port may linger briefly.
	if !testwait.Poll(testwait.Limit, func() bool {
		k.c, err = kfake.NewCluster(opts...)
		return err == nil
	}) {
		t.Fatalf("start kfake: %v", err)
	}
	_, p, _ := net.SplitHostPort(k.c.ListenAddrs()[0])
	k.port, _ = strconv.Atoi(p)
}

func (k *cluster) addr() string { return "127.0.0.1:" + strconv.Itoa(k.port) }

// Restart implements conformancetest.Restarter.
func (k *cluster) Restart(t *testing.T) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.c.Close()
	k.start(t)
}

func (k *cluster) client(t *testing.T, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(k.addr())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func (k *cluster) createTopic(t *testing.T, name string, partitions int32) {
	t.Helper()
	adm := kadm.NewClient(k.client(t))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, partitions, 1, nil, name); err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
}

func (k *cluster) produce(t *testing.T, topic string, recs ...*kgo.Record) {
	t.Helper()
	cl := k.client(t)
	for _, r := range recs {
		r.Topic = topic
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// consume reads topic read_committed from the start until n records
// arrived or timeout passed. Records whose value starts with "marker" are
// counted in markers, not returned: with markers > 0 it reads until that
// many markers arrived instead.
func (k *cluster) consume(t *testing.T, topic string, n, markers int, timeout time.Duration) []*kgo.Record {
	t.Helper()
	cl := k.client(t, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var out []*kgo.Record
	seen := 0
	for ctx.Err() == nil {
		for _, r := range cl.PollFetches(ctx).Records() {
			if strings.HasPrefix(string(r.Value), "marker") {
				seen++
				continue
			}
			out = append(out, r)
		}
		if markers > 0 && seen >= markers || markers == 0 && len(out) >= n {
			return out
		}
	}
	if markers > 0 {
		t.Fatalf("saw %d of %d markers in topic %s", seen, markers, topic)
	}
	return out
}

func topicName(t *testing.T) string {
	return strings.NewReplacer("/", "-", " ", "-").Replace(t.Name()) + fmt.Sprint(time.Now().UnixNano())
}

type producer struct {
	*cluster
	topic string
}

func (p *producer) Produce(t *testing.T, payloads [][]byte) {
	recs := make([]*kgo.Record, len(payloads))
	for i, b := range payloads {
		recs[i] = &kgo.Record{Value: b}
	}
	p.produce(t, p.topic, recs...)
}

type reader struct {
	*cluster
	topic string
}

func (r *reader) Reset(*testing.T) {}

func (r *reader) Seqs(t *testing.T, want int, timeout time.Duration) []int64 {
	var out []int64
	for _, rec := range r.consume(t, r.topic, want, 0, timeout) {
		seq, err := conformancetest.DecodeSeq(&api.Message{Payload: rec.Value})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, seq)
	}
	return out
}

func invalid(base map[string]any) []conformancetest.InvalidCase {
	with := func(k string, v any) map[string]any { return conformancetest.With(base, k, v) }
	return []conformancetest.InvalidCase{
		{Name: "no brokers", Props: with("brokers", nil), WantErr: `"brokers" is required`},
		{Name: "bad broker", Props: with("brokers", "nohostport"), WantErr: "not host:port"},
		{Name: "bad sasl", Props: with("saslAuthType", "kerberos"), WantErr: "not one of"},
		{Name: "plain without user", Props: with("saslAuthType", "plain"), WantErr: "needs saslUserName"},
		{Name: "unknown prop", Props: with("brokerz", "x"), WantErr: "unknown properties: brokerz"},
	}
}

func TestSourceConformance(t *testing.T) {
	k := newCluster(t)
	p := &producer{cluster: k}
	conformancetest.RunSourceSuite(t, conformancetest.SourceFactory{
		Spec: SourceSpec(),
		New:  NewSource,
		Props: func(t *testing.T) map[string]any {
			p.topic = topicName(t)
			k.createTopic(t, p.topic, 1)
			return map[string]any{"brokers": k.addr(), "datasource": p.topic}
		},
		UnreachableProps: map[string]any{"brokers": connectortest.ClosedAddr(t), "datasource": "x", "connectTimeout": "500ms"},
		Invalid: append(invalid(map[string]any{"brokers": "127.0.0.1:1", "datasource": "t"}),
			conformancetest.InvalidCase{Name: "group and partition", Props: map[string]any{"brokers": "127.0.0.1:1", "datasource": "t", "groupID": "g", "partition": 1}, WantErr: "exclude each other"},
			conformancetest.InvalidCase{Name: "no topic", Props: map[string]any{"brokers": "127.0.0.1:1"}, WantErr: `"datasource" is required`},
		),
	}, p)
}

func TestSinkConformance(t *testing.T) {
	k := newCluster(t)
	r := &reader{cluster: k}
	conformancetest.RunSinkSuite(t, conformancetest.SinkFactory{
		Spec: SinkSpec(),
		New:  NewSink,
		Props: func(t *testing.T) map[string]any {
			r.topic = topicName(t)
			k.createTopic(t, r.topic, 1)
			return map[string]any{"brokers": k.addr(), "topic": r.topic, "requiredACKs": -1}
		},
		UnreachableProps: map[string]any{"brokers": connectortest.ClosedAddr(t), "topic": "x", "connectTimeout": "500ms"},
		Invalid: append(invalid(map[string]any{"brokers": "127.0.0.1:1", "topic": "t"}),
			conformancetest.InvalidCase{Name: "bad acks", Props: map[string]any{"brokers": "127.0.0.1:1", "topic": "t", "requiredACKs": 2}, WantErr: "not one of 0, 1, -1"},
			conformancetest.InvalidCase{Name: "bad compression", Props: map[string]any{"brokers": "127.0.0.1:1", "topic": "t", "compression": "brotli"}, WantErr: "not one of"},
			conformancetest.InvalidCase{Name: "bad template", Props: map[string]any{"brokers": "127.0.0.1:1", "topic": "t", "key": "{{.a"}, WantErr: "template"},
		),
	}, r)
}

func newSource(t *testing.T, props map[string]any) *Source {
	t.Helper()
	s, err := connectortest.Registry(t, Register).NewSource(Type, props, connector.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	return s.(*Source)
}

func newSink(t *testing.T, props map[string]any) *Sink {
	t.Helper()
	s, err := connectortest.Registry(t, Register).NewSink(Type, props, connector.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	return s.(*Sink)
}

func connectT(t *testing.T, c interface{ Connect(context.Context) error }) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Connect(ctx); err != nil {
		t.Fatalf("connect: %v", err)
	}
}

// readValues reads n records and returns "partition:value" strings.
func readValues(t *testing.T, s *Source, n int) map[string]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	out := map[string]bool{}
	for range n {
		m, err := s.Read(ctx)
		if err != nil {
			t.Fatalf("read after %d records: %v", len(out), err)
		}
		v := string(m.Payload)
		if out[v] {
			t.Fatalf("duplicate record %s", v)
		}
		out[v] = true
	}
	return out
}

// expectNothing checks that Read returns no record within d.
func expectNothing(t *testing.T, s *Source, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if m, err := s.Read(ctx); err == nil {
		t.Fatalf("unexpected record %s", m.Payload)
	}
}

func keyed(n, from int) []*kgo.Record {
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Key: []byte(strconv.Itoa(from + i)), Value: []byte("v" + strconv.Itoa(from+i))}
	}
	return recs
}

func TestSourcePartitionsAndRewind(t *testing.T) {
	k := newCluster(t)
	topic := topicName(t)
	k.createTopic(t, topic, 3)
	k.produce(t, topic, keyed(30, 0)...)

	s := newSource(t, map[string]any{"brokers": k.addr(), "datasource": topic})
	connectT(t, s)
	defer s.Close(context.Background())
	first := readValues(t, s, 10)
	off, err := s.Offset()
	if err != nil {
		t.Fatal(err)
	}
	rest := readValues(t, s, 20)
	for v := range first {
		if rest[v] {
			t.Fatalf("record %s read twice", v)
		}
	}
	expectNothing(t, s, 300*time.Millisecond)

	t.Run("rewind while connected", func(t *testing.T) {
		if err := s.Rewind(off); err != nil {
			t.Fatal(err)
		}
		again := readValues(t, s, 20)
		for v := range again {
			if !rest[v] {
				t.Fatalf("after rewind read %s, which was before the offset", v)
			}
		}
		expectNothing(t, s, 300*time.Millisecond)
	})
	t.Run("rewind before connect", func(t *testing.T) {
		s2 := newSource(t, map[string]any{"brokers": k.addr(), "datasource": topic})
		if err := s2.Rewind(off); err != nil {
			t.Fatal(err)
		}
		if err := s2.Rewind(off); err != nil { // idempotent
			t.Fatal(err)
		}
		connectT(t, s2)
		defer s2.Close(context.Background())
		again := readValues(t, s2, 20)
		for v := range again {
			if !rest[v] {
				t.Fatalf("after rewind read %s, which was before the offset", v)
			}
		}
	})
	t.Run("fixed partition", func(t *testing.T) {
		s3 := newSource(t, map[string]any{"brokers": k.addr(), "datasource": topic, "partition": 1})
		connectT(t, s3)
		defer s3.Close(context.Background())
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		m, err := s3.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if m.Meta["partition"] != int64(1) || m.Meta["topic"] != topic {
			t.Fatalf("meta %v, want partition 1 of %s", m.Meta, topic)
		}
	})
	t.Run("bad offsets", func(t *testing.T) {
		for _, b := range []string{`x`, `{"v":2,"topic":"` + topic + `"}`, `{"v":1,"topic":"other"}`, `{"v":1,"topic":"` + topic + `","next":{"a":1}}`} {
			if err := s.Rewind([]byte(b)); err == nil {
				t.Errorf("Rewind(%s) succeeded", b)
			}
		}
	})
}

// groupOffsets returns the committed offsets of group on topic by
// partition.
func (k *cluster) groupOffsets(t *testing.T, group, topic string) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	offs, err := kadm.NewClient(k.client(t)).FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic {
			out[o.Partition] = o.At
		}
	})
	return out
}

func sum(m map[int32]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

func TestSourceConsumerGroup(t *testing.T) {
	k := newCluster(t)
	topic := topicName(t)
	k.createTopic(t, topic, 2)
	k.produce(t, topic, keyed(10, 0)...)
	ctx := context.Background()

	t.Run("commits what Read returned on Close", func(t *testing.T) {
		props := map[string]any{"brokers": k.addr(), "datasource": topic, "groupID": "auto"}
		s := newSource(t, props)
		connectT(t, s)
		first := readValues(t, s, 6) // likely part of one fetch
		s.Close(ctx)
		if got := k.groupOffsets(t, "auto", topic); sum(got) != 6 {
			t.Fatalf("committed offsets %v after reading 6 records, want them to sum to 6", got)
		}
		k.produce(t, topic, keyed(4, 100)...)
		s2 := newSource(t, props)
		connectT(t, s2)
		defer s2.Close(ctx)
		for v := range readValues(t, s2, 8) {
			if first[v] {
				t.Fatalf("re-read committed record %s", v)
			}
		}
		expectNothing(t, s2, 300*time.Millisecond)
	})

	// Under checkpoints only CommitOffset commits. The topic now holds 14
	// records.
	props := map[string]any{"brokers": k.addr(), "datasource": topic, "groupID": "ckpt"}
	s := newSource(t, props)
	s.CommitOnCheckpoints()
	connectT(t, s)
	readValues(t, s, 10)
	off, err := s.Offset()
	if err != nil {
		t.Fatal(err)
	}
	readValues(t, s, 4)
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := s.CommitOffset(cctx, off); err != nil {
		t.Fatal(err)
	}
	s.Close(ctx)
	next, err := s.decodeOffset(off)
	if err != nil {
		t.Fatal(err)
	}
	got := k.groupOffsets(t, "ckpt", topic)
	if len(got) != len(next) {
		t.Fatalf("committed offsets %v, want %v", got, next)
	}
	for p, n := range next {
		if got[p] != n {
			t.Fatalf("committed offsets %v, want %v", got, next)
		}
	}

	t.Run("resumes at committed offsets", func(t *testing.T) {
		s2 := newSource(t, props)
		s2.CommitOnCheckpoints()
		connectT(t, s2)
		if got := readValues(t, s2, 4); len(got) != 4 {
			t.Fatalf("read %v", got)
		}
		expectNothing(t, s2, 300*time.Millisecond)
		s2.Close(ctx)
		if got := k.groupOffsets(t, "ckpt", topic); sum(got) != 10 {
			t.Fatalf("committed offsets %v after Close, want them left at a sum of 10", got)
		}
	})
	t.Run("rewind overrides the group", func(t *testing.T) {
		s3 := newSource(t, props)
		s3.CommitOnCheckpoints()
		if err := s3.Rewind([]byte(`{"v":1,"topic":"` + topic + `","next":{"0":0,"1":0}}`)); err != nil {
			t.Fatal(err)
		}
		connectT(t, s3)
		defer s3.Close(ctx)
		if got := readValues(t, s3, 14); len(got) != 14 {
			t.Fatalf("read %v", got)
		}
	})
	t.Run("bad offset", func(t *testing.T) {
		if err := s.CommitOffset(ctx, []byte(`{"v":1,"topic":"other"}`)); err == nil {
			t.Fatal("CommitOffset of another topic's offset succeeded")
		}
	})
	t.Run("without group", func(t *testing.T) {
		s4 := newSource(t, map[string]any{"brokers": k.addr(), "datasource": topic})
		if err := s4.CommitOffset(ctx, off); err != nil {
			t.Fatalf("CommitOffset without group: %v", err)
		}
	})
}

func msg(v string) *api.SinkMessage {
	return &api.SinkMessage{Rows: []map[string]any{{"id": v, "dev": "d" + v}}, Payload: []byte(v)}
}

func values(recs []*kgo.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = string(r.Value)
	}
	return out
}

func TestSinkTransactions(t *testing.T) {
	k := newCluster(t)
	topic := topicName(t)
	k.createTopic(t, topic, 3)
	props := map[string]any{"brokers": k.addr(), "topic": topic, "transactionalID": "rule1-0", "key": "id"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	write := func(s *Sink, vs ...string) {
		t.Helper()
		for _, v := range vs {
			if err := s.Write(ctx, msg(v)); err != nil {
				t.Fatalf("write %s: %v", v, err)
			}
		}
	}
	// committed puts a marker in each partition after everything the sink
	// committed and returns what a read_committed consumer sees before the
	// markers.
	markers := 0
	mcl := k.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	committed := func() []string {
		t.Helper()
		for p := range int32(3) {
			if err := mcl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte("marker")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		markers += 3
		return values(k.consume(t, topic, 0, markers, 10*time.Second))
	}
	// uncommitted: nothing may be visible while a transaction is open
	// (markers would wait behind it), so wait briefly for any record.
	nothingVisible := func() {
		t.Helper()
		if got := k.consume(t, topic, 1, 0, 500*time.Millisecond); len(got) != 0 {
			t.Fatalf("visible before Commit: %v", values(got))
		}
	}

	s := newSink(t, props)
	connectT(t, s)
	write(s, "a1", "a2", "a3")
	if err := s.PreCommit(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := s.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	if got := committed(); len(got) != 0 {
		t.Fatalf("aborted transaction visible: %v", got)
	}

	write(s, "b1", "b2")
	if err := s.PreCommit(ctx, 2); err != nil {
		t.Fatal(err)
	}
	write(s, "c1") // after the barrier: belongs to checkpoint 3
	nothingVisible()
	if err := s.Commit(ctx, 2); err != nil {
		t.Fatal(err)
	}
	// c1 is in a new open transaction now: markers cannot pass it.
	if got := strings.Join(sorted(values(k.consume(t, topic, 3, 0, time.Second))), ","); got != "b1,b2" {
		t.Fatalf("after commit 2 read_committed sees %s, want b1,b2", got)
	}
	if err := s.PreCommit(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(sorted(committed()), ","); got != "b1,b2,c1" {
		t.Fatalf("after commit 3 read_committed sees %s, want b1,b2,c1", got)
	}

	t.Run("crash before commit is fenced", func(t *testing.T) {
		write(s, "d1", "d2")
		if err := s.PreCommit(ctx, 4); err != nil {
			t.Fatal(err)
		}
		// s "crashes": a new instance with the same transactional id starts.
		s2 := newSink(t, props)
		connectT(t, s2)
		defer s2.Close(context.Background())
		write(s2, "e1")
		if err := s2.PreCommit(ctx, 4); err != nil {
			t.Fatal(err)
		}
		if err := s2.Commit(ctx, 4); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(sorted(committed()), ","); got != "b1,b2,c1,e1" {
			t.Fatalf("read_committed sees %s, want b1,b2,c1,e1", got)
		}
		if err := s.Commit(ctx, 4); err == nil {
			t.Fatal("fenced producer committed")
		}
		s.Close(context.Background())
	})
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func TestSinkRecordShape(t *testing.T) {
	k := newCluster(t)
	topic := topicName(t)
	k.createTopic(t, topic, 1)
	tests := []struct {
		name      string
		props     map[string]any
		wantKey   string
		wantHdr   string
		batchSize int
	}{
		{"key field and templated header", map[string]any{"key": "id", "headers": map[string]any{"device": "{{.dev}}"}}, "k1", "dk1", 1},
		{"key template, gzip, batched", map[string]any{"key": "{{.dev}}-x", "compression": "gzip", "batchSize": 3, "lingerInterval": 5}, "dk1-x", "", 3},
		{"literal key, zstd, acks 0", map[string]any{"key": "fixed", "compression": "zstd", "requiredACKs": 0}, "fixed", "", 1},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tp := fmt.Sprintf("%s-%d", topic, i)
			k.createTopic(t, tp, 1)
			props := map[string]any{"brokers": k.addr(), "topic": tp}
			for pk, pv := range tc.props {
				props[pk] = pv
			}
			s := newSink(t, props)
			connectT(t, s)
			for range tc.batchSize {
				if err := s.Write(context.Background(), msg("k1")); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			recs := k.consume(t, tp, tc.batchSize, 0, 10*time.Second)
			if len(recs) != tc.batchSize {
				t.Fatalf("got %d records, want %d", len(recs), tc.batchSize)
			}
			r := recs[0]
			if string(r.Key) != tc.wantKey || string(r.Value) != "k1" {
				t.Fatalf("key %q value %q, want key %q", r.Key, r.Value, tc.wantKey)
			}
			var hdr string
			for _, h := range r.Headers {
				if h.Key == "device" {
					hdr = string(h.Value)
				}
			}
			if hdr != tc.wantHdr {
				t.Fatalf("header device=%q, want %q", hdr, tc.wantHdr)
			}
		})
	}
}

func TestSASL(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(),
		kfake.Superuser("PLAIN", "admin", "secret"), kfake.Superuser("SCRAM-SHA-256", "admin", "secret"),
		kfake.SeedTopics(1, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := c.ListenAddrs()[0]
	tests := []struct {
		name    string
		props   map[string]any
		wantErr bool
	}{
		{"plain", map[string]any{"saslAuthType": "plain", "saslUserName": "admin", "password": "secret"}, false},
		{"scram sha256", map[string]any{"saslAuthType": "scram", "saslScramMechanism": "sha256", "saslUserName": "admin", "password": "secret"}, false},
		{"wrong password", map[string]any{"saslAuthType": "plain", "saslUserName": "admin", "password": "nope", "connectTimeout": "2s"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			props := map[string]any{"brokers": addr, "topic": "t"}
			for k, v := range tc.props {
				props[k] = v
			}
			s := newSink(t, props)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := s.Connect(ctx)
			if err == nil {
				err = s.Write(ctx, msg("x"))
			}
			s.Close(context.Background())
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
		})
	}
	if m := SinkSpec().Mask(map[string]any{"password": "secret"}); m["password"] != connector.MaskedValue {
		t.Fatalf("password not masked: %v", m)
	}
}
