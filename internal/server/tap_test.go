package server_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/server/servertest"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

func mustCall(t *testing.T, method, url, body string, want int) string {
	t.Helper()
	resp, b := servertest.RequestJSON(t, method, url, body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d %s, want %d", method, url, resp.StatusCode, b, want)
	}
	return b
}

// memoryRule creates a memory stream on topic "in" and a running rule r1
// reading it. It returns once the rule's source has subscribed to the
// topic: rows published before that are not the rule's.
func memoryRule(t *testing.T, d *servertest.Daemon) {
	t.Helper()
	before := d.Memory.Subscribers()
	mustCall(t, "POST", d.URL+"/streams", `{"sql":"CREATE STREAM demo (v BIGINT) WITH (DATASOURCE=\"in\", TYPE=\"memory\", FORMAT=\"json\")"}`, 201)
	mustCall(t, "POST", d.URL+"/rules", `{"id":"r1","sql":"SELECT v * 2 AS w FROM demo","actions":[{"nop":{}}]}`, 201)
	testwait.Until(t, "rule r1 to subscribe to topic in", func() bool { return d.Memory.Subscribers() > before })
}

// tapEvents opens the tap of rule id and returns a function reading the
// next event's data.
func tapEvents(t *testing.T, url string) func() map[string]any {
	t.Helper()
	resp := openStream(t, url)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("tap: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(resp.Body)
	return func() map[string]any {
		// A missing event fails the test instead of hanging it.
		timer := time.AfterFunc(10*time.Second, func() { resp.Body.Close() })
		defer timer.Stop()
		for sc.Scan() {
			line, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var ev map[string]any
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatalf("tap event %q: %v", line, err)
			}
			return ev
		}
		t.Fatalf("tap stream ended: %v", sc.Err())
		return nil
	}
}

func TestRuleTapStreamsEmissions(t *testing.T) {
	d := servertest.Start(t, servertest.Options{})
	memoryRule(t, d)
	next := tapEvents(t, d.URL+"/rules/r1/tap")
	// The subscription is registered before the stream's headers are
	// sent, so rows published now reach it.
	for i := range 3 {
		d.Publish(t, "in", map[string]any{"v": int64(i)})
	}
	for i := range 3 {
		ev := next()
		rows, _ := ev["rows"].([]any)
		if len(rows) != 1 || rows[0].(map[string]any)["w"] != float64(2*i) {
			t.Fatalf("event %d: %v, want rows [{w: %d}]", i, ev, 2*i)
		}
		if _, ok := ev["dropped"]; ok {
			t.Fatalf("event %d reports drops: %v", i, ev)
		}
	}
}

func TestRuleTapUnknownRule(t *testing.T) {
	d := servertest.Start(t, servertest.Options{})
	resp, body := servertest.RequestJSON(t, "GET", d.URL+"/rules/nope/tap", "")
	if resp.StatusCode != 404 || !strings.Contains(body, "nope") {
		t.Fatalf("got %d %s, want 404 naming the rule", resp.StatusCode, body)
	}
}

func TestMetricsHistoryRoutes(t *testing.T) {
	d := servertest.Start(t, servertest.Options{})
	memoryRule(t, d)
	if resp, _ := servertest.RequestJSON(t, "GET", d.URL+"/rules/nope/metrics/history", ""); resp.StatusCode != 404 {
		t.Fatalf("unknown rule: %d, want 404", resp.StatusCode)
	}
	var empty struct {
		Interval int              `json:"interval"`
		Points   []map[string]any `json:"points"`
	}
	if err := json.Unmarshal([]byte(mustCall(t, "GET", d.URL+"/rules/r1/metrics/history", "", 200)), &empty); err != nil {
		t.Fatal(err)
	}
	if empty.Interval != 10 || empty.Points == nil || len(empty.Points) != 0 {
		t.Fatalf("before any sample: %+v, want interval 10 and an empty list", empty)
	}
	next := tapEvents(t, d.URL+"/rules/r1/tap")
	d.Publish(t, "in", map[string]any{"v": int64(1)})
	d.Publish(t, "in", map[string]any{"v": int64(2)})
	next()
	next()
	d.History.Sample()
	for _, path := range []string{"/rules/r1/metrics/history", "/metrics/history"} {
		var h struct {
			Points []struct {
				Time, RecordsIn, RecordsOut, Errors int64
			} `json:"points"`
		}
		if err := json.Unmarshal([]byte(mustCall(t, "GET", d.URL+path, "", 200)), &h); err != nil {
			t.Fatal(err)
		}
		if len(h.Points) != 1 || h.Points[0].RecordsIn != 2 || h.Points[0].Time == 0 {
			t.Fatalf("%s: %+v, want one point with 2 records in", path, h.Points)
		}
	}
}

func TestBrowserRootRedirectsToConsole(t *testing.T) {
	d := servertest.Start(t, servertest.Options{})
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, c := range []struct {
		accept   string
		redirect bool
	}{
		{"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", true},
		{"*/*", false},
		{"", false},
		{"application/json", false},
		{"text/html, application/json", false},
	} {
		req, _ := http.NewRequest("GET", d.URL+"/", nil)
		req.Header.Set("Accept", c.accept)
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		switch {
		case c.redirect && (resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/console/"):
			t.Errorf("Accept %q: %d to %q, want 302 to /console/", c.accept, resp.StatusCode, resp.Header.Get("Location"))
		case !c.redirect && (resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json"):
			t.Errorf("Accept %q: %d %s, want the JSON info", c.accept, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	}
}
