package console_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/rekuiper/rekuiper/internal/server/servertest"
)

// post sends a JSON body and fails the test unless the answer is 2xx.
func post(t *testing.T, url, body string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		t.Fatalf("POST %s: %d", url, resp.StatusCode)
	}
}

func ruleStatus(t *testing.T, url string) map[string]any {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestConsoleRulePanels: a rule with checkpoints and a sink cache shows
// both panels with the figures of its status.
func TestConsoleRulePanels(t *testing.T) {
	d := servertest.Start(t, servertest.Options{})
	post(t, d.URL+"/streams", `{"sql":`+jsString(goodDDL)+`}`)
	post(t, d.URL+"/rules", `{"id":"r1","sql":"SELECT v FROM demo","actions":[{"memory":{"topic":"out","enableCache":true}}],"options":{"qos":1,"checkpointInterval":"200ms"}}`)
	b := newBrowser(t)
	b.run("open the rule", chromedp.Navigate(d.URL+"/console/#/rules/r1"), visible("#checkpoints"))
	b.waitFor("a completed checkpoint", `document.querySelector('#checkpoints [data-fact="Last completed"]')?.textContent.startsWith("#")`)
	shown := b.text(`#checkpoints [data-fact="Last completed"]`)
	id, err := strconv.Atoi(strings.Fields(strings.TrimPrefix(shown, "#"))[0])
	if err != nil || id < 1 {
		t.Fatalf("last completed %q, want #<id> at <time>", shown)
	}
	st := ruleStatus(t, d.URL+"/v2/rules/r1/status")
	if last := st["checkpoint_last_id"].(float64); last < float64(id) {
		t.Errorf("page shows checkpoint %d, status has only %v", id, last)
	}
	// The panel is rendered anew every second: read the size from the
	// page as it stands, not from a node that a refresh may have replaced.
	b.waitFor("the checkpoint size in bytes", `document.querySelector('#checkpoints [data-fact="Size"]')?.textContent.endsWith("B")`)
	b.waitFor("the sink cache row", `!!document.querySelector('#sink-cache tr[data-sink="memory_0"]')`)
	for col, key := range map[string]string{"cache_memory_length": "sink_memory_0_0_cache_memory_length", "cache_disk_length": "sink_memory_0_0_cache_disk_length", "cache_records_replayed_total": "sink_memory_0_0_cache_records_replayed_total"} {
		want, ok := st[key].(float64)
		if !ok {
			t.Fatalf("status has no %s: %v", key, st)
		}
		if got := b.text(fmt.Sprintf(`#sink-cache tr[data-sink="memory_0"] td[data-col=%q]`, col)); got != strconv.FormatFloat(want, 'f', -1, 64) {
			t.Errorf("%s shown %q, status %v", col, got, want)
		}
	}
	b.screenshot("rule-panels")
}

// keyDown sends a key to an element as the keyboard does to its listeners.
func keyDown(sel, key string) chromedp.Action[chromedp.Void] {
	expr := fmt.Sprintf(`(() => { document.querySelector(%s).dispatchEvent(new KeyboardEvent("keydown", {key: %s, bubbles: true, cancelable: true})); return true })()`, jsString(sel), jsString(key))
	return script(expr)
}

// TestConsoleSQLEditor: the rule editor highlights the SQL and completes
// stream names, their fields and function names from the metadata routes.
func TestConsoleSQLEditor(t *testing.T) {
	d := servertest.Start(t, servertest.Options{})
	post(t, d.URL+"/streams", `{"sql":"CREATE STREAM sensors (temperature FLOAT) WITH (DATASOURCE=\"s\", TYPE=\"memory\", FORMAT=\"json\")"}`)
	b := newBrowser(t)
	b.run("open the rule form", chromedp.Navigate(d.URL+"/console/#/rules/new"), visible("#rule-sql"))

	complete := func(typed, label, kind, want string) {
		t.Helper()
		b.run("type "+typed, setValue("#rule-sql", typed))
		b.waitFor("the candidate "+label, fmt.Sprintf(`(() => { const li = document.querySelector('#rule-sql-complete:not([hidden]) li[data-label=%q]'); return !!li && li.textContent.includes(%q) })()`, label, kind))
		b.run("pick "+label, script(fmt.Sprintf(`(() => { const lis = [...document.querySelectorAll("#rule-sql-complete li")]; const i = lis.findIndex(li => li.dataset.label === %q); for (let k = 0; k < i; k++) document.querySelector("#rule-sql").dispatchEvent(new KeyboardEvent("keydown", {key: "ArrowDown", bubbles: true, cancelable: true})); return true })()`, label)), keyDown("#rule-sql", "Enter"))
		if got := value(b, "read the SQL", chromedp.Value(chromedp.CSS("#rule-sql"))); got != want {
			t.Errorf("after picking %s: %q, want %q", label, got, want)
		}
	}
	complete("SELECT tem", "temperature", "field of sensors", "SELECT temperature")
	complete("SELECT ab", "abs", "function", "SELECT abs")
	complete("SELECT abs(temperature) FROM sen", "sensors", "stream", "SELECT abs(temperature) FROM sensors")
	b.waitFor("the highlighting", `(() => { const hl = document.querySelector("#rule-sql-hl"); return hl.querySelector(".t-keyword")?.textContent === "SELECT" && hl.querySelector(".t-func")?.textContent === "abs" && hl.textContent === document.querySelector("#rule-sql").value + "\n" })()`)
	b.screenshot("sql-editor")
}
