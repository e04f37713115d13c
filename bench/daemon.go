package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// DaemonConfig sets up the daemon benchmark of issue 3.
type DaemonConfig struct {
	Kuiperd string
	Dir     string
	Rules   int // rules to create (10,000)
	Clients int // concurrent REST clients creating them
	// Source is the idle stream's type: "memory" or "mqtt" (a mosquitto
	// with no traffic).
	Source string
	Env    []string // added to kuiperd's environment (GODEBUG=..., GOGC=...)
	// BufferLength, when positive, sets the rules' bufferLength option.
	BufferLength int
	// Profiles, when set, is a folder for kuiperd's CPU profile of the
	// first 10 s of the create phase (create.pprof), an execution trace
	// of 2 s from 1 s into it (create-trace.out) and its heap profile with all rules idle
	// (idle-heap.pprof, after a forced collection).
	Profiles string
	Logf     func(format string, args ...any)
}

// DaemonResult holds the daemon figures.
type DaemonResult struct {
	Scenario         string  `json:"scenario"`
	Source           string  `json:"source"`
	Rules            int     `json:"rules"`
	Clients          int     `json:"clients"`
	BufferLength     int     `json:"bufferLength,omitempty"`
	CreateSeconds    float64 `json:"createSeconds"`
	CreateRate       float64 `json:"createRulesPerSecond"`
	CreateCPUUS      float64 `json:"createCpuUsPerRule"`           // kuiperd CPU (utime+stime) during the create phase / rules
	AllRunningAfterS float64 `json:"allRunningAfterCreateSeconds"` // after the last create answered
	BaseRSSMB        float64 `json:"baseRssMB"`                    // VmRSS with the stream and no rules, settled after a forced collection
	BaseLiveMB       float64 `json:"baseLiveMB"`                   // live heap + stacks with the stream and no rules, after a forced collection
	BaseGoroutines   int     `json:"baseGoroutines"`               // goroutines with the stream and no rules
	IdleFoundRSSMB   float64 `json:"idleFoundRssMB"`               // VmRSS with all rules running, 8 s after, as found (depends on when the collector last ran)
	IdleRSSMB        float64 `json:"idleRssMB"`                    // VmRSS with all rules running, settled after a forced collection
	IdleLiveMB       float64 `json:"idleLiveMB"`                   // live heap + stacks with all rules running, after a forced collection
	IdleGoroutines   int     `json:"idleGoroutines"`               // goroutines with all rules running
	GCsDuringCreate  int64   `json:"gcsDuringCreate"`              // collections between the base and idle samples
	RuleLiveKB       float64 `json:"ruleLiveKB"`                   // (idle − base live heap + stacks) / rules: the per-rule figure
	RuleKB           float64 `json:"ruleKB"`                       // (idle − base settled RSS) / rules
	RuleFoundKB      float64 `json:"ruleFoundKB"`                  // (idle as found − base settled RSS) / rules
	RuleGoroutines   float64 `json:"ruleGoroutines"`               // (idle − base goroutines) / rules
	IdlePeakRSSMB    float64 `json:"idlePeakRssMB"`                // VmHWM of that run
	IdleCPUCores     float64 `json:"idleCpuCores"`                 // CPU use over 5 s with all rules idle
	StopSeconds      float64 `json:"gracefulStopSeconds"`
	RestartPingS     float64 `json:"restartPingSeconds"`       // exec to first /ping answer
	RestartRunningS  float64 `json:"restartAllRunningSeconds"` // exec to all rules running
	RestartRSSMB     float64 `json:"restartRssMB"`
	CatalogMB        float64 `json:"catalogMB"`
}

// RunDaemon creates cfg.Rules rules on one idle stream with cfg.Clients
// concurrent clients, measures memory with all of them running, stops the
// daemon gracefully and restarts it, timing until all rules run again.
func RunDaemon(ctx context.Context, cfg DaemonConfig) (DaemonResult, error) {
	logf := cfg.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	res := DaemonResult{Scenario: "rules10k", Source: cfg.Source, Rules: cfg.Rules, Clients: cfg.Clients, BufferLength: cfg.BufferLength}
	dir, err := os.MkdirTemp(cfg.Dir, "rules10k-"+cfg.Source+"-")
	if err != nil {
		return res, fmt.Errorf("run folder: %w", err)
	}
	etc := map[string]string{}
	stream := `CREATE STREAM idle () WITH (DATASOURCE="bench/idle", FORMAT="json", TYPE="memory")`
	if cfg.Source == "mqtt" {
		broker, err := StartMosquitto(dir, 0)
		if err != nil {
			return res, err
		}
		defer broker.Stop(5 * time.Second)
		etc["mqtt_source.yaml"] = fmt.Sprintf("default:\n  qos: 0\n  server: %s\n", broker.URL())
		stream = `CREATE STREAM idle () WITH (DATASOURCE="bench/idle", FORMAT="json", TYPE="mqtt")`
	}
	d, err := NewDaemon(cfg.Kuiperd, filepath.Join(dir, "kuiperd"), etc)
	if err != nil {
		return res, err
	}
	// pprof on the REST port counts the daemon's goroutines.
	d.Env = append([]string{"KUIPER__BASIC__PPROF=true", "KUIPER__BASIC__PPROFIP=127.0.0.1",
		"KUIPER__BASIC__PPROFPORT=" + strconv.Itoa(d.Port)}, cfg.Env...)
	if _, err := d.Start(ctx); err != nil {
		return res, err
	}
	defer func() { d.Stop(30 * time.Second) }()
	rest := NewREST(d.URL())
	if err := rest.CreateStream(stream); err != nil {
		return res, err
	}
	time.Sleep(time.Second)
	if res.BaseGoroutines, err = rest.Goroutines(); err != nil {
		return res, err
	}
	base, err := settledMemory(rest, d.PID())
	if err != nil {
		return res, err
	}
	res.BaseRSSMB, res.BaseLiveMB = mb(base.rss), mb(base.heap.Live())

	logf("rules10k (%s): creating %d rules with %d clients", cfg.Source, cfg.Rules, cfg.Clients)
	var next atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	cpuCreate0, err := CPUTime(d.PID())
	if err != nil {
		return res, err
	}
	t0 := time.Now()
	waitCPU := func() error { return nil }
	if cfg.Profiles != "" {
		cpu := rest.StartCPUProfile(filepath.Join(cfg.Profiles, "create.pprof"), 10)
		trace := make(chan error, 1)
		go func() {
			time.Sleep(time.Second)
			trace <- rest.SaveProfile("/debug/pprof/trace?seconds=2", filepath.Join(cfg.Profiles, "create-trace.out"))
		}()
		waitCPU = func() error { return errors.Join(cpu(), <-trace) }
	}
	for range cfg.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= cfg.Rules || ctx.Err() != nil {
					return
				}
				rule := map[string]any{
					"id":      "r" + strconv.Itoa(i),
					"sql":     fmt.Sprintf("SELECT deviceId, temperature FROM idle WHERE temperature > %d", i%100),
					"actions": []any{map[string]any{"nop": map[string]any{}}},
				}
				if cfg.BufferLength > 0 {
					rule["options"] = map[string]any{"bufferLength": cfg.BufferLength}
				}
				if err := rest.CreateRule(rule); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	created := time.Since(t0)
	cpuCreate1, err := CPUTime(d.PID())
	if err != nil {
		return res, err
	}
	res.CreateCPUUS = float64((cpuCreate1 - cpuCreate0).Microseconds()) / float64(cfg.Rules)
	if err := waitCPU(); err != nil {
		logf("rules10k (%s): %v", cfg.Source, err)
	}
	if firstErr != nil {
		return res, firstErr
	}
	res.CreateSeconds = created.Seconds()
	res.CreateRate = float64(cfg.Rules) / created.Seconds()
	logf("rules10k (%s): created in %s (%.0f rules/s)", cfg.Source, created.Round(time.Millisecond), res.CreateRate)
	wait, err := rest.WaitRunning(cfg.Rules, 200*time.Millisecond, 5*time.Minute)
	if err != nil {
		return res, err
	}
	res.AllRunningAfterS = wait.Seconds()

	time.Sleep(3 * time.Second)
	c0, err := CPUTime(d.PID())
	if err != nil {
		return res, err
	}
	time.Sleep(5 * time.Second)
	c1, err := CPUTime(d.PID())
	if err != nil {
		return res, err
	}
	res.IdleCPUCores = (c1 - c0).Seconds() / 5
	mem, err := ReadMemory(d.PID())
	if err != nil {
		return res, err
	}
	res.IdleFoundRSSMB, res.IdlePeakRSSMB = mb(mem.RSS), mb(mem.Peak)
	if res.IdleGoroutines, err = rest.Goroutines(); err != nil {
		return res, err
	}
	idle, err := settledMemory(rest, d.PID())
	if err != nil {
		return res, err
	}
	res.IdleRSSMB, res.IdleLiveMB = mb(idle.rss), mb(idle.heap.Live())
	if cfg.Profiles != "" {
		if err := rest.SaveProfile("/debug/pprof/heap?gc=1", filepath.Join(cfg.Profiles, "idle-heap.pprof")); err != nil {
			return res, err
		}
	}
	res.GCsDuringCreate = idle.gcs - base.gcs - 3 // less the forced ones
	perRule := func(b int64) float64 { return float64(b) / 1024 / float64(cfg.Rules) }
	res.RuleLiveKB = perRule(idle.heap.Live() - base.heap.Live())
	res.RuleKB = perRule(idle.rss - base.rss)
	res.RuleFoundKB = perRule(mem.RSS - base.rss)
	res.RuleGoroutines = float64(res.IdleGoroutines-res.BaseGoroutines) / float64(cfg.Rules)

	t1 := time.Now()
	d.Stop(60 * time.Second)
	res.StopSeconds = time.Since(t1).Seconds()
	if fi, err := os.Stat(filepath.Join(d.Dir, "data", "sqliteKV.db")); err == nil {
		res.CatalogMB = mb(fi.Size())
	}

	logf("rules10k (%s): restarting with %d rules in the catalog", cfg.Source, cfg.Rules)
	t2 := time.Now()
	ping, err := d.Start(ctx)
	if err != nil {
		return res, err
	}
	res.RestartPingS = ping.Seconds()
	if _, err := rest.WaitRunning(cfg.Rules, 20*time.Millisecond, 5*time.Minute); err != nil {
		return res, err
	}
	res.RestartRunningS = time.Since(t2).Seconds()
	time.Sleep(3 * time.Second)
	if mem, err := ReadMemory(d.PID()); err == nil {
		res.RestartRSSMB = mb(mem.RSS)
	}
	return res, nil
}

// sampledMemory is one memory sample of the daemon.
type sampledMemory struct {
	heap HeapStats // the sample with the least live heap
	gcs  int64     // collections by the end of the sampling
	rss  int64
}

// settledMemory forces full collections through the profiler, three
// times a second apart, and keeps the smallest live heap (work under way
// at a collection, such as the metrics history sampling every rule, only
// adds to what is held for good). It then polls VmRSS until the runtime
// has returned what it will return to the OS (no drop of more than 1 % in
// a second, at most 30 s).
func settledMemory(rest *REST, pid int) (sampledMemory, error) {
	var s sampledMemory
	for i := range 3 {
		if i > 0 {
			time.Sleep(time.Second)
		}
		h, err := rest.HeapStats(true)
		if err != nil {
			return s, err
		}
		if i == 0 || h.Live() < s.heap.Live() {
			s.heap = h
		}
		s.gcs = h.NumGC
	}
	prev, err := ReadMemory(pid)
	if err != nil {
		return s, err
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		time.Sleep(time.Second)
		m, err := ReadMemory(pid)
		if err != nil {
			return s, err
		}
		settled := m.RSS > prev.RSS-prev.RSS/100
		prev = m
		if settled {
			break
		}
	}
	s.rss = prev.RSS
	return s, nil
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }
