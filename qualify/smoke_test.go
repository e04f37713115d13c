package qualify

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/procs"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// TestShippedConfigSmoke starts kuiperd with the shipped etc/ folder (only
// ports and service addresses overridden through the environment) and
// runs one rule per built-in source and sink that can be fed locally:
// simulator, memory, file, httppush, httppull and mqtt sources; log,
// memory, nop, file, rest and mqtt sinks. Every rule must be running with
// records in at its source and delivered by its sink, and what reached the
// REST endpoint and the output file is checked.
func TestShippedConfigSmoke(t *testing.T) {
	env := scenarioEnv(t)
	br, err := StartBroker(filepath.Join(env.Dir, "broker"))
	skipNoBroker(t, err)
	defer br.Stop()

	var (
		mu       sync.Mutex
		restGot  = map[string][]string{}
		pullHits int
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.Method == http.MethodGet {
			pullHits++
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"pull":%d}`, pullHits)
			return
		}
		b, _ := io.ReadAll(r.Body)
		restGot[r.URL.Path] = append(restGot[r.URL.Path], string(b))
	}))
	defer srv.Close()

	ports := make([]int, 2)
	for i := range ports {
		if ports[i], err = procs.FreePort(); err != nil {
			t.Fatal(err)
		}
	}
	pushPort := ports[0]
	d, err := NewDaemon(env.Bin, filepath.Join(env.Dir, "kuiperd"), filepath.Join("..", "etc"))
	if err != nil {
		t.Fatal(err)
	}
	d.Env = []string{
		"KUIPER__SOURCE__HTTPSERVERPORT=" + strconv.Itoa(pushPort),
		"KUIPER__BASIC__PPROFPORT=" + strconv.Itoa(ports[1]),
		"MQTT_SOURCE__DEFAULT__SERVER=" + br.URL(),
		"HTTPPULL__DEFAULT__URL=" + srv.URL,
		"HTTPPULL__DEFAULT__INTERVAL=200",
		// The test's HTTP server is on loopback, which the shipped
		// enablePrivateNet: false refuses to httppull and the rest sink.
		"KUIPER__BASIC__ENABLEPRIVATENET=true",
	}
	// The file source's shipped confKey reads from the data folder.
	if err := os.WriteFile(filepath.Join(d.Dir, "data", "smoke.json"), []byte(`[{"f":1},{"f":2}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer d.Stop()

	streams := []string{
		`CREATE STREAM sim () WITH (TYPE="simulator")`,
		`CREATE STREAM mem () WITH (TYPE="memory", DATASOURCE="smoke/mem")`,
		`CREATE STREAM fil () WITH (TYPE="file", DATASOURCE="smoke.json")`,
		`CREATE STREAM push () WITH (TYPE="httppush", DATASOURCE="/smoke")`,
		`CREATE STREAM pull () WITH (TYPE="httppull", DATASOURCE="/pull")`,
		`CREATE STREAM mq () WITH (TYPE="mqtt", DATASOURCE="smoke/in")`,
	}
	for _, sql := range streams {
		if _, err := d.Do(http.MethodPost, "/streams", map[string]any{"sql": sql}, nil); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	type smokeRule struct {
		id, stream, sinkType string
		sink                 map[string]any
	}
	rules := []smokeRule{
		{"r_sim_log", "sim", "log", map[string]any{}},
		// memory sink feeds the memory stream read by r_mem_nop.
		{"r_sim_memory", "sim", "memory", map[string]any{"topic": "smoke/mem"}},
		{"r_mem_nop", "mem", "nop", map[string]any{}},
		{"r_fil_file", "fil", "file", map[string]any{"path": "smoke_out.txt", "sendSingle": true}},
		{"r_push_rest", "push", "rest", map[string]any{"url": srv.URL + "/push", "sendSingle": true}},
		// mqtt sink feeds the mqtt stream read by r_mq_rest.
		{"r_pull_mqtt", "pull", "mqtt", map[string]any{"topic": "smoke/in", "sendSingle": true}},
		{"r_mq_rest", "mq", "rest", map[string]any{"url": srv.URL + "/mqtt", "sendSingle": true}},
	}
	for _, r := range rules {
		sink := map[string]any{"server": br.URL()} // only the mqtt sink has no shipped confKey here
		if r.sinkType != "mqtt" {
			sink = map[string]any{}
		}
		for k, v := range r.sink {
			sink[k] = v
		}
		if _, err := d.Do(http.MethodPost, "/rules", map[string]any{
			"id": r.id, "sql": "SELECT * FROM " + r.stream,
			"actions": []any{map[string]any{r.sinkType: sink}},
		}, nil); err != nil {
			t.Fatalf("rule %s: %v", r.id, err)
		}
	}

	pushURL := fmt.Sprintf("http://127.0.0.1:%d/smoke", pushPort)
	pending := map[string]string{}
	testwait.Poll(60*time.Second, func() bool {
		if resp, err := http.Post(pushURL, "application/json", bytes.NewReader([]byte(`{"p":1}`))); err == nil {
			resp.Body.Close()
		}
		clear(pending)
		for _, r := range rules {
			if r.id == "r_fil_file" {
				// The shipped file confKey reads once (interval 0): the
				// rule finishes; the output file is checked below.
				if st, err := d.RuleStatus(r.id); err != nil || st["status"] != "stopped" || st["message"] != "" {
					pending[r.id] = fmt.Sprintf("want a finished rule (stopped, no error): %v %v", st, err)
				}
				continue
			}
			if why := flowing(d, r.id, r.stream, r.sinkType); why != "" {
				pending[r.id] = why
			}
		}
		return len(pending) == 0
	})
	for id, why := range pending {
		t.Errorf("rule %s: %s", id, why)
	}
	mu.Lock()
	push, mq := restGot["/push"], restGot["/mqtt"]
	mu.Unlock()
	if len(push) == 0 || push[0] != `{"p":1}` {
		t.Errorf("rest sink of the httppush rule delivered %q", push)
	}
	if len(mq) == 0 || !strings.HasPrefix(mq[0], `{"pull":`) {
		t.Errorf("rest sink of the mqtt rule delivered %q", mq)
	}
	out, err := os.ReadFile(filepath.Join(d.Dir, "data", "smoke_out.txt"))
	if err != nil || string(out) != "{\"f\":1}\n{\"f\":2}\n" {
		t.Errorf("file sink wrote %q (%v)", out, err)
	}
	if t.Failed() {
		t.Logf("kuiperd output:\n%s", d.Output())
	}
}

// flowing returns why a rule does not yet show data flowing from its
// source through its sink, or "" when it does.
func flowing(d *Daemon, id, stream, sinkType string) string {
	st, err := d.RuleStatus(id)
	if err != nil {
		return err.Error()
	}
	if st["status"] != "running" {
		return fmt.Sprintf("status %v: %v", st["status"], st["message"])
	}
	in := asFloat(st["source_"+stream+"_0_records_in_total"])
	sink := "sink_" + sinkType + "_0_0_"
	out, exc := asFloat(st[sink+"records_out_total"]), asFloat(st[sink+"exceptions_total"])
	if exc > 0 {
		return fmt.Sprintf("sink exceptions %v: %v", exc, st[sink+"last_exception"])
	}
	if in == 0 || out == 0 {
		return fmt.Sprintf("source records in %v, sink records out %v", in, out)
	}
	return ""
}
