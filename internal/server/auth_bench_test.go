package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/auth"
	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/config"
	"github.com/rekuiper/rekuiper/internal/rulemgr"
	"github.com/rekuiper/rekuiper/internal/rulemgr/rulemgrtest"
	"github.com/rekuiper/rekuiper/internal/server"
)

// apiHandler is the API over a real catalog in a temporary folder, with
// etc as its etc folder and opts passed through edit.
func apiHandler(tb testing.TB, etc string, edit func(*server.Options)) http.Handler {
	tb.Helper()
	ctx := context.Background()
	dir := tb.TempDir()
	st, err := catalog.Open(ctx, filepath.Join(dir, "sqliteKV.db"), catalog.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	cat, err := catalog.New(ctx, st)
	if err != nil {
		tb.Fatal(err)
	}
	mgr := rulemgr.New(rulemgr.Config{Catalog: cat, Runner: rulemgrtest.New()})
	tb.Cleanup(func() {
		mgr.Close(ctx) //nolint:errcheck // test end
		st.Close()
	})
	cfg := config.Default()
	cfg.Paths = config.Paths{Etc: etc, Data: dir}
	opts := server.Options{Catalog: cat, Rules: mgr, Config: cfg}
	if edit != nil {
		edit(&opts)
	}
	return server.New(opts)
}

// statusServer is the API holding one running rule r1, with
// authentication on or off; token is valid when it is on.
func statusServer(b *testing.B, authOn bool) (h http.Handler, token string) {
	b.Helper()
	etc := b.TempDir()
	key := keyPair(b, etc, "bench.pub")
	token, err := auth.SignWithKey(key, auth.SignOptions{Issuer: "bench.pub", Subject: "bench", Expires: time.Now().Add(time.Hour)})
	if err != nil {
		b.Fatal(err)
	}
	h = apiHandler(b, etc, func(o *server.Options) { o.Config.Basic.Authentication = authOn })
	for _, step := range []struct{ path, body string }{{"/streams", demoDDL}, {"/rules", r1}} {
		req := httptest.NewRequest("POST", step.path, strings.NewReader(step.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", token)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 201 {
			b.Fatalf("POST %s: %d %s", step.path, rec.Code, rec.Body)
		}
	}
	return h, token
}

// getStatus sends n GET /rules/r1/status with token to h.
func getStatus(b *testing.B, h http.Handler, token string, n int) {
	for range n {
		req := httptest.NewRequest("GET", "/rules/r1/status", nil)
		req.Header.Set("Authorization", token)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatalf("status %d %s", rec.Code, rec.Body)
		}
	}
}

// BenchmarkRuleStatusAuth measures GET /rules/r1/status through the whole
// handler with authentication off and on (the same token on every request,
// as a client sends it). Besides wall time it reports cpu-ns/req, the CPU
// time of the benchmark's own thread, which the other processes of a
// shared machine do not inflate. -count runs each sub-benchmark N times in
// a row, so a change of load between them shows as a difference;
// docs/benchmarks.md alternates single runs of the two instead and
// compares them with benchstat -col /auth.
func BenchmarkRuleStatusAuth(b *testing.B) {
	for _, authOn := range []bool{false, true} {
		name := "auth=off"
		if authOn {
			name = "auth=on"
		}
		b.Run(name, func(b *testing.B) {
			h, token := statusServer(b, authOn)
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			b.ReportAllocs()
			b.ResetTimer()
			cpu := threadCPU()
			getStatus(b, h, token, b.N)
			cpu = threadCPU() - cpu
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/req")
		})
	}
}

// BenchmarkRuleStatusAuthInterleaved sends b.N GET /rules/r1/status to a
// server with authentication off and b.N to one with it on, in pairs of
// batches of 50 (off then on, then on then off, so that neither side is
// always second), and reports per request the wall and thread CPU time of
// each side and the cost of authentication in percent: of the totals
// (auth-cost-%, auth-cpu-cost-%) and the median over the pairs of the CPU
// difference (auth-cpu-median-%), which a burst of load from other
// processes during a few batches does not move.
func BenchmarkRuleStatusAuthInterleaved(b *testing.B) {
	const batch = 50
	off, _ := statusServer(b, false)
	on, token := statusServer(b, true)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var wall, cpu [2]time.Duration
	var diffs, offs []float64
	serve := func(side int, h http.Handler, n int) time.Duration {
		start, c := time.Now(), threadCPU()
		getStatus(b, h, token, n)
		used := threadCPU() - c
		cpu[side] += used
		wall[side] += time.Since(start)
		return used
	}
	b.ResetTimer()
	for done, pair := 0, 0; done < b.N; done, pair = done+batch, pair+1 {
		n := min(batch, b.N-done)
		var a, o time.Duration
		if pair%2 == 0 {
			o = serve(0, off, n)
			a = serve(1, on, n)
		} else {
			a = serve(1, on, n)
			o = serve(0, off, n)
		}
		diffs = append(diffs, float64(a-o)/float64(n))
		offs = append(offs, float64(o)/float64(n))
	}
	b.StopTimer()
	perReq := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N) }
	cost := func(d [2]time.Duration) float64 { return 100 * (float64(d[1]) - float64(d[0])) / float64(d[0]) }
	b.ReportMetric(perReq(wall[0]), "off-ns/req")
	b.ReportMetric(perReq(wall[1]), "on-ns/req")
	b.ReportMetric(cost(wall), "auth-cost-%")
	b.ReportMetric(perReq(cpu[0]), "off-cpu-ns/req")
	b.ReportMetric(perReq(cpu[1]), "on-cpu-ns/req")
	b.ReportMetric(cost(cpu), "auth-cpu-cost-%")
	b.ReportMetric(100*median(diffs)/median(offs), "auth-cpu-median-%")
}

func median(x []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	s := slices.Clone(x)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
