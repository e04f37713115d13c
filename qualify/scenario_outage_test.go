package qualify

import (
	"context"
	"testing"
	"time"
)

// TestBrokerOutage is the issue-6 promise with a real Mosquitto: the output
// broker is stopped for a few seconds (30 s in the issue; a parameter of
// RunOutage and of cmd/qualify) and started again; with the sink cache on,
// the validator sees every record exactly once, in order with
// resendPriority 1, replayed ones marked "resent"; with kuiperd killed
// during the outage and restarted before the broker returns, nothing is
// lost.
func TestBrokerOutage(t *testing.T) {
	env := scenarioEnv(t)
	results, err := RunOutage(context.Background(), env, OutageParams{Rate: 100, Outage: 4 * time.Second, Duration: 9 * time.Second})
	skipNoBroker(t, err)
	if len(results) != len(DefaultOutageVariants()) {
		t.Fatalf("ran %d variants, want %d", len(results), len(DefaultOutageVariants()))
	}
	for _, r := range results {
		t.Run(r.Name, func(t *testing.T) {
			t.Logf("%s: %+v cache %v recover %.2fs", r.Name, r.Counts, r.CacheMetrics, r.RecoverSeconds)
			if r.OutageSeconds < 4 {
				t.Errorf("outage lasted %.2fs, want >= 4s", r.OutageSeconds)
			}
			for _, v := range r.Violations() {
				t.Error(v)
			}
		})
	}
}
