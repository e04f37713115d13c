package qualify

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// SoakParams configure the soak scenario.
type SoakParams struct {
	Rate     float64       // default 100
	Duration time.Duration // default 10 s (a real soak: hours)
	Interval time.Duration // sampling period (default 1 min, at most Duration/5)
	// MaxRSSSlope is the leak threshold in MB per hour (default 10).
	MaxRSSSlope float64
	// MinJudged is the shortest run whose RSS slope is judged (default
	// 10 min): over seconds the slope measures GC noise, not leaks.
	MinJudged time.Duration
	// MaxFDGrowth is how many more open files the daemon may hold at the
	// end than after warm-up (default 20).
	MaxFDGrowth int
	// MaxGoroutineGrowth is how many more goroutines the daemon may run at
	// the end than after warm-up (default 50).
	MaxGoroutineGrowth int
}

func (p SoakParams) withDefaults() SoakParams {
	if p.Rate == 0 {
		p.Rate = 100
	}
	if p.Duration == 0 {
		p.Duration = 10 * time.Second
	}
	if p.Interval == 0 {
		p.Interval = time.Minute
	}
	if p.Interval > p.Duration/5 {
		p.Interval = p.Duration / 5
	}
	if p.MaxRSSSlope == 0 {
		p.MaxRSSSlope = 10
	}
	if p.MinJudged == 0 {
		p.MinJudged = 10 * time.Minute
	}
	if p.MaxFDGrowth == 0 {
		p.MaxFDGrowth = 20
	}
	if p.MaxGoroutineGrowth == 0 {
		p.MaxGoroutineGrowth = 50
	}
	return p
}

// SoakResult is the account of a soak.
type SoakResult struct {
	Rate            float64      `json:"rate"`
	DurationSeconds float64      `json:"duration_seconds"`
	IntervalSeconds float64      `json:"interval_seconds"`
	Publish         PublishStats `json:"publisher"`
	Counts          SeqCounts    `json:"counts"`
	Samples         []ProcSample `json:"samples"`
	WarmupSamples   int          `json:"warmup_samples"` // leading samples left out of the slopes
	RSSSlope        float64      `json:"rss_slope_mb_per_hour"`
	ThreadSlope     float64      `json:"threads_slope_per_hour"`
	FDSlope         float64      `json:"fds_slope_per_hour"`
	GoroutineSlope  float64      `json:"goroutines_slope_per_hour"`
	RSSJudged       bool         `json:"rss_slope_judged"`
	MaxRSSSlope     float64      `json:"max_rss_slope_mb_per_hour"`
	RSSMaxMB        float64      `json:"rss_max_mb"`
	FDGrowth        int          `json:"fd_growth"`
	MaxFDGrowth     int          `json:"max_fd_growth"`
	GoroutineGrowth int          `json:"goroutine_growth"`
	MaxGoroutines   int          `json:"max_goroutine_growth"`
	CPUPercentMean  float64      `json:"cpu_percent_mean"`
	CPUMicrosPerMsg float64      `json:"cpu_us_per_message"`
	Seconds         float64      `json:"seconds"`
}

// Violations: lost records (the rule runs at qos 1), an RSS slope above the
// threshold on a run long enough to judge it, or open files or goroutines
// growing.
func (r SoakResult) Violations() []string {
	var v []string
	if r.Counts.Lost > 0 {
		v = append(v, fmt.Sprintf("soak: %d of %d records lost (first %v)", r.Counts.Lost, r.Counts.Sent, r.Counts.FirstLost))
	}
	if r.RSSJudged && r.RSSSlope > r.MaxRSSSlope {
		v = append(v, fmt.Sprintf("soak: RSS grows %.2f MB/hour, threshold %.2f", r.RSSSlope, r.MaxRSSSlope))
	}
	if r.FDGrowth > r.MaxFDGrowth {
		v = append(v, fmt.Sprintf("soak: open files grew by %d, threshold %d", r.FDGrowth, r.MaxFDGrowth))
	}
	if r.GoroutineGrowth > r.MaxGoroutines {
		v = append(v, fmt.Sprintf("soak: goroutines grew by %d, threshold %d", r.GoroutineGrowth, r.MaxGoroutines))
	}
	if len(r.Samples) < 3 {
		v = append(v, fmt.Sprintf("soak: only %d samples", len(r.Samples)))
	}
	return v
}

// RunSoak runs paced load through a qos 1 MQTT rule (plus a windowed
// aggregate over the same stream, to keep checkpoints carrying state) for
// Duration, samples the daemon's RSS, goroutines (Prometheus
// go_goroutines), threads, open files and CPU every
// Interval, and fits least-squares slopes after a warm-up (a tenth of the
// run, at most 10 minutes).
func RunSoak(ctx context.Context, env Env, p SoakParams) (SoakResult, error) {
	p = p.withDefaults()
	start := time.Now()
	res := SoakResult{Rate: p.Rate, DurationSeconds: p.Duration.Seconds(), IntervalSeconds: p.Interval.Seconds(),
		MaxRSSSlope: p.MaxRSSSlope, MaxFDGrowth: p.MaxFDGrowth, MaxGoroutines: p.MaxGoroutineGrowth}
	_, br, d, err := env.stage("soak", env.Bin)
	if err != nil {
		return res, err
	}
	defer br.Stop()
	// The Prometheus endpoint on the REST port gives go_goroutines.
	d.Env = append(d.Env, "KUIPER__BASIC__PROMETHEUS=true", fmt.Sprintf("KUIPER__BASIC__PROMETHEUSPORT=%d", d.Port))
	if err := d.Start(ctx); err != nil {
		return res, err
	}
	defer d.Kill()
	spec := PipelineSpec{Stream: "s", Rule: "soak", SourceServer: br.URL(), InTopic: "in/soak",
		SinkServer: br.URL(), OutTopic: "out/soak", RuleQos: 1}
	val, err := createValidated(ctx, d, spec, "validator-soak", "")
	if err != nil {
		return res, err
	}
	defer val.Close()
	if _, err := d.Do(http.MethodPost, "/rules", map[string]any{
		"id": "soakwin", "sql": "SELECT count(*) AS c, max(seq) AS last FROM s GROUP BY TUMBLINGWINDOW(ss, 10)",
		"actions": []any{map[string]any{"mqtt": map[string]any{"server": br.URL(), "topic": "out/soakwin", "qos": 1}}},
		"options": map[string]any{"qos": 1, "checkpointInterval": "1s"},
	}, nil); err != nil {
		return res, fmt.Errorf("create window rule: %w", err)
	}
	pub := StartPublisher(ctx, PublisherConfig{Server: br.URL(), ClientID: "publisher-soak",
		Topic: spec.InTopic, Rate: p.Rate, Duration: p.Duration})
	t0 := time.Now()
	sample := func() error {
		s, err := ReadProc(d.PID())
		if err != nil {
			return err
		}
		s.Goroutines, _ = ReadGoroutines(d.URL() + "/metrics")
		s.Elapsed = time.Since(t0).Seconds()
		s.Received = val.Unique()
		if n := len(res.Samples); n > 0 {
			prev := res.Samples[n-1]
			if dt := s.Elapsed - prev.Elapsed; dt > 0 {
				s.CPUPct = 100 * (s.CPUSecs - prev.CPUSecs) / dt
			}
		}
		res.Samples = append(res.Samples, s)
		return nil
	}
	if err := sample(); err != nil {
		return res, err
	}
	tick := time.NewTicker(p.Interval)
	end := t0.Add(p.Duration)
	for time.Now().Before(end) {
		select {
		case <-ctx.Done():
			tick.Stop()
			return res, ctx.Err()
		case <-tick.C:
		}
		if err := sample(); err != nil {
			tick.Stop()
			return res, err
		}
		last := res.Samples[len(res.Samples)-1]
		env.logf("soak %.0fs: rss %.1f MB, goroutines %d, threads %d, fds %d, cpu %.1f%%, received %d",
			last.Elapsed, last.RSSMB, last.Goroutines, last.Threads, last.FDs, last.CPUPct, last.Received)
	}
	tick.Stop()
	res.Publish = pub.Wait()
	val.Drain(ctx, res.Publish.Sent, 10*time.Second, 2*time.Minute, time.Second)
	res.Counts = val.Counts(res.Publish.Sent)
	res.analyze(p)
	res.Seconds = time.Since(start).Seconds()
	d.Stop()
	return res, nil
}

// analyze fits the slopes over the samples after warm-up.
func (r *SoakResult) analyze(p SoakParams) {
	warm := min(p.Duration/10, 10*time.Minute)
	var xs, rss, threads, fds, gor []float64
	for i, s := range r.Samples {
		r.RSSMaxMB = max(r.RSSMaxMB, s.RSSMB)
		if s.Elapsed < warm.Seconds() && len(r.Samples)-i > 2 {
			r.WarmupSamples++
			continue
		}
		hours := s.Elapsed / 3600
		xs = append(xs, hours)
		rss = append(rss, s.RSSMB)
		threads = append(threads, float64(s.Threads))
		fds = append(fds, float64(s.FDs))
		gor = append(gor, float64(s.Goroutines))
	}
	r.RSSSlope = Slope(xs, rss)
	r.ThreadSlope = Slope(xs, threads)
	r.FDSlope = Slope(xs, fds)
	r.GoroutineSlope = Slope(xs, gor)
	r.RSSJudged = p.Duration >= p.MinJudged
	if len(fds) > 0 {
		r.FDGrowth = int(fds[len(fds)-1] - fds[0])
		if gor[0] >= 0 && gor[len(gor)-1] >= 0 {
			r.GoroutineGrowth = int(gor[len(gor)-1] - gor[0])
		}
	}
	n := len(r.Samples)
	if n >= 2 {
		first, last := r.Samples[0], r.Samples[n-1]
		if dt := last.Elapsed - first.Elapsed; dt > 0 {
			r.CPUPercentMean = 100 * (last.CPUSecs - first.CPUSecs) / dt
		}
		if msgs := last.Received - first.Received; msgs > 0 {
			r.CPUMicrosPerMsg = 1e6 * (last.CPUSecs - first.CPUSecs) / float64(msgs)
		}
	}
}
