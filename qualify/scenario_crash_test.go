package qualify

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"
)

// scenarioEnv returns an Env for a scenario test, skipping under -short.
// REKUIPER_QUALIFY_BIN names a prebuilt kuiperd to qualify instead of the
// current tree.
func scenarioEnv(t *testing.T) Env {
	t.Helper()
	if testing.Short() {
		t.Skip("process-level qualification scenario; run without -short")
	}
	bin := os.Getenv("REKUIPER_QUALIFY_BIN")
	if bin == "" {
		bin = kuiperd(t)
	}
	return Env{Bin: bin, Dir: t.TempDir(), Logf: t.Logf}
}

// skipNoBroker skips when mosquitto is missing and fails on other errors.
func skipNoBroker(t *testing.T, err error) {
	t.Helper()
	if errors.Is(err, ErrNoMosquitto) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestCrashMQTT is the issue-5 promise with a push source: an MQTT source
// (QoS 1 subscription, persistent session, durable source log at qos >= 1)
// fed by an independent publisher, 10 SIGKILLs per qos level, and no
// published record missing from the output at qos 1 and 2. qos 0 loss is
// logged as a figure.
func TestCrashMQTT(t *testing.T) {
	env := scenarioEnv(t)
	results, err := RunCrash(context.Background(), env, CrashParams{Kills: 10, Rate: 100, Duration: 8 * time.Second, Seed: 1})
	skipNoBroker(t, err)
	for _, r := range results {
		t.Run("qos"+string(rune('0'+r.Qos)), func(t *testing.T) {
			t.Logf("qos %d: %+v restarts %+v", r.Qos, r.Counts, r.Restarts)
			if r.Kills != 10 {
				t.Errorf("kills = %d, want 10", r.Kills)
			}
			if r.Counts.Sent < 700 {
				t.Errorf("publisher sent %d records, want about 800", r.Counts.Sent)
			}
			for _, v := range r.Violations() {
				t.Error(v)
			}
		})
	}
}

// TestCrashMQTTDefaultSession is issue 14's loss-free default: rule qos 1
// over a QoS 1 MQTT source with no session settings at all (no clientid,
// no enableClientSession), 5 SIGKILLs at 1,000 msg/s for 20 s, and no
// published record missing from the output (independent validator).
func TestCrashMQTTDefaultSession(t *testing.T) {
	env := scenarioEnv(t)
	results, err := RunCrash(context.Background(), env, CrashParams{Qos: []int{1}, Kills: 5, Rate: 1000,
		Duration: 20 * time.Second, Seed: 14, DefaultSession: true})
	skipNoBroker(t, err)
	if len(results) != 1 {
		t.Fatalf("%d results, want 1", len(results))
	}
	r := results[0]
	t.Logf("qos %d default session: %+v restarts %+v", r.Qos, r.Counts, r.Restarts)
	if !r.DefaultSession || r.Kills != 5 {
		t.Errorf("default session %v, kills %d; want true, 5", r.DefaultSession, r.Kills)
	}
	if r.Counts.Sent < 18000 {
		t.Errorf("publisher sent %d records, want about 20000", r.Counts.Sent)
	}
	for _, v := range r.Violations() {
		t.Error(v)
	}
}
