package console_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/rekuiper/rekuiper/internal/server/servertest"
)

// replayAPI posts a case to the daemon as any client would and decodes
// the answer.
func replayAPI(t *testing.T, url, body string) map[string]any {
	t.Helper()
	resp, err := http.Post(url+"/rules/replay", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
		t.Fatalf("POST /rules/replay: %d %v %v", resp.StatusCode, out, err)
	}
	return out
}

// TestConsoleRuleTest: load a stream's definition from the catalog, write
// inputs and an expectation with one wrong emission, run, and see the
// match and the difference marked as the API judges them; then take the
// actual output as the expectation and pass; an SQL error is marked at its
// position.
func TestConsoleRuleTest(t *testing.T) {
	d := servertest.Start(t, servertest.Options{})
	post(t, d.URL+"/streams", `{"sql":"CREATE STREAM sensor (id BIGINT, temp FLOAT) WITH (DATASOURCE=\"sensor\", TYPE=\"memory\", FORMAT=\"json\")"}`)
	b := newBrowser(t)
	b.run("open the rule test page", chromedp.Navigate(d.URL+"/console/"), visible("#version"),
		click(`a[data-nav="ruletest"]`), visible("#rt-form"))
	b.waitFor("the catalog's streams", `!!document.querySelector('#rt-pick option[value="stream:sensor"]')`)

	// Every control has a label, so the page works by keyboard and with a
	// screen reader.
	unlabelled := value(b, "find unlabelled controls", chromedp.Evaluate[[]string](`[...document.querySelectorAll("#rt-form input, #rt-form textarea, #rt-form select")].filter(el => !document.querySelector('label[for="' + el.id + '"]')).map(el => el.id || el.outerHTML)`))
	if len(unlabelled) != 0 {
		t.Errorf("controls without a label: %v", unlabelled)
	}

	b.run("load the stream's definition", setValue("#rt-streams", ""), setValue("#rt-inputs", ""), choose("#rt-pick", "stream:sensor"), click("#rt-load"))
	b.waitFor("the definition and a sample record", `document.querySelector("#rt-streams").value.startsWith("CREATE STREAM sensor") && document.querySelector("#rt-inputs").value === '0 sensor {"id": 0, "temp": 0.0}'`)

	b.run("fill the form",
		setValue("#rt-sql", "SELECT id, temp FROM sensor WHERE temp > 30"),
		setValue("#rt-inputs", "100 {\"id\": 1, \"temp\": 21.5}\n200 {\"id\": 2, \"temp\": 31.0}\n300 sensor {\"id\": 3, \"temp\": 35.5}"),
		setValue("#rt-expected", "[{\"id\": 2, \"temp\": 31.0}]\n[{\"id\": 3, \"temp\": 99.5}]"),
		click(`#rt-form button[type="submit"]`))
	b.waitFor("the verdict and the marked emission", `document.querySelector("#rt-verdict").dataset.passed === "false" && !!document.querySelector("#rt-results tr.differs")`)
	b.screenshot("rule-test-mismatch")

	// The page's verdict is the API's for the same case: the page shows
	// the case it sent, so post that text directly.
	built := value(b, "read the built case", chromedp.Evaluate[string](`document.querySelector("#rt-case").textContent`))
	api := replayAPI(t, d.URL, built)
	if api["passed"] != false {
		t.Fatalf("API verdict %v for the page's case, want false", api["passed"])
	}
	emissions := api["runs"].([]any)[0].(map[string]any)["emissions"].([]any)
	if len(emissions) != 2 {
		t.Fatalf("API emissions %v, want 2", emissions)
	}
	for _, raw := range emissions {
		e := raw.(map[string]any)
		sel := fmt.Sprintf(`#rt-results tr[data-index="%v"]`, e["index"])
		wantClass := "differs"
		if e["match"] == true {
			wantClass = "match"
		}
		if got := b.attr(sel, "class"); got != wantClass {
			t.Errorf("emission %v shown as %q, the API says match=%v", e["index"], got, e["match"])
		}
		if got := b.text(sel + " td:nth-of-type(2) code"); got != e["actual"] {
			t.Errorf("emission %v actual shown %q, API %q", e["index"], got, e["actual"])
		}
		if got := b.text(sel + " td:nth-of-type(1) code"); got != e["expected"] {
			t.Errorf("emission %v expected shown %q, API %q", e["index"], got, e["expected"])
		}
		if reason, _ := e["reason"].(string); e["match"] != true && !strings.Contains(b.text(sel+" .verdict"), reason) {
			t.Errorf("emission %v verdict %q lacks the reason %q", e["index"], b.text(sel+" .verdict"), reason)
		}
	}
	if marks := b.text(`#rt-results tr.differs mark`); !strings.Contains(marks, "temp") || !strings.Contains(marks, "99.5") {
		t.Errorf("the differing field is not marked: %q", marks)
	}
	if !strings.Contains(built, `"temp": 31.0`) {
		t.Errorf("the page's case lost the float's fraction: %s", built)
	}

	b.run("take the actual output as expected", click("#rt-use-actual"), click(`#rt-form button[type="submit"]`))
	b.waitFor("a pass", `document.querySelector("#rt-verdict").dataset.passed === "true" && document.querySelectorAll("#rt-results tr.match").length === 2 && !document.querySelector("#rt-results tr.differs")`)
	b.screenshot("rule-test-pass")

	badSQL := "SELECT id\nFROM sensor WHERE nosuch > 1"
	line, col := apiPosition(t, d.URL+"/rules/replay", strings.Replace(built, `"SELECT id, temp FROM sensor WHERE temp > 30"`, jsString(badSQL), 1))
	b.run("run a bad rule", setValue("#rt-sql", badSQL), click(`#rt-form button[type="submit"]`))
	b.waitFor("the SQL error marker", fmt.Sprintf(`!!document.querySelector('#rt-sql-err .sql-error[data-line="%s"][data-col="%s"]')`, line, col))
	b.screenshot("rule-test-sql-error")
}
