package server_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/config"
	"github.com/rekuiper/rekuiper/internal/server/servertest"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// openTap opens rule r1's tap; see openStream.
func openTap(t *testing.T, d *servertest.Daemon) *http.Response {
	t.Helper()
	return openStream(t, d.URL+"/rules/r1/tap")
}

// openStream sends GET url and returns the answer without reading it; the
// body is closed at the test's end.
func openStream(t *testing.T, url string) *http.Response {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestEventStreamsAreCapped(t *testing.T) {
	d := servertest.Start(t, servertest.Options{Config: func(cfg *config.Config) {
		cfg.Limits.MaxEventStreams, cfg.Limits.MaxEventStreamsPerRule = 3, 2
	}})
	memoryRule(t, d)
	for i := range 2 {
		if resp := openTap(t, d); resp.StatusCode != 200 {
			t.Fatalf("tap %d: %d", i, resp.StatusCode)
		}
	}
	resp := openTap(t, d)
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 429 || !strings.Contains(string(b), "limits.maxEventStreamsPerRule") || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("third tap of r1: %d %s (Retry-After %q), want 429 naming limits.maxEventStreamsPerRule", resp.StatusCode, b, resp.Header.Get("Retry-After"))
	}
	// Another stream (memory events) takes the last place in total; the
	// next one finds none.
	mem := openStream(t, d.URL+"/memory/events?topic=in")
	if mem.StatusCode != 200 {
		t.Fatalf("memory events: %d", mem.StatusCode)
	}
	resp = openStream(t, d.URL+"/memory/events?topic=other")
	b, _ = io.ReadAll(resp.Body)
	if resp.StatusCode != 503 || !strings.Contains(string(b), "limits.maxEventStreams ") {
		t.Fatalf("fourth stream: %d %s, want 503 naming limits.maxEventStreams", resp.StatusCode, b)
	}
	// A stream that ends gives its place back.
	mem.Body.Close()
	testwait.Until(t, "the closed stream's place to be free", func() bool {
		r := openStream(t, d.URL+"/memory/events?topic=other")
		defer r.Body.Close()
		return r.StatusCode == 200
	})
}

func TestEventStreamsEndWhenIdleOrOld(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*config.Limits)
	}{
		{"idle", func(l *config.Limits) { l.EventStreamIdleTimeout = config.Duration(200 * time.Millisecond) }},
		{"lifetime", func(l *config.Limits) { l.EventStreamLifetime = config.Duration(200 * time.Millisecond) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := servertest.Start(t, servertest.Options{Config: func(cfg *config.Config) { tc.set(&cfg.Limits) }})
			memoryRule(t, d)
			resp := openTap(t, d)
			if resp.StatusCode != 200 {
				t.Fatalf("tap: %d", resp.StatusCode)
			}
			done := make(chan error, 1)
			go func() { _, err := io.Copy(io.Discard, resp.Body); done <- err }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("the stream broke instead of ending: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the stream did not end")
			}
		})
	}
}

func TestUnauthenticatedRequestsAreRationed(t *testing.T) {
	d := servertest.Start(t, servertest.Options{Config: func(cfg *config.Config) {
		cfg.Basic.Authentication = true
		cfg.Limits.UnauthenticatedRate, cfg.Limits.UnauthenticatedBurst = 0.001, 5
	}})
	token := d.Token(t)
	statuses := map[int]int{}
	var last string
	for range 8 {
		resp, body := servertest.Request(t, "GET", d.URL+"/rules", "", map[string]string{"Authorization": "Bearer wrong"})
		statuses[resp.StatusCode]++
		last = body
	}
	if statuses[401] != 5 || statuses[429] != 3 || !strings.Contains(last, "limits.unauthenticatedRate") {
		t.Fatalf("8 requests with a bad token: %v (last %s), want 5 401s then 3 429s naming the limit", statuses, last)
	}
	// A valid token always gets in, and open paths stay open.
	if resp, body := servertest.Request(t, "GET", d.URL+"/rules", "", map[string]string{"Authorization": "Bearer " + token}); resp.StatusCode != 200 {
		t.Fatalf("valid token after the flood: %d %s", resp.StatusCode, body)
	}
	if resp, _ := servertest.Request(t, "GET", d.URL+"/ping", "", nil); resp.StatusCode != 200 {
		t.Fatalf("ping after the flood: %d", resp.StatusCode)
	}
}
