package engine

import (
	"strings"
	"testing"

	"github.com/rekuiper/rekuiper/internal/connector/conformancetest"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// TestSinkConnectionStatusInMetrics runs a rule whose rest sink targets a
// closed port and checks that the rule's metrics (GET /rules/{id}/status)
// show the sink disconnected with the connect error.
func TestSinkConnectionStatusInMetrics(t *testing.T) {
	e := newTestEnv(t)
	run := startRule(t, e, `{"id":"down","sql":"SELECT v FROM s",
		"actions":[{"rest":{"url":"http://`+conformancetest.ClosedPort(t)+`/in","sendSingle":true}}]}`)
	if m := run.Metrics(); m["sink_rest_0_0_connection_status"] != int64(0) {
		t.Fatalf("before any request: connection_status %v, want 0 (connecting)", m["sink_rest_0_0_connection_status"])
	}
	e.publish(t, 1)
	var m map[string]any
	var msg string
	if !testwait.Poll(testwait.Limit, func() bool {
		m = run.Metrics()
		msg, _ = m["sink_rest_0_0_connection_last_disconnected_message"].(string)
		return m["sink_rest_0_0_connection_status"] == int64(-1) && strings.Contains(msg, "connection refused")
	}) {
		t.Fatalf("sink status not reported: status %v, message %q", m["sink_rest_0_0_connection_status"], msg)
	}
	if m["sink_rest_0_0_connection_last_disconnected_time"] == int64(0) {
		t.Fatalf("disconnected with no time: %v", m)
	}
}
