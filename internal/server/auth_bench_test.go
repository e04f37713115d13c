package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
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

// BenchmarkRuleStatusAuth measures GET /rules/r1/status through the whole
// handler with authentication off and on (the same token on every request,
// as a client sends it). docs/benchmarks.md runs it with -benchtime=10000x.
func BenchmarkRuleStatusAuth(b *testing.B) {
	for _, authOn := range []bool{false, true} {
		name := "auth=off"
		if authOn {
			name = "auth=on"
		}
		b.Run(name, func(b *testing.B) {
			h, token := statusServer(b, authOn)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				req := httptest.NewRequest("GET", "/rules/r1/status", nil)
				req.Header.Set("Authorization", token)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Fatalf("status %d %s", rec.Code, rec.Body)
				}
			}
		})
	}
}

// BenchmarkRuleStatusAuthInterleaved sends b.N GET /rules/r1/status to a
// server with authentication off and b.N to one with it on, alternating in
// batches of 10 so that a change in the machine's load hits both alike,
// and reports the cost of authentication in percent.
func BenchmarkRuleStatusAuthInterleaved(b *testing.B) {
	off, _ := statusServer(b, false)
	on, token := statusServer(b, true)
	var spent [2]time.Duration
	serve := func(h http.Handler, n int) time.Duration {
		start := time.Now()
		for range n {
			req := httptest.NewRequest("GET", "/rules/r1/status", nil)
			req.Header.Set("Authorization", token)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != 200 {
				b.Fatalf("status %d %s", rec.Code, rec.Body)
			}
		}
		return time.Since(start)
	}
	b.ResetTimer()
	for done := 0; done < b.N; done += 10 {
		n := min(10, b.N-done)
		spent[0] += serve(off, n)
		spent[1] += serve(on, n)
	}
	b.StopTimer()
	b.ReportMetric(float64(spent[0].Nanoseconds())/float64(b.N), "off-ns/req")
	b.ReportMetric(float64(spent[1].Nanoseconds())/float64(b.N), "on-ns/req")
	b.ReportMetric(100*(float64(spent[1])-float64(spent[0]))/float64(spent[0]), "auth-cost-%")
}
