package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite" // the catalog's driver, to read its start markers

	"github.com/rekuiper/rekuiper/internal/client"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// hostileSimulator feeds every rule of the hostile tests: a row that asks
// lpad for 100 GB, then one that makes test_panic panic (and test_crash
// crash).
const hostileSimulator = `hostile:
  interval: 20ms
  data:
    - {"s": "x", "n": 100000000000}
    - {"s": "panic", "n": 1}
`

// TestHostileInputsLeaveTheDaemonUp runs a kuiperd built with the
// test-only functions and sends it what used to kill it: options and
// function arguments sized to exhaust memory, and a rule whose operator
// panics. Each is refused (422) or stops only its own rule. Then a rule
// crashes the process with a fatal error no recover stops: at the next
// boot that rule is left stopped with the reason, the others run.
func TestHostileInputsLeaveTheDaemonUp(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs kuiperd")
	}
	bin := buildDaemon(t, "-tags", "rekuiper_testfuncs")
	base := t.TempDir()
	if err := os.MkdirAll(filepath.Join(base, "etc", "sources"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "etc", "sources", "simulator.yaml"), []byte(hostileSimulator), 0o644); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, bin, base)
	ctx := context.Background()
	if _, err := d.c.CreateStream(ctx, client.Stream, `CREATE STREAM sim () WITH (TYPE="simulator", CONF_KEY="hostile", DATASOURCE="sim")`); err != nil {
		t.Fatal(err)
	}
	create := func(t *testing.T, id, sql string) {
		t.Helper()
		if _, err := d.c.CreateRule(ctx, ruleJSON(id, sql, "")); err != nil {
			t.Fatalf("create %s: %v", id, err)
		}
	}
	create(t, "healthy", "SELECT s FROM sim")

	t.Run("bufferLength beyond its bound is 422 everywhere", func(t *testing.T) {
		huge := ruleJSON("huge", "SELECT s FROM sim", `,"options":{"bufferLength":1000000000000}`)
		ruleset, _ := json.Marshal(map[string]any{"rules": map[string]string{"huge": string(huge)}})
		calls := map[string]func() error{
			"validate": func() error { _, err := d.c.ValidateRule(ctx, huge); return err },
			"create":   func() error { _, err := d.c.CreateRule(ctx, huge); return err },
			"replace":  func() error { _, err := d.c.UpdateRule(ctx, "huge", huge); return err },
			"import":   func() error { _, err := d.c.ImportRuleset(ctx, ruleset); return err },
		}
		for name, call := range calls {
			err := call()
			var ae *client.APIError
			if !errors.As(err, &ae) || ae.Status != http.StatusUnprocessableEntity ||
				!strings.Contains(ae.Message, "bufferLength 1000000000000") || !strings.Contains(ae.Message, "1048576") {
				t.Errorf("%s: %v; want 422 naming bufferLength, the value and the bound", name, err)
			}
		}
		// /data/import (partial: no reset first) answers 400 with the errors per rule, as eKuiper does.
		data, _ := json.Marshal(map[string]any{"rules": map[string]string{"huge": string(huge)}})
		resp, err := d.c.ImportData(ctx, data, true)
		var ie *client.APIError
		if !errors.As(err, &ie) || ie.Status != http.StatusBadRequest || !strings.Contains(ie.Message, "bufferLength 1000000000000") {
			t.Errorf("data import: %s, %v; want 400 with the rule's error", resp, err)
		}
		if _, err := d.c.GetRule(ctx, "huge"); err == nil {
			t.Error("a refused rule was stored")
		}
		// A sink property that sizes memory is bounded the same way.
		cached := []byte(`{"id":"cached","sql":"SELECT s FROM sim","actions":[{"log":{"enableCache":true,"memoryCacheThreshold":1000000000000}}]}`)
		_, err = d.c.CreateRule(ctx, cached)
		var ae *client.APIError
		if !errors.As(err, &ae) || ae.Status != http.StatusUnprocessableEntity || !strings.Contains(ae.Message, "memoryCacheThreshold 1000000000000: must be at most 1048576") {
			t.Errorf("sink cache threshold: %v; want 422 naming memoryCacheThreshold, the value and the bound", err)
		}
		mustPing(t, d)
	})

	t.Run("lpad beyond its bound", func(t *testing.T) {
		_, err := d.c.CreateRule(ctx, ruleJSON("lpad_const", "SELECT lpad(s, 100000000000) AS a FROM sim", ""))
		var ae *client.APIError
		if !errors.As(err, &ae) || ae.Status != http.StatusUnprocessableEntity || !strings.Contains(ae.Message, "lpad") || !strings.Contains(ae.Message, "1000000") {
			t.Errorf("constant argument: %v; want 422 naming lpad and its bound", err)
		}
		create(t, "lpad_field", "SELECT lpad(s, n) AS a FROM sim")
		waitStatus(t, d, "lpad_field", func(st map[string]any) bool {
			return st["status"] == "running" && metricContains(st, "_last_exception", "lpad: padding length 100000000000 exceeds the limit of 1000000")
		})
		mustPing(t, d)
	})

	t.Run("a panicking operator stops only its rule", func(t *testing.T) {
		create(t, "panics", "SELECT test_panic(s) AS a FROM sim")
		st := waitStatus(t, d, "panics", func(st map[string]any) bool { return st["status"] == "stopped by error" })
		if msg, _ := st["message"].(string); !strings.HasPrefix(msg, "panic: operator project") || !strings.Contains(msg, `test_panic called with "panic"`) {
			t.Errorf("message %q; want the operator's panic", msg)
		}
		for _, id := range []string{"healthy", "lpad_field"} {
			before := sinkRecordsIn(t, waitStatus(t, d, id, func(st map[string]any) bool { return st["status"] == "running" }))
			waitStatus(t, d, id, func(st map[string]any) bool { return st["status"] == "running" && sinkRecordsIn(t, st) > before })
		}
		mustPing(t, d)
	})

	// Only the crashing rule may be starting when the process dies: a
	// rule's start marker stays in the catalog until the rule has run 5s
	// (rounded up to a whole second) or stopped, and a marker left at the
	// crash would leave that rule stopped at the next boot.
	waitNoStartPending(t, filepath.Join(base, "data", "sqliteKV.db"))
	if _, err := d.c.DeleteRule(ctx, "panics"); err != nil {
		t.Fatal(err)
	}
	create(t, "crasher", "SELECT test_crash(s) AS a FROM sim")
	if err := d.cmd.Wait(); err == nil {
		t.Fatal("kuiperd exited cleanly; test_crash should have crashed it")
	}
	report, err := os.ReadFile(filepath.Join(base, "data", "crash.log"))
	if err != nil || !strings.Contains(string(report), "registerTestOnly") {
		t.Fatalf("crash report %q, %v", report, err)
	}

	t.Run("a rule that crashed the daemon while starting stays stopped", func(t *testing.T) {
		d := startDaemon(t, bin, base)
		for _, id := range []string{"healthy", "lpad_field"} {
			waitStatus(t, d, id, func(st map[string]any) bool { return st["status"] == "running" })
		}
		st := waitStatus(t, d, "crasher", func(st map[string]any) bool { return st["status"] != "starting" })
		if msg, _ := st["message"].(string); st["status"] != "stopped by error" ||
			!strings.Contains(msg, "crashed (fatal error; the report is in ") || !strings.Contains(msg, "crash.prev.log) while this rule was starting") {
			t.Fatalf("crasher after boot: %v %q", st["status"], msg)
		}
		raw, err := d.c.GetRule(ctx, "crasher")
		if err != nil || !strings.Contains(string(raw), `"triggered":false`) {
			t.Fatalf("crasher's definition %s, %v; want triggered false (wanted stopped)", raw, err)
		}
		mustPing(t, d)
	})
}

func ruleJSON(id, sql, extra string) []byte {
	return []byte(fmt.Sprintf(`{"id":%q,"sql":%q,"actions":[{"log":{}}]%s}`, id, sql, extra))
}

func mustPing(t *testing.T, d *daemon) {
	t.Helper()
	if err := d.c.Ping(context.Background()); err != nil {
		t.Fatalf("daemon down: %v", err)
	}
	if d.cmd.ProcessState != nil {
		t.Fatalf("daemon exited: %v", d.cmd.ProcessState)
	}
}

// waitStatus polls a rule's status until cond holds and returns it. The
// daemon must stay up meanwhile; the limit only bounds a hung test.
func waitStatus(t *testing.T, d *daemon, id string, cond func(map[string]any) bool) map[string]any {
	t.Helper()
	var st map[string]any
	var txt string
	if !testwait.Poll(testwait.Limit, func() bool {
		var err error
		if txt, err = d.c.RuleStatus(context.Background(), id); err != nil {
			t.Fatalf("status of %s: %v", id, err)
		}
		st = map[string]any{}
		if err := json.Unmarshal([]byte(txt), &st); err != nil {
			t.Fatalf("status of %s: %v", id, err)
		}
		return cond(st)
	}) {
		t.Fatalf("status of %s never reached the condition; last: %s", id, txt)
	}
	return st
}

// waitNoStartPending waits until the catalog at path, which a running
// daemon holds open, has no rule start marker left. It reads through a
// second, read-only connection, closed before it returns.
func waitNoStartPending(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)&_pragma=query_only(1)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	testwait.Until(t, "no rule start still pending (no start marker in the catalog)", func() bool {
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM rule_starts`).Scan(&n); err != nil {
			t.Fatalf("count rule start markers: %v", err)
		}
		return n == 0
	})
}

func metricContains(st map[string]any, suffix, text string) bool {
	for k, v := range st {
		if s, ok := v.(string); ok && strings.HasSuffix(k, suffix) && strings.Contains(s, text) {
			return true
		}
	}
	return false
}

func sinkRecordsIn(t *testing.T, st map[string]any) float64 {
	t.Helper()
	for k, v := range st {
		if strings.HasPrefix(k, "sink_") && strings.HasSuffix(k, "_records_in_total") {
			n, _ := v.(float64)
			return n
		}
	}
	t.Fatalf("no sink records_in_total in status %v", st)
	return 0
}
