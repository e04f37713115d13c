package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Scenario is one MQTT end-to-end benchmark case.
type Scenario struct {
	Name   string
	Rate   int  // published messages per second
	Rules  int  // rules on the one stream
	Window bool // a 1 s tumbling window grouped by deviceId
	// Direct runs no rule: the subscriber reads the input topic, which
	// measures the publisher, broker and subscriber alone.
	Direct bool
	// InputQoS is the QoS of the input: the publisher's and the stream's
	// subscription's (0 by default).
	InputQoS byte
	// BrokerInflight is mosquitto's max_inflight_messages: how many QoS 1
	// messages it sends a client before waiting for acknowledgements (0:
	// unlimited; mosquitto's own default is 20).
	BrokerInflight int
	// Keys is the number of distinct deviceId values published (0: Keys).
	Keys int
}

func (sc Scenario) keys() int64 {
	if sc.Keys > 0 {
		return int64(sc.Keys)
	}
	return Keys
}

// Scenarios are issue 4's cases, by name.
var Scenarios = []Scenario{
	{Name: "filter10k", Rate: 10_000, Rules: 1},
	{Name: "filter40k", Rate: 40_000, Rules: 1},
	{Name: "window100keys", Rate: 10_000, Rules: 1, Window: true},
	{Name: "rules100", Rate: 5_000, Rules: 100},
	// 1,000 rules on one stream, one per deviceId (issue 20).
	{Name: "rules1000", Rate: 1_000, Rules: 1_000, Keys: 1_000},
	{Name: "direct10k", Rate: 10_000, Direct: true},
	{Name: "direct40k", Rate: 40_000, Direct: true},
	// QoS 1 input through a broker with mosquitto's default window of 20
	// unacknowledged messages per client: the rate is bounded by how soon
	// the engine acknowledges (at rule qos >= 1, once the record is in the
	// source log).
	{Name: "qos1in20k", Rate: 20_000, Rules: 1, InputQoS: 1, BrokerInflight: 20},
}

// FindScenario returns the scenario called name.
func FindScenario(name string) (Scenario, bool) {
	for _, s := range Scenarios {
		if s.Name == name {
			return s, true
		}
	}
	return Scenario{}, false
}

// RunConfig holds the settings shared by every run.
type RunConfig struct {
	Kuiperd    string        // kuiperd binary
	Dir        string        // a fresh folder per run is created under it
	Duration   time.Duration // publishing time
	Publishers int           // MQTT publisher connections; 0 chooses by rate
	RuleQoS    int           // rule option qos (0, 1, 2); checkpointInterval 1s when > 0
	Env        []string      // added to kuiperd's environment (GODEBUG=..., GOGC=...)
	ReadPace   string        // MQTT source property readPace ("" leaves the default)
	Protocol   string        // MQTT protocolVersion of the engine's source and sinks ("" leaves the default, 3.1.1)
	// Typed declares the input stream's four fields (seq BIGINT, ts
	// BIGINT, deviceId STRING, temperature FLOAT) instead of leaving it
	// schemaless, so that records decode into slots rather than maps.
	Typed bool
	// Floor adds a second subscriber, on the input topic, whose latency
	// (publisher → broker → subscriber, no engine) is the harness's floor
	// in the same run. It makes the broker deliver every input message
	// once more, so its CPU per message rises.
	Floor bool
	// Profiles, when set, is a folder for kuiperd's CPU profile
	// (<scenario>-cpu.pprof) and execution trace (<scenario>-trace.out)
	// of the publishing phase, taken from 2 s after its start (the CPU
	// profile for up to 10 s, the trace for 3 s).
	Profiles string
	// EKuiper, when set, runs eKuiper's kuiperd instead of Kuiperd (MQTT
	// scenarios): same stream, rules and harness.
	EKuiper *EKuiper
	// EKuiperShared declares eKuiper's stream SHARED="true": its rules
	// then share one source instance (one subscription, one decode), as
	// rekuiper's rules on a stream do by default; without it every
	// eKuiper rule subscribes on its own.
	EKuiperShared bool
	Logf          func(format string, args ...any)
}

// Result is the outcome of one scenario run. CPU figures are per
// published message: process CPU time (utime+stime) over the run divided
// by Published.
type Result struct {
	Scenario       string  `json:"scenario"`
	Engine         string  `json:"engine,omitempty"` // "ekuiper" for eKuiper's kuiperd, empty for rekuiper's
	RuleQoS        int     `json:"ruleQos"`
	Rules          int     `json:"rules"`
	Rate           int     `json:"rate"`
	DurationS      float64 `json:"durationSeconds"`
	Publishers     int     `json:"publishers"`
	Published      int64   `json:"published"`
	PublishRate    float64 `json:"achievedPublishRate"`
	PublishErrors  int64   `json:"publishErrors"`
	Expected       int64   `json:"expected"`              // messages (window: rows counted) that should come out
	Received       int64   `json:"received"`              // distinct messages (window: sum of counts) that came out
	OutMessages    int64   `json:"outMessages"`           // MQTT messages received on the output topics
	Lost           int64   `json:"lost"`                  // Expected - Received
	MissingSeqs    []int64 `json:"missingSeqs,omitempty"` // the first lost seqs (filter scenarios)
	RulesWithLoss  int     `json:"rulesWithLoss"`         // rules100: rules that lost at least one message
	MaxLostPerRule int64   `json:"maxLostPerRule"`        // rules100
	LostPerRule    []int64 `json:"lostPerRule,omitempty"`
	Duplicates     int64   `json:"duplicates"`
	BrokerDropped  int64   `json:"brokerDropped"` // mosquitto's $SYS dropped counter
	EngineIn       int64   `json:"engineIn"`      // sum of the rules' source records_in
	EngineOut      int64   `json:"engineOut"`     // sum of the rules' sink records_out
	EngineCPUUS    float64 `json:"engineCpuUsPerMsg"`
	BrokerCPUUS    float64 `json:"brokerCpuUsPerMsg"`
	BenchCPUUS     float64 `json:"benchCpuUsPerMsg"` // publisher + subscriber (this process)
	EngineCores    float64 `json:"engineCores"`      // engine CPU / wall time of the run
	BrokerCores    float64 `json:"brokerCores"`
	BenchCores     float64 `json:"benchCores"`
	PeakRSSMB      float64 `json:"peakRssMB"`
	LatencyP50MS   float64 `json:"latencyP50Ms"`
	LatencyP99MS   float64 `json:"latencyP99Ms"`
	LatencyMaxMS   float64 `json:"latencyMaxMs"`
	LatencyKind    string  `json:"latencyKind"`
	// The floor: the latency of the input messages at a subscriber of
	// the input topic in the same run (RunConfig.Floor).
	FloorP50MS float64 `json:"floorP50Ms,omitempty"`
	FloorP99MS float64 `json:"floorP99Ms,omitempty"`
	FloorMaxMS float64 `json:"floorMaxMs,omitempty"`
	// FloorBySecond is LatencyBySecond of the floor subscriber.
	FloorBySecond [][2]float64 `json:"floorBySecond,omitempty"`
	TailMS        float64      `json:"tailMs"` // from the last publish to the last output received
	// LatencyBySecond holds p50 and p99 (ms) per second of the run, by
	// the second the message was sent (window: the window end).
	LatencyBySecond [][2]float64 `json:"latencyBySecond"`
	PublisherMaxLag int64        `json:"publisherMaxLag"`
	// Broker says where the broker runs when it is not a child process
	// of its own (then BrokerCPUUS is 0 and its CPU is in BenchCPUUS).
	Broker string `json:"broker,omitempty"`
	// OutRate is Received divided by the time from the first publish to
	// the last output.
	OutRate float64 `json:"outRate,omitempty"`
	// InRate is, in backlog mode, Published divided by the time from the
	// rule's creation to the last output.
	InRate    float64 `json:"inRate,omitempty"`
	SinkBatch int     `json:"sinkBatchSize,omitempty"`
}

// Run executes one scenario: a fresh mosquitto, a fresh kuiperd, the
// stream and rules over REST, the subscriber, the paced publisher, then a
// drain until every expected output arrived or none came for 3 s.
func Run(ctx context.Context, sc Scenario, cfg RunConfig) (Result, error) {
	logf := cfg.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if cfg.EKuiper != nil && cfg.ReadPace != "" {
		return Result{}, errEKuiperReadPace
	}
	dir, err := os.MkdirTemp(cfg.Dir, sc.Name+"-qos"+strconv.Itoa(cfg.RuleQoS)+"-")
	if err != nil {
		return Result{}, fmt.Errorf("run folder: %w", err)
	}
	broker, err := StartMosquitto(dir, sc.BrokerInflight)
	if err != nil {
		return Result{}, err
	}
	defer broker.Stop(5 * time.Second)
	srcConf := fmt.Sprintf("default:\n  qos: %d\n  server: %s\n", sc.InputQoS, broker.URL())
	if cfg.ReadPace != "" {
		srcConf += fmt.Sprintf("  readPace: %q\n", cfg.ReadPace)
	}
	if cfg.Protocol != "" {
		srcConf += fmt.Sprintf("  protocolVersion: %q\n", cfg.Protocol)
	}
	etc := map[string]string{"mqtt_source.yaml": srcConf}
	d, rest, err := startDaemon(ctx, cfg, dir, etc)
	if err != nil {
		return Result{}, err
	}
	defer d.Stop(15 * time.Second)

	filter := "bench/out/#"
	if sc.Direct {
		filter = "bench/in"
	}
	sub, err := NewSubscriber(broker.URL(), filter, sc.Window)
	if err != nil {
		return Result{}, err
	}
	defer sub.Close()
	var floor *Subscriber
	if cfg.Floor && !sc.Direct {
		if floor, err = NewSubscriber(broker.URL(), "bench/in", false); err != nil {
			return Result{}, err
		}
		defer floor.Close()
	}

	if err := rest.CreateStream(streamSQL(cfg)); err != nil {
		return Result{}, err
	}
	ids := make([]string, sc.Rules)
	for i := range ids {
		ids[i] = fmt.Sprintf("r%d", i)
		if err := rest.CreateRule(ruleDef(sc, i, broker.URL(), cfg.RuleQoS, cfg.Protocol)); err != nil {
			return Result{}, err
		}
	}
	if _, err := rest.WaitRunning(len(ids), 100*time.Millisecond, 60*time.Second); err != nil {
		return Result{}, err
	}
	// The MQTT source subscribes asynchronously after the rule runs.
	time.Sleep(1500 * time.Millisecond)
	if sc.Window {
		// Start just after a second boundary so the first window is full.
		time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 50*time.Millisecond)))
	}

	pubs := cfg.Publishers
	if pubs <= 0 {
		pubs = max(1, sc.Rate/20_000)
	}
	cpu0, err := cpuOf(d.PID(), broker.PID())
	if err != nil {
		return Result{}, err
	}
	wall0 := time.Now()
	logf("%s qos %d: publishing %d msg/s for %s with %d client(s)", sc.Name, cfg.RuleQoS, sc.Rate, cfg.Duration, pubs)
	waitProfiles := func() {}
	if cfg.Profiles != "" && !sc.Direct {
		waitProfiles = profilePublishing(rest, cfg, sc.Name, logf)
	}
	ps, err := Publish(ctx, PublisherConfig{URL: broker.URL(), Topic: "bench/in", Rate: sc.Rate, Duration: cfg.Duration, Clients: pubs, QoS: sc.InputQoS, Keys: sc.Keys})
	if err != nil {
		return Result{}, err
	}
	exp, perRule := expected(sc, ps.Sent)
	pubEnd := time.Now()
	drain(ctx, sub, exp)
	waitProfiles()
	cpu1, err := cpuOf(d.PID(), broker.PID())
	if err != nil {
		return Result{}, err
	}
	wall := time.Since(wall0)
	mem, err := ReadMemory(d.PID())
	if err != nil {
		return Result{}, err
	}
	st := sub.Stats()

	res := Result{
		Scenario: sc.Name, RuleQoS: cfg.RuleQoS, Rules: sc.Rules, Rate: sc.Rate, DurationS: cfg.Duration.Seconds(),
		Publishers: pubs, Published: ps.Sent, PublishErrors: ps.Errors, PublishRate: float64(ps.Sent) / ps.Elapsed.Seconds(),
		PublisherMaxLag: ps.MaxLag, Expected: exp, Duplicates: st.Duplicates, BrokerDropped: st.Dropped,
		PeakRSSMB: float64(mem.Peak) / (1 << 20),
	}
	if cfg.EKuiper != nil {
		res.Engine = "ekuiper"
		if cfg.EKuiperShared {
			res.Engine = "ekuiper-shared"
		}
	}
	if sc.Window {
		res.Received, res.OutMessages, res.LatencyKind = st.WindowSum, st.Windows, "receive time - window end"
	} else {
		res.Received, res.OutMessages, res.LatencyKind = st.Unique, st.Unique+st.Duplicates, "receive time - send timestamp"
	}
	res.Lost = res.Expected - res.Received
	if res.Lost > 0 && !sc.Window && !sc.Direct && sc.Rules == 1 {
		res.MissingSeqs = sub.Missing(ps.Sent, func(seq int64) bool { return seq%Keys >= 50 }, 20)
	}
	if st.Last.After(pubEnd) {
		res.TailMS = float64(st.Last.Sub(pubEnd)) / 1e6
	}
	if sc.Rules > 1 {
		res.LostPerRule = make([]int64, sc.Rules)
		for i := range sc.Rules {
			lost := perRule[i] - st.PerTopic[outTopic(i)]
			res.LostPerRule[i] = lost
			if lost != 0 {
				res.RulesWithLoss++
			}
			res.MaxLostPerRule = max(res.MaxLostPerRule, lost)
		}
	}
	n := float64(ps.Sent)
	res.EngineCPUUS = us(cpu1.engine-cpu0.engine) / n
	res.BrokerCPUUS = us(cpu1.broker-cpu0.broker) / n
	res.BenchCPUUS = us(cpu1.self-cpu0.self) / n
	res.EngineCores = (cpu1.engine - cpu0.engine).Seconds() / wall.Seconds()
	res.BrokerCores = (cpu1.broker - cpu0.broker).Seconds() / wall.Seconds()
	res.BenchCores = (cpu1.self - cpu0.self).Seconds() / wall.Seconds()
	res.LatencyBySecond = bySecond(st.Latencies, st.At, wall0)
	res.LatencyP50MS, res.LatencyP99MS, res.LatencyMaxMS = percentiles(st.Latencies)
	if floor != nil {
		fs := floor.Stats()
		res.FloorBySecond = bySecond(fs.Latencies, fs.At, wall0) // before percentiles sorts Latencies
		res.FloorP50MS, res.FloorP99MS, res.FloorMaxMS = percentiles(fs.Latencies)
	}
	err = addEngineRecords(rest, &res, ids...)
	if err != nil && cfg.EKuiper != nil {
		// The engine metrics are a cross-check, not a result: an eKuiper
		// whose status answer differs leaves them at 0.
		logf("%s: eKuiper engine metrics unavailable: %v", sc.Name, err)
		res.EngineIn, res.EngineOut, err = 0, 0, nil
	}
	return res, err
}

// streamSQL is the input stream of the MQTT scenarios.
func streamSQL(cfg RunConfig) string {
	fields := ""
	if cfg.Typed {
		fields = "seq BIGINT, ts BIGINT, deviceId STRING, temperature FLOAT"
	}
	shared := ""
	if cfg.EKuiper != nil && cfg.EKuiperShared {
		shared = `, SHARED="true"`
	}
	return `CREATE STREAM bench (` + fields + `) WITH (DATASOURCE="bench/in", FORMAT="json", TYPE="mqtt"` + shared + `)`
}

// profilePublishing starts, 2 s from now, a CPU profile (up to 10 s, less
// when the run is shorter) and a 3 s execution trace of kuiperd, and
// returns the function that waits for both.
func profilePublishing(rest *REST, cfg RunConfig, name string, logf func(string, ...any)) (wait func()) {
	secs := max(1, min(10, int(cfg.Duration.Seconds())-3))
	var wg sync.WaitGroup
	for _, p := range []struct{ path, file string }{
		{"/debug/pprof/profile?seconds=" + strconv.Itoa(secs), name + "-cpu.pprof"},
		{"/debug/pprof/trace?seconds=3", name + "-trace.out"},
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(2 * time.Second)
			if err := rest.SaveProfile(p.path, filepath.Join(cfg.Profiles, p.file)); err != nil {
				logf("%s: %v", name, err)
			}
		}()
	}
	return wg.Wait
}

// addEngineRecords adds the rules' source records in and sink records out
// to res.
func addEngineRecords(rest *REST, res *Result, ids ...string) error {
	for _, id := range ids {
		m, err := rest.RuleMetrics(id)
		if err != nil {
			return err
		}
		for k, v := range m {
			switch {
			case strings.HasPrefix(k, "source_") && strings.HasSuffix(k, "_records_in_total"):
				res.EngineIn += int64(v)
			case strings.HasPrefix(k, "sink_") && strings.HasSuffix(k, "_records_out_total"):
				res.EngineOut += int64(v)
			}
		}
	}
	return nil
}

func outTopic(i int) string { return "bench/out/r" + strconv.Itoa(i) }

// ruleDef is rule i of scenario sc. Filter: half the messages pass
// (temperature > 50). Window: count per deviceId per second. rules100:
// rule i keeps deviceId "d<i>", 1 % of the stream each, so every message
// leaves through exactly one rule; rules1000 likewise with 1,000 keys.
func ruleDef(sc Scenario, i int, broker string, qos int, protocol string) map[string]any {
	var sql string
	switch {
	case sc.Window:
		sql = "SELECT deviceId, count(*) AS c, window_end() AS we FROM bench GROUP BY deviceId, TUMBLINGWINDOW(ss, 1)"
	case sc.Rules > 1:
		sql = fmt.Sprintf(`SELECT seq, ts, deviceId FROM bench WHERE deviceId = "d%d"`, int64(i)%sc.keys())
	default:
		sql = "SELECT seq, ts, deviceId, temperature FROM bench WHERE temperature > 50"
	}
	opts := map[string]any{"qos": qos}
	if qos > 0 {
		opts["checkpointInterval"] = 1000
	}
	sink := map[string]any{"server": broker, "topic": outTopic(i), "qos": 0, "sendSingle": true}
	if protocol != "" {
		sink["protocolVersion"] = protocol
	}
	return map[string]any{
		"id":      "r" + strconv.Itoa(i),
		"sql":     sql,
		"actions": []any{map[string]any{"mqtt": sink}},
		"options": opts,
	}
}

// expected returns how many outputs the n published messages (seq
// 0..n-1) should give, and per rule for multi-rule scenarios. In the
// window scenario it is the number of rows the windows should count.
func expected(sc Scenario, n int64) (int64, []int64) {
	switch {
	case sc.Window, sc.Direct:
		return n, nil
	case sc.Rules > 1:
		per := make([]int64, sc.Rules)
		keys := sc.keys()
		var total int64
		for i := range per {
			k := int64(i) % keys
			if k < n {
				per[i] = (n-1-k)/keys + 1
			}
			total += per[i]
		}
		return total, per
	default:
		// temperature = seq%Keys + 0.5 passes "> 50" when seq%Keys >= 50.
		var c int64
		for seq := int64(0); seq < n; seq++ {
			if seq%Keys >= 50 {
				c++
			}
		}
		return c, nil
	}
}

// receiver is what drain watches: a Subscriber or a KafkaConsumer.
type receiver interface {
	Received() int64
	LastReceive() time.Time
}

// drain waits until the subscriber has want, or nothing arrived for 3 s
// (more than a window's length).
func drain(ctx context.Context, sub receiver, want int64) {
	end := time.Now()
	for {
		if sub.Received() >= want {
			return
		}
		last := sub.LastReceive()
		if last.Before(end) {
			last = end
		}
		if time.Since(last) > 3*time.Second {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

type cpuSample struct{ engine, broker, self time.Duration }

func cpuOf(engine, broker int) (cpuSample, error) {
	var s cpuSample
	var err error
	if s.engine, err = CPUTime(engine); err != nil {
		return s, err
	}
	if s.broker, err = CPUTime(broker); err != nil {
		return s, err
	}
	s.self, err = SelfCPU()
	return s, err
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// percentiles returns p50, p99 and max of latencies (ns) in ms.
func percentiles(lat []int64) (p50, p99, mx float64) {
	if len(lat) == 0 {
		return 0, 0, 0
	}
	slices.Sort(lat)
	at := func(q float64) float64 {
		i := int(q * float64(len(lat)-1))
		return float64(lat[i]) / 1e6
	}
	return at(0.50), at(0.99), float64(lat[len(lat)-1]) / 1e6
}

// bySecond groups latencies by the second (since start) of their
// reference time and returns p50 and p99 of each second.
func bySecond(lat, at []int64, start time.Time) [][2]float64 {
	var buckets [][]int64
	for i, l := range lat {
		sec := int((at[i] - start.UnixNano()) / int64(time.Second))
		if sec < 0 {
			sec = 0
		}
		for len(buckets) <= sec {
			buckets = append(buckets, nil)
		}
		buckets[sec] = append(buckets[sec], l)
	}
	out := make([][2]float64, len(buckets))
	for i, b := range buckets {
		p50, p99, _ := percentiles(b)
		out[i] = [2]float64{round2(p50), round2(p99)}
	}
	return out
}

func round2(f float64) float64 { return float64(int64(f*100+0.5)) / 100 }
