package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// KafkaScenario is a Kafka end-to-end case: an in-process kfake cluster
// (in this process, so its CPU counts as the benchmark's), kuiperd as a
// child process with a kafka stream on topic bench-in and the filter rule
// writing to topic bench-out through a kafka sink, a producer and an
// independent read_committed consumer.
type KafkaScenario struct {
	Name string
	// Rate is the produced messages per second. 0 is backlog mode: before
	// the rule starts, 50,000 messages per second of the run's duration
	// are produced (1,000,000 for 20 s); the rule then reads the backlog as
	// fast as it can, which measures its maximum throughput (latency is
	// not measured: it would be the age of the backlog).
	Rate int
	// SinkBatch is the kafka sink's batchSize: 1 waits for the broker's
	// acknowledgement of every record.
	SinkBatch  int
	Partitions int32
}

// KafkaScenarios are issue 8's cases, by name.
var KafkaScenarios = []KafkaScenario{
	{Name: "kafka10k", Rate: 10_000, SinkBatch: 1, Partitions: 1},
	{Name: "kafka10k-batch100", Rate: 10_000, SinkBatch: 100, Partitions: 1},
	{Name: "kafkamax", Rate: 0, SinkBatch: 100, Partitions: 1},
}

// FindKafkaScenario returns the Kafka scenario called name.
func FindKafkaScenario(name string) (KafkaScenario, bool) {
	for _, s := range KafkaScenarios {
		if s.Name == name {
			return s, true
		}
	}
	return KafkaScenario{}, false
}

const (
	kafkaIn  = "bench-in"
	kafkaOut = "bench-out"
)

// backlogPerSecond is how many messages backlog mode produces per second
// of the run's duration.
const backlogPerSecond = 50_000

// RunKafka executes one Kafka scenario: kfake, a fresh kuiperd, a named
// kafka connection that the stream (through its confKey) and the sink
// select, the consumer, the producer, then a drain until every expected
// output arrived or none came for 3 s. In backlog mode (Rate 0) the
// messages are produced first and the measurement starts when the rule is
// created.
func RunKafka(ctx context.Context, sc KafkaScenario, cfg RunConfig) (Result, error) {
	logf := cfg.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	dir, err := os.MkdirTemp(cfg.Dir, sc.Name+"-qos"+strconv.Itoa(cfg.RuleQoS)+"-")
	if err != nil {
		return Result{}, fmt.Errorf("run folder: %w", err)
	}
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(max(sc.Partitions, 1), kafkaIn, kafkaOut))
	if err != nil {
		return Result{}, fmt.Errorf("start kfake: %w", err)
	}
	defer cluster.Close()
	brokers := strings.Join(cluster.ListenAddrs(), ",")

	d, rest, err := startDaemon(ctx, cfg, dir, nil)
	if err != nil {
		return Result{}, err
	}
	defer d.Stop(15 * time.Second)
	cons, err := NewKafkaConsumer(brokers, kafkaOut)
	if err != nil {
		return Result{}, err
	}
	defer cons.Close()
	backlog := sc.Rate <= 0
	var ps PublishStats
	var cpu0 cpuSample
	var wall0 time.Time
	if backlog {
		n := int64(backlogPerSecond * cfg.Duration.Seconds())
		logf("%s: producing a backlog of %d messages", sc.Name, n)
		if ps, err = ProduceKafka(ctx, brokers, kafkaIn, 0, n); err != nil {
			return Result{}, err
		}
		if cpu0, err = cpuOfEngine(d.PID()); err != nil {
			return Result{}, err
		}
		wall0 = time.Now()
		logf("%s qos %d: starting the rule", sc.Name, cfg.RuleQoS)
	}
	if err := setUpKafkaRule(rest, sc, cfg.RuleQoS, brokers); err != nil {
		return Result{}, err
	}
	if _, err := rest.WaitRunning(1, 100*time.Millisecond, 60*time.Second); err != nil {
		return Result{}, err
	}
	if !backlog {
		// The stream's source connects in the background after the rule
		// runs.
		time.Sleep(time.Second)
	}
	var conn struct {
		Status   string `json:"status"`
		RefCount int    `json:"refCount"`
		Clients  int    `json:"clients"`
	}
	if err := rest.Do(http.MethodGet, "/connections/bench", nil, &conn); err == nil {
		logf("%s: connection bench: %s, refCount %d, clients %d", sc.Name, conn.Status, conn.RefCount, conn.Clients)
	}
	if !backlog {
		if cpu0, err = cpuOfEngine(d.PID()); err != nil {
			return Result{}, err
		}
		wall0 = time.Now()
		logf("%s qos %d: producing %d msg/s for %s", sc.Name, cfg.RuleQoS, sc.Rate, cfg.Duration)
		if ps, err = ProduceKafka(ctx, brokers, kafkaIn, sc.Rate, int64(float64(sc.Rate)*cfg.Duration.Seconds())); err != nil {
			return Result{}, err
		}
	}
	exp, _ := expected(Scenario{Rules: 1}, ps.Sent)
	pubEnd := time.Now()
	drain(ctx, cons, exp)
	cpu1, err := cpuOfEngine(d.PID())
	if err != nil {
		return Result{}, err
	}
	wall := time.Since(wall0)
	mem, err := ReadMemory(d.PID())
	if err != nil {
		return Result{}, err
	}
	st := cons.Stats()
	res := Result{
		Scenario: sc.Name, RuleQoS: cfg.RuleQoS, Rules: 1, Rate: sc.Rate, DurationS: cfg.Duration.Seconds(),
		Publishers: 1, Published: ps.Sent, PublishErrors: ps.Errors, PublishRate: float64(ps.Sent) / ps.Elapsed.Seconds(),
		PublisherMaxLag: ps.MaxLag, Expected: exp, Duplicates: st.Duplicates,
		Received: st.Unique, OutMessages: st.Unique + st.Duplicates, LatencyKind: "receive time - produce timestamp",
		PeakRSSMB: float64(mem.Peak) / (1 << 20), Broker: "kfake in the bench process", SinkBatch: sc.SinkBatch,
	}
	res.Lost = res.Expected - res.Received
	if st.Last.After(pubEnd) {
		res.TailMS = float64(st.Last.Sub(pubEnd)) / 1e6
	}
	if st.Last.After(wall0) {
		res.OutRate = float64(res.Received) / st.Last.Sub(wall0).Seconds()
		if backlog {
			res.InRate = float64(ps.Sent) / st.Last.Sub(wall0).Seconds()
		}
	}
	n := float64(ps.Sent)
	res.EngineCPUUS = us(cpu1.engine-cpu0.engine) / n
	res.BenchCPUUS = us(cpu1.self-cpu0.self) / n
	res.EngineCores = (cpu1.engine - cpu0.engine).Seconds() / wall.Seconds()
	res.BenchCores = (cpu1.self - cpu0.self).Seconds() / wall.Seconds()
	if backlog {
		res.LatencyKind = "not measured (backlog)"
	} else {
		res.LatencyBySecond = bySecond(st.Latencies, st.At, wall0)
		res.LatencyP50MS, res.LatencyP99MS, res.LatencyMaxMS = percentiles(st.Latencies)
	}
	err = addEngineRecords(rest, &res, "r0")
	return res, err
}

// setUpKafkaRule creates the named connection "bench", a kafka confKey
// selecting it, the stream and the filter rule r0 whose sink selects it.
func setUpKafkaRule(rest *REST, sc KafkaScenario, qos int, brokers string) error {
	conn := map[string]any{"id": "bench", "typ": "kafka", "props": map[string]any{"brokers": brokers}}
	if err := rest.Do(http.MethodPost, "/connections", conn, nil); err != nil {
		return err
	}
	if err := rest.Do(http.MethodPut, "/metadata/sources/kafka/confKeys/bench", map[string]any{"connectionSelector": "bench"}, nil); err != nil {
		return err
	}
	ddl := fmt.Sprintf(`CREATE STREAM bench () WITH (DATASOURCE=%q, FORMAT="json", TYPE="kafka", CONF_KEY="bench")`, kafkaIn)
	if err := rest.CreateStream(ddl); err != nil {
		return err
	}
	opts := map[string]any{"qos": qos}
	if qos > 0 {
		opts["checkpointInterval"] = 1000
	}
	return rest.CreateRule(map[string]any{
		"id":  "r0",
		"sql": "SELECT seq, ts, deviceId, temperature FROM bench WHERE temperature > 50",
		"actions": []any{map[string]any{"kafka": map[string]any{
			"connectionSelector": "bench", "topic": kafkaOut, "sendSingle": true, "batchSize": sc.SinkBatch,
		}}},
		"options": opts,
	})
}

// cpuOfEngine samples kuiperd's CPU and this process's (producer, consumer
// and kfake).
func cpuOfEngine(engine int) (cpuSample, error) {
	var s cpuSample
	var err error
	if s.engine, err = CPUTime(engine); err != nil {
		return s, err
	}
	s.self, err = SelfCPU()
	return s, err
}

// ProduceKafka sends total messages (Payload, seq 0..total-1) to topic,
// paced as Publish does: every millisecond it produces what the schedule
// of rate messages per second says is due. With rate 0 it produces as fast
// as the client accepts records (it blocks while its buffer is full). Sent
// counts the records the broker acknowledged.
func ProduceKafka(ctx context.Context, brokers, topic string, rate int, total int64) (PublishStats, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...), kgo.DefaultProduceTopic(topic),
		kgo.ProducerLinger(0), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	if err != nil {
		return PublishStats{}, fmt.Errorf("kafka producer: %w", err)
	}
	defer cl.Close()
	var acked, errs atomic.Int64
	var firstErr error
	var once sync.Once
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			errs.Add(1)
			once.Do(func() { firstErr = err })
			return
		}
		acked.Add(1)
	}
	produce := func(seq int64) {
		cl.Produce(ctx, &kgo.Record{Value: Payload(seq, time.Now().UnixNano())}, promise)
	}
	start := time.Now()
	var maxLag int64
	var seq int64
	if rate <= 0 {
		for ; seq < total && ctx.Err() == nil; seq++ {
			produce(seq)
		}
	} else {
		tick := time.NewTicker(time.Millisecond)
	loop:
		for seq < total {
			select {
			case <-ctx.Done():
				break loop
			case now := <-tick.C:
				due := min(int64(now.Sub(start).Seconds()*float64(rate)), total)
				maxLag = max(maxLag, due-seq)
				for ; seq < due; seq++ {
					produce(seq)
				}
			}
		}
		tick.Stop()
	}
	if err := cl.Flush(ctx); err != nil {
		return PublishStats{}, fmt.Errorf("flush kafka producer: %w", err)
	}
	st := PublishStats{Sent: acked.Load(), Errors: errs.Load(), Elapsed: time.Since(start), MaxLag: maxLag}
	if st.Errors > 0 {
		return st, fmt.Errorf("%d of %d records not produced: %w", st.Errors, seq, firstErr)
	}
	return st, ctx.Err()
}

// KafkaConsumer reads a topic from the start with read_committed isolation
// (records of aborted transactions are skipped) and tallies the records as
// Subscriber does.
type KafkaConsumer struct {
	*tally
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
}

// NewKafkaConsumer starts consuming topic.
func NewKafkaConsumer(brokers, topic string) (*KafkaConsumer, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		return nil, fmt.Errorf("kafka consumer: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &KafkaConsumer{tally: newTally(false), cl: cl, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			if fs.IsClientClosed() {
				return
			}
			fs.EachRecord(func(r *kgo.Record) { c.record(r.Topic, r.Value) })
			fs.EachError(func(_ string, _ int32, err error) {
				if !errors.Is(err, context.Canceled) {
					c.mu.Lock()
					c.malformed++
					c.mu.Unlock()
				}
			})
		}
	}()
	return c, nil
}

// Close stops the consumer.
func (c *KafkaConsumer) Close() {
	c.cancel()
	<-c.done
	c.cl.Close()
}
