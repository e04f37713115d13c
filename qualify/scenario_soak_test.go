package qualify

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"
)

// TestSoakShort is a few seconds of the soak: it checks the sampling and
// the loss figures; the RSS slope is reported but judged only on runs of
// 10 minutes and more (cmd/qualify -mode soak).
func TestSoakShort(t *testing.T) {
	env := scenarioEnv(t)
	res, err := RunSoak(context.Background(), env, SoakParams{Rate: 100, Duration: 6 * time.Second, Interval: time.Second})
	if errors.Is(err, ErrNoProc) {
		t.Skip(err)
	}
	skipNoBroker(t, err)
	t.Logf("rss slope %.1f MB/h (judged %v), fds +%d, cpu %.1f%% %.0f us/msg, counts %+v",
		res.RSSSlope, res.RSSJudged, res.FDGrowth, res.CPUPercentMean, res.CPUMicrosPerMsg, res.Counts)
	if len(res.Samples) < 5 {
		t.Errorf("%d samples, want >= 5", len(res.Samples))
	}
	for _, s := range res.Samples {
		if s.RSSMB <= 0 || s.Threads <= 0 || s.FDs <= 0 || s.Goroutines <= 0 {
			t.Errorf("implausible sample %+v", s)
		}
	}
	if res.RSSJudged {
		t.Error("a 6 s run must not judge the RSS slope")
	}
	for _, v := range res.Violations() {
		t.Error(v)
	}
}

func TestSlope(t *testing.T) {
	for _, tc := range []struct {
		name   string
		xs, ys []float64
		want   float64
	}{
		{"flat", []float64{0, 1, 2, 3}, []float64{5, 5, 5, 5}, 0},
		{"line", []float64{0, 1, 2, 3}, []float64{1, 3, 5, 7}, 2},
		{"noisy", []float64{0, 1, 2, 3}, []float64{0, 2, 1, 3}, 0.8},
		{"one point", []float64{1}, []float64{4}, 0},
		{"same x", []float64{2, 2}, []float64{1, 5}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Slope(tc.xs, tc.ys); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("Slope = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSoakAnalyze(t *testing.T) {
	var r SoakResult
	// 20 samples over two hours, RSS +30 MB/h after a 12-minute warm-up
	// spike, fds constant.
	for i := 0; i < 20; i++ {
		el := float64(i) * 360
		rss := 50 + 30*el/3600
		if i == 0 {
			rss = 200
		}
		r.Samples = append(r.Samples, ProcSample{Elapsed: el, RSSMB: rss, Threads: 10, FDs: 30, CPUSecs: el / 100, Received: int64(el) * 100})
	}
	p := SoakParams{Duration: 2 * time.Hour}.withDefaults()
	r.MaxRSSSlope, r.MaxFDGrowth = p.MaxRSSSlope, p.MaxFDGrowth
	r.analyze(p)
	if r.WarmupSamples != 2 {
		t.Errorf("warm-up samples = %d, want 2 (12 minutes capped at 10)", r.WarmupSamples)
	}
	if math.Abs(r.RSSSlope-30) > 1e-6 || !r.RSSJudged {
		t.Errorf("RSS slope %.3f judged %v, want 30 judged", r.RSSSlope, r.RSSJudged)
	}
	if math.Abs(r.CPUPercentMean-1) > 1e-9 || math.Abs(r.CPUMicrosPerMsg-100) > 1e-6 {
		t.Errorf("cpu %.3f%% %.3f us/msg, want 1%% and 100 us", r.CPUPercentMean, r.CPUMicrosPerMsg)
	}
	if v := r.Violations(); len(v) != 1 {
		t.Errorf("violations %v, want exactly the RSS slope", v)
	}
}
