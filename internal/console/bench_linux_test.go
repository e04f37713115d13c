package console_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/server/servertest"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// cpuTime is the CPU time (user + system) this process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRulePageCPU measures the daemon's CPU, as a percentage of one
// core, while a rule emits 10 results a second: with no console open
// ("idle"), and with one open rule page ("rule-page": the live tap plus the
// status and history polled 10 times a second). Each iteration is one
// second of wall time; the page's client runs in the same process, so the
// rule-page figure is an upper bound on the daemon's share.
//
//	go test -run '^$' -bench RulePageCPU -benchtime 10x ./internal/console/
func BenchmarkRulePageCPU(b *testing.B) {
	for _, page := range []bool{false, true} {
		name := "idle"
		if page {
			name = "rule-page"
		}
		b.Run(name, func(b *testing.B) { benchRulePage(b, page) })
	}
}

func benchRulePage(b *testing.B, page bool) {
	d := servertest.Start(b, servertest.Options{})
	post := func(path, body string) {
		resp, err := http.Post(d.URL+path, "application/json", strings.NewReader(body))
		if err != nil || resp.StatusCode != 201 {
			b.Fatalf("POST %s: %v %v", path, resp, err)
		}
		resp.Body.Close()
	}
	post("/streams", `{"sql":"CREATE STREAM demo (v BIGINT) WITH (DATASOURCE=\"in\", TYPE=\"memory\", FORMAT=\"json\")"}`)
	post("/rules", `{"id":"r1","sql":"SELECT v * 2 AS w FROM demo","actions":[{"nop":{}}]}`)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	every := func(d time.Duration, f func()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(d)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					f()
				}
			}
		}()
	}
	v := int64(0)
	every(100*time.Millisecond, func() {
		v++
		d.Publish(b, "in", map[string]any{"v": v})
	})
	get := func(path string) {
		req, _ := http.NewRequestWithContext(ctx, "GET", d.URL+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return // the benchmark is ending
		}
		io.Copy(io.Discard, resp.Body) //nolint:errcheck // drained only
		resp.Body.Close()
	}
	if page {
		wg.Add(1)
		go func() {
			defer wg.Done()
			get("/rules/r1/tap") // reads until the benchmark ends
		}()
		every(100*time.Millisecond, func() {
			get("/v2/rules/r1/status")
			get("/rules/r1/metrics/history")
		})
	}
	// Settle before measuring: the rule has sent a result out and, with
	// the page, the page's tap is open.
	testwait.Until(b, "the rule's first result (and the page's tap)", func() bool {
		st, err := d.Rules.Status("r1")
		if err != nil {
			b.Fatal(err)
		}
		n, _ := st.Metrics["sink_nop_0_0_records_out_total"].(int64)
		return n > 0 && (!page || d.Taps.Watching("r1"))
	})
	b.ResetTimer()
	start, wall := cpuTime(b), time.Now()
	for b.Loop() {
		// Pacing, not a wait: an iteration is one second of wall time,
		// over which the CPU the daemon used is measured.
		time.Sleep(time.Second)
	}
	used, elapsed := cpuTime(b)-start, time.Since(wall)
	b.ReportMetric(100*used.Seconds()/elapsed.Seconds(), "%core")
}
