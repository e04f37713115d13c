// Command kuiperbench is rekuiper's end-to-end benchmark. For each MQTT
// scenario it starts mosquitto and kuiperd as separate processes, creates
// the stream and rules over REST, runs a paced QoS 0 publisher and an
// independent subscriber, and reports messages in and out, losses, the
// engine's and the broker's CPU per message (from /proc), kuiperd's peak
// RSS and latency percentiles. The rules10k scenario measures the daemon
// with 10,000 rules: creation rate over REST, restart time and idle
// memory.
//
//	go run ./cmd/kuiperbench [-scenarios filter10k,filter40k,window100keys,rules100] [-duration 20s] [-qos 1,2] [-repeat 3] [-read-pace 250us] [-json out.json]
//	go run ./cmd/kuiperbench -scenario rules10k [-rules 10000] [-clients 4] [-idle-source memory,mqtt]
//	go run ./cmd/kuiperbench -scenarios kafka10k,kafkamax [-kafka-sink-batch 100] [-qos 2]
//
// The Kafka scenarios run franz-go's kfake cluster inside the benchmark
// process (its CPU counts as the benchmark's), kuiperd as a child process
// with a kafka stream and the filter rule writing to a kafka sink, both
// selecting one named connection, a producer (paced, or as fast as it can
// for kafkamax) and an independent read_committed consumer.
//
// qos1in20k publishes at QoS 1 and reads the stream at QoS 1 through a
// broker that keeps at most 20 unacknowledged messages in flight per
// client (mosquitto's default), so the engine's acknowledgements pace it.
//
// With -ekuiper PATH the MQTT scenarios run eKuiper v2's kuiperd instead
// of rekuiper's, through the same broker, publisher, subscriber and
// accounting, for a comparison column: PATH is eKuiper's kuiperd (its
// etc/ folder beside it or one folder up) or its installation folder.
// Each run gets a fresh base folder (KuiperBaseKey) with a copy of that
// etc/, the bench's mqtt_source.yaml over it and its own ports; the
// stream and rules are the ones sent to rekuiper. Result lines start with
// "eKuiper:". -read-pace (a rekuiper property) is refused. eKuiper gives
// every rule its own source instance (its own subscription) unless the
// stream is declared SHARED="true"; -ekuiper-shared declares it so, the
// equivalent of rekuiper's default, where rules on one stream share a
// subscription (it matters in rules100 and rules1000).
//
//	go run ./cmd/kuiperbench -scenarios filter40k -ekuiper /path/to/ekuiper/kuiperd
//
// direct10k and direct40k run no rule (the subscriber reads the input
// topic): the cost and latency of the publisher, broker and subscriber
// alone. Flags: go run ./cmd/kuiperbench -h.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rekuiper/rekuiper/bench"
	"github.com/rekuiper/rekuiper/qualify"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "kuiperbench: %v\n", err)
		os.Exit(1)
	}
}

type report struct {
	Machine  string               `json:"machine"`
	Date     string               `json:"date"`
	Command  string               `json:"command"`
	Results  []bench.Result       `json:"results,omitempty"`
	Daemon   []bench.DaemonResult `json:"daemon,omitempty"`
	QoSRatio []qosRatio           `json:"qosCpuRatio,omitempty"`
}

// qosRatio compares the median engine CPU per message at a rule qos with
// the median at qos 0, over the runs of one scenario.
type qosRatio struct {
	Scenario string    `json:"scenario"`
	RuleQoS  int       `json:"ruleQos"`
	Ratio    float64   `json:"engineCpuRatioToQos0"`
	CPU      []float64 `json:"engineCpuUsPerMsg"`     // per run at RuleQoS
	BaseCPU  []float64 `json:"qos0EngineCpuUsPerMsg"` // per run at qos 0
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("kuiperbench", flag.ContinueOnError)
	scen := fs.String("scenarios", "filter10k,filter40k,window100keys,rules100", "comma-separated scenarios: filter10k, filter40k, window100keys, rules100, rules1000, direct10k, direct40k, qos1in20k, rules10k, kafka10k, kafka10k-batch100, kafkamax")
	fs.StringVar(scen, "scenario", *scen, "alias of -scenarios")
	dur := fs.Duration("duration", 20*time.Second, "publishing time per MQTT scenario")
	protocol := fs.String("protocol", "", "MQTT scenarios: protocolVersion of kuiperd's source and sinks, 3.1.1 or 5 (empty: the default, 3.1.1)")
	readPace := fs.String("read-pace", "", "MQTT scenarios: the source connection's readPace property (e.g. 250us; empty: the default)")
	qos := fs.String("qos", "0", "comma-separated rule qos levels for the MQTT scenarios, checkpointInterval 1s above 0; a qos 0 run is always included and the others are reported relative to it (-qos 1,2)")
	repeat := fs.Int("repeat", 1, "MQTT and Kafka scenarios: run each qos level this many times, interleaved (0,1,2,0,1,2,…); qos ratios compare medians")
	pubs := fs.Int("publishers", 0, "MQTT publisher connections (0: one per 20k msg/s)")
	kafkaBatch := fs.Int("kafka-sink-batch", 0, "Kafka scenarios: the kafka sink's batchSize (0: the scenario's)")
	jsonOut := fs.String("json", "", "also write the results as JSON to this file")
	kuiperd := fs.String("kuiperd", "", "kuiperd binary (default: build ./cmd/kuiperd)")
	ekuiperShared := fs.Bool("ekuiper-shared", false, "with -ekuiper: declare the stream SHARED=\"true\", so eKuiper's rules share one source instance (one subscription) as rekuiper's do by default")
	ekuiper := fs.String("ekuiper", "", "MQTT scenarios: run eKuiper v2's kuiperd instead of rekuiper's, for a comparison: its binary (with eKuiper's etc/ folder beside it or one folder up) or its installation folder (etc/ and bin/kuiperd or kuiperd)")
	rules := fs.Int("rules", 10_000, "rules10k: number of rules")
	clients := fs.Int("clients", 4, "rules10k: concurrent REST clients")
	bufLen := fs.Int("rule-buffer", 0, "rules10k: bufferLength option of the rules (0: the default)")
	idle := fs.String("idle-source", "memory", "rules10k: idle stream type, memory or mqtt (comma-separated for both)")
	profiles := fs.String("profiles", "", "save kuiperd's profiles in this folder: rules10k, a CPU profile of the first 10 s of the create phase (create.pprof), a 2 s execution trace from 1 s into it (create-trace.out) and the heap of the idle rules (idle-heap.pprof); MQTT scenarios, a CPU profile (<scenario>-cpu.pprof, up to 10 s) and an execution trace (<scenario>-trace.out, 3 s) from 2 s into publishing (of the last run)")
	typed := fs.Bool("typed", false, "MQTT scenarios: declare the input stream's fields (seq BIGINT, ts BIGINT, deviceId STRING, temperature FLOAT) instead of a schemaless stream")
	floor := fs.Bool("floor", false, "MQTT scenarios: also subscribe to the input topic and report its latency, the harness floor of the same run (the broker then delivers every input message twice, so its CPU per message rises)")
	verbose := fs.Bool("v", false, "print p50/p99 latency per second of each run")
	var env []string
	fs.Func("kuiperd-env", "KEY=VALUE added to kuiperd's environment (repeatable), e.g. GODEBUG=gctrace=1", func(v string) error {
		if !strings.Contains(v, "=") {
			return errors.New("want KEY=VALUE")
		}
		env = append(env, v)
		return nil
	})
	keep := fs.Bool("keep", false, "keep the run folders (logs, data) instead of removing them")
	if err := fs.Parse(args); err != nil {
		return err
	}
	levels, err := parseInts(*qos)
	if err != nil {
		return fmt.Errorf("-qos: %w", err)
	}
	if !slices.Contains(levels, 0) {
		// The CPU ratio of qos 1 and 2 needs a qos 0 run to compare with.
		levels = append([]int{0}, levels...)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logf := func(f string, a ...any) { fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05 ")+f+"\n", a...) }

	dir, err := os.MkdirTemp("", "kuiperbench-")
	if err != nil {
		return err
	}
	if *keep {
		logf("run folders under %s", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	var ek *bench.EKuiper
	if *ekuiperShared && *ekuiper == "" {
		return errors.New("-ekuiper-shared needs -ekuiper")
	}
	if *ekuiper != "" {
		if *readPace != "" {
			return errors.New("-read-pace is a rekuiper source property; not with -ekuiper")
		}
		for _, name := range strings.Split(*scen, ",") {
			if _, ok := bench.FindScenario(strings.TrimSpace(name)); !ok {
				return fmt.Errorf("-ekuiper runs the MQTT scenarios only, not %q", strings.TrimSpace(name))
			}
		}
		found, err := bench.FindEKuiper(*ekuiper)
		if err != nil {
			return err
		}
		ek = &found
		logf("eKuiper: %s (etc from %s)", ek.Bin, ek.Etc)
	}
	bin := *kuiperd
	if bin == "" && ek == nil {
		root, err := moduleRoot()
		if err != nil {
			return err
		}
		logf("building kuiperd")
		if bin, err = qualify.Build(ctx, root, dir); err != nil {
			return err
		}
	}

	rep := report{Machine: bench.Machine() + ", " + runtime.Version(), Date: time.Now().Format("2006-01-02"),
		Command: "kuiperbench " + strings.Join(args, " ")}
	for _, name := range strings.Split(*scen, ",") {
		name = strings.TrimSpace(name)
		if name == "rules10k" {
			for _, src := range strings.Split(*idle, ",") {
				r, err := bench.RunDaemon(ctx, bench.DaemonConfig{Kuiperd: bin, Dir: dir, Rules: *rules, Clients: *clients, Source: strings.TrimSpace(src), Env: env, BufferLength: *bufLen, Logf: logf, Profiles: *profiles})
				if err != nil {
					return fmt.Errorf("rules10k: %w", err)
				}
				rep.Daemon = append(rep.Daemon, r)
				printDaemon(out, r)
			}
			continue
		}
		var runOne func(q int) (bench.Result, error)
		if sc, ok := bench.FindScenario(name); ok {
			runOne = func(q int) (bench.Result, error) {
				return bench.Run(ctx, sc, bench.RunConfig{Kuiperd: bin, Dir: dir, Duration: *dur, Publishers: *pubs, RuleQoS: q, Env: env, ReadPace: *readPace, Protocol: *protocol, Floor: *floor, Typed: *typed, Profiles: *profiles, EKuiper: ek, EKuiperShared: *ekuiperShared, Logf: logf})
			}
		} else if ks, ok := bench.FindKafkaScenario(name); ok {
			if *kafkaBatch > 0 {
				ks.SinkBatch = *kafkaBatch
			}
			runOne = func(q int) (bench.Result, error) {
				return bench.RunKafka(ctx, ks, bench.RunConfig{Kuiperd: bin, Dir: dir, Duration: *dur, RuleQoS: q, Env: env, Logf: logf})
			}
		} else {
			return fmt.Errorf("unknown scenario %q", name)
		}
		cpu := map[int][]float64{}
		rounds := max(*repeat, 1)
		for round := range rounds {
			for _, q := range levels {
				r, err := runOne(q)
				if err != nil {
					return fmt.Errorf("%s qos %d: %w", name, q, err)
				}
				rep.Results = append(rep.Results, r)
				printResult(out, r)
				if *verbose {
					fmt.Fprintf(out, "  p50/p99 ms by second: %v\n", r.LatencyBySecond)
					if r.FloorBySecond != nil {
						fmt.Fprintf(out, "  floor p50/p99 ms by second: %v\n", r.FloorBySecond)
					}
				}
				cpu[q] = append(cpu[q], r.EngineCPUUS)
				if q > 0 && round == rounds-1 {
					rt := qosRatio{Scenario: name, RuleQoS: q, Ratio: median(cpu[q]) / median(cpu[0]),
						CPU: cpu[q], BaseCPU: cpu[0]}
					rep.QoSRatio = append(rep.QoSRatio, rt)
					fmt.Fprintf(out, "  engine CPU per message at rule qos %d: %.2f× qos 0 (median of %v µs over median of %v µs)\n",
						q, rt.Ratio, rt.CPU, rt.BaseCPU)
				}
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}
	if *jsonOut != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", *jsonOut, err)
		}
	}
	return nil
}

// median of xs (the mean of the middle two for an even count).
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func printResult(w io.Writer, r bench.Result) {
	switch r.Engine {
	case "ekuiper":
		fmt.Fprint(w, "eKuiper: ")
	case "ekuiper-shared":
		fmt.Fprint(w, "eKuiper (SHARED stream): ")
	}
	fmt.Fprintf(w, "%s (rule qos %d, %d rule(s), %d msg/s × %.0f s, %d publisher(s))\n", r.Scenario, r.RuleQoS, r.Rules, r.Rate, r.DurationS, r.Publishers)
	fmt.Fprintf(w, "  published %d (%.0f msg/s achieved, %d errors, max lag %d)\n", r.Published, r.PublishRate, r.PublishErrors, r.PublisherMaxLag)
	fmt.Fprintf(w, "  expected %d, received %d (%d output messages), lost %d, duplicates %d, broker dropped %d\n", r.Expected, r.Received, r.OutMessages, r.Lost, r.Duplicates, r.BrokerDropped)
	if len(r.MissingSeqs) > 0 {
		fmt.Fprintf(w, "  first missing seqs: %v\n", r.MissingSeqs)
	}
	if r.Rules > 1 {
		fmt.Fprintf(w, "  rules with loss %d of %d, max lost by one rule %d\n", r.RulesWithLoss, r.Rules, r.MaxLostPerRule)
	}
	fmt.Fprintf(w, "  engine metrics: records in %d, records out %d\n", r.EngineIn, r.EngineOut)
	if r.Broker != "" {
		fmt.Fprintf(w, "  CPU µs/msg: engine %.2f, bench %.2f (%s); cores used: engine %.2f, bench %.2f\n",
			r.EngineCPUUS, r.BenchCPUUS, r.Broker, r.EngineCores, r.BenchCores)
		if r.InRate > 0 {
			fmt.Fprintf(w, "  sink batchSize %d; backlog read at %.0f msg/s in, %.0f msg/s out (rule creation to last output)\n", r.SinkBatch, r.InRate, r.OutRate)
		} else {
			fmt.Fprintf(w, "  sink batchSize %d; output %.0f msg/s (first publish to last output)\n", r.SinkBatch, r.OutRate)
		}
	} else {
		fmt.Fprintf(w, "  CPU µs/msg: engine %.2f, broker %.2f, bench %.2f; cores used: engine %.2f, broker %.2f, bench %.2f\n",
			r.EngineCPUUS, r.BrokerCPUUS, r.BenchCPUUS, r.EngineCores, r.BrokerCores, r.BenchCores)
	}
	fmt.Fprintf(w, "  kuiperd peak RSS %.1f MB; latency (%s) p50 %.2f ms, p99 %.2f ms, max %.2f ms; last output %.0f ms after the last publish\n", r.PeakRSSMB, r.LatencyKind, r.LatencyP50MS, r.LatencyP99MS, r.LatencyMaxMS, r.TailMS)
	if r.FloorP99MS > 0 {
		fmt.Fprintf(w, "  floor (subscriber on the input topic, same run): p50 %.2f ms, p99 %.2f ms, max %.2f ms\n", r.FloorP50MS, r.FloorP99MS, r.FloorMaxMS)
	}
}

func printDaemon(w io.Writer, r bench.DaemonResult) {
	fmt.Fprintf(w, "rules10k (%d rules on one idle %s stream, %d REST clients, bufferLength %d)\n", r.Rules, r.Source, r.Clients, r.BufferLength)
	fmt.Fprintf(w, "  create: %.1f s, %.0f rules/s, kuiperd CPU %.0f µs per rule; all running %.2f s after the last create\n", r.CreateSeconds, r.CreateRate, r.CreateCPUUS, r.AllRunningAfterS)
	fmt.Fprintf(w, "  before the rules (after a forced GC): live heap+stacks %.1f MB, RSS %.1f MB, %d goroutines\n", r.BaseLiveMB, r.BaseRSSMB, r.BaseGoroutines)
	fmt.Fprintf(w, "  idle: RSS as found %.1f MB (peak %.1f MB, %d collections during create); after a forced GC: live heap+stacks %.1f MB, RSS %.1f MB; %d goroutines, CPU %.3f cores; catalog %.1f MB\n",
		r.IdleFoundRSSMB, r.IdlePeakRSSMB, r.GCsDuringCreate, r.IdleLiveMB, r.IdleRSSMB, r.IdleGoroutines, r.IdleCPUCores, r.CatalogMB)
	fmt.Fprintf(w, "  per rule: %.1f KB live heap+stacks, %.1f KB RSS settled (%.1f KB as found), %.3f goroutines\n", r.RuleLiveKB, r.RuleKB, r.RuleFoundKB, r.RuleGoroutines)
	fmt.Fprintf(w, "  graceful stop %.2f s; restart: /ping after %.2f s, all running after %.2f s, RSS %.1f MB\n", r.StopSeconds, r.RestartPingS, r.RestartRunningS, r.RestartRSSMB)
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// moduleRoot finds the folder holding go.mod from the working directory up.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory; pass -kuiperd")
		}
		dir = parent
	}
}
