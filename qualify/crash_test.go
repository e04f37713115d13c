package qualify

import (
	"context"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/testwait"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// kuiperd builds the daemon once per test binary.
func kuiperd(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "rekuiper-qualify-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath, buildErr = Build(context.Background(), "..", dir)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// TestCrashRecoveryWindows runs an event-time tumbling window with count
// and sum per key over a rewindable file source read at a steady pace,
// kills kuiperd with SIGKILL at random moments, restarts it each time, and
// compares every emitted window with the one computed from the input.
// qos 2 and qos 1 must lose nothing and count nothing twice (identical
// repeats of an emitted window are sink duplicates, reported); qos 0
// reports its loss.
func TestCrashRecoveryWindows(t *testing.T) {
	if testing.Short() {
		t.Skip("process-level crash test; run without -short")
	}
	bin := kuiperd(t)
	for _, tc := range []struct {
		qos   int
		kills int
	}{{2, 20}, {1, 20}, {0, 5}} {
		t.Run("qos"+string(rune('0'+tc.qos)), func(t *testing.T) {
			rep := runCrashScenario(t, bin, tc.qos, tc.kills)
			t.Logf("qos %d after %d kills: %+v", tc.qos, tc.kills, rep)
			if tc.qos > 0 && !rep.OK() {
				t.Fatalf("qos %d lost or corrupted windows: %+v", tc.qos, rep)
			}
		})
	}
}

func runCrashScenario(t *testing.T, bin string, qos, kills int) WindowReport {
	dir := t.TempDir()
	const (
		n      = 12000
		keys   = 10
		base   = int64(1700000000000)
		stepMS = 10
	)
	recs := GenerateRecords(n, keys, base, stepMS)
	if err := WriteNDJSON(filepath.Join(dir, "input.json"), recs); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.lines")
	d, err := NewDaemon(bin, filepath.Join(dir, "kuiperd"), "")
	if err != nil {
		t.Fatal(err)
	}
	// The input and output files live next to the daemon's folders.
	d.Env = append(d.Env, "KUIPER__BASIC__ALLOWEXTERNALFILEACCESS=true")
	ctx := context.Background()
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer d.Kill()
	must := func(method, path string, body any) {
		t.Helper()
		if _, err := d.Do(method, path, body, nil); err != nil {
			t.Fatal(err)
		}
	}
	must(http.MethodPut, "/metadata/sources/file/confKeys/default", map[string]any{
		"path": dir, "fileType": "json", "sendInterval": "1ms",
	})
	must(http.MethodPost, "/streams", map[string]any{"sql": `CREATE STREAM src (seq BIGINT, key STRING, v BIGINT, ts BIGINT) WITH (DATASOURCE="input.json", TYPE="file", FORMAT="json", TIMESTAMP="ts")`})
	must(http.MethodPost, "/rules", map[string]any{
		"id":      "win",
		"sql":     "SELECT key, count(*) AS c, sum(v) AS s, window_start() AS ws FROM src GROUP BY key, TUMBLINGWINDOW(ss, 1)",
		"actions": []any{map[string]any{"file": map[string]any{"path": out, "fileType": "lines"}}},
		"options": map[string]any{"qos": qos, "checkpointInterval": "1s", "isEventTime": true, "lateTolerance": "0s"},
	})
	killAndRestart(t, d, rand.New(rand.NewPCG(uint64(qos), 7)), kills)
	waitStopped(t, d, "win", 3*time.Minute)
	d.Stop()
	observed, torn, err := ReadWindowResults(out)
	if err != nil {
		t.Fatal(err)
	}
	return CompareWindows(ExpectedWindows(recs, 1000), observed, torn)
}

// killAndRestart kills d with SIGKILL kills times, each 1 to 2 seconds
// (drawn from rng) after the last start, and starts it again each time.
func killAndRestart(t *testing.T, d *Daemon, rng *rand.Rand, kills int) {
	t.Helper()
	for i := range kills {
		// Pacing, not a wait: the kill lands at a random moment of the run.
		time.Sleep(time.Duration(1000+rng.IntN(1000)) * time.Millisecond)
		d.Kill()
		if err := d.Start(context.Background()); err != nil {
			t.Fatalf("restart %d: %v", i+1, err)
		}
	}
}

// waitStopped waits until the rule has consumed its bounded source and
// stopped: not running, starting or still stopping (draining its last
// windows).
func waitStopped(t *testing.T, d *Daemon, id string, limit time.Duration) {
	t.Helper()
	if !testwait.Poll(limit, func() bool {
		st, err := d.RuleStatus(id)
		return err == nil && st["status"] != "running" && st["status"] != "starting" && st["status"] != "stopping"
	}) {
		st, _ := d.RuleStatus(id)
		t.Fatalf("rule %s still running after %s: %v\n%s", id, limit, st["status"], d.Output())
	}
}
