package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/rekuiper/rekuiper/internal/config"
	"github.com/rekuiper/rekuiper/internal/rulemgr"
	"github.com/rekuiper/rekuiper/internal/server/servertest"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// browser is a headless Chromium page whose console errors and uncaught
// exceptions fail the test.
type browser struct {
	t   *testing.T
	ctx context.Context
	pageErrors
	shot int
	dir  string
}

// pageErrors collects the errors a page reports (console errors, uncaught
// exceptions) while the test drives it; report fails the test with each.
type pageErrors struct {
	mu   sync.Mutex
	errs []string
}

func (e *pageErrors) fail(format string, args ...any) {
	e.mu.Lock()
	e.errs = append(e.errs, fmt.Sprintf(format, args...))
	e.mu.Unlock()
}

// report fails t with each error collected, naming the browser.
func (e *pageErrors) report(t *testing.T, browser string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, err := range e.errs {
		t.Errorf("%s: %s", browser, err)
	}
}

// chromium finds Debian's chromium; a machine without it fails the test
// (CI installs it) rather than skipping the browser tests.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("chromium is not installed: the console's browser tests need it; install it with " +
		"`apt-get install -y --no-install-recommends chromium` (.ci/run does)")
	return ""
}

// browserTimeout only keeps a broken page from hanging the test run; no
// assertion depends on it.
const browserTimeout = 3 * time.Minute

// pollTimeout bounds one wait for the page (the machine may be loaded).
const pollTimeout = time.Minute

func newBrowser(t *testing.T) *browser {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium(t)),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	ctx, cancelTimeout := context.WithTimeout(ctx, browserTimeout)
	dir := os.Getenv("REKUIPER_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	b := &browser{t: t, ctx: ctx, dir: dir}
	err := chromedp.Listen(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *cdpruntime.EventConsoleAPICalled:
			if ev.Type == cdpruntime.ConsoleAPICalledTypeError || ev.Type == cdpruntime.ConsoleAPICalledTypeAssert {
				var parts []string
				for _, a := range ev.Args {
					parts = append(parts, string(a.Value)+a.Description)
				}
				b.fail("console.%s: %s", ev.Type, strings.Join(parts, " "))
			}
		case *cdpruntime.EventExceptionThrown:
			d := ev.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			b.fail("uncaught exception at %s:%d: %s", d.URL, d.LineNumber, msg)
		case *cdplog.EventEntryAdded:
			// Answers 4xx the console expects (a refused statement, a
			// missing token) are logged by the network source; anything
			// else at error level (CSP violations, script errors) fails.
			if ev.Entry.Level == cdplog.EntryLevelError && ev.Entry.Source != cdplog.EntrySourceNetwork {
				b.fail("browser log (%s): %s %s", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL)
			}
		}
	})
	if err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	t.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
	})
	t.Cleanup(func() { b.report(t, "browser") }) // runs first: before the browser closes
	return b
}

// run runs steps; a failure saves a screenshot and stops the test.
func (b *browser) run(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		b.failed(what, err)
	}
}

func (b *browser) failed(what string, err error) {
	b.t.Helper()
	b.screenshot("failed-" + strings.ReplaceAll(what, " ", "-"))
	b.t.Fatalf("%s: %v", what, err)
}

// value runs one action and returns its value; a failure stops the test.
func value[T any](b *browser, what string, a chromedp.Action[T]) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, a)
	if err != nil {
		b.failed(what, err)
	}
	return v
}

// screenshot writes the page as <test>-<n>-<name>.png in the artefacts
// folder.
func (b *browser) screenshot(name string) {
	b.shot++
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return
	}
	file := filepath.Join(b.dir, fmt.Sprintf("%s-%02d-%s.png", strings.ReplaceAll(b.t.Name(), "/", "_"), b.shot, name))
	if err := os.WriteFile(file, png, 0o644); err != nil {
		b.t.Errorf("write screenshot: %v", err)
	}
}

// text reads an element's text.
func (b *browser) text(sel string) string {
	b.t.Helper()
	return value(b, "read "+sel, chromedp.Text(chromedp.CSS(sel)))
}

// waitFor waits until the JavaScript expression is true.
func (b *browser) waitFor(what, expr string) {
	b.t.Helper()
	value(b, "wait for "+what, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(pollTimeout)))
}

// setValue replaces a field's value and fires its input event, as typing
// does.
func setValue(sel, value string) chromedp.Action[chromedp.Void] {
	expr := fmt.Sprintf(`(() => { const el = document.querySelector(%s); el.value = %s; el.dispatchEvent(new Event("input", {bubbles: true})); return true })()`,
		jsString(sel), jsString(value))
	return script(expr)
}

// choose selects an option of a select element (by its value attribute)
// and fires its change event, as a user's choice does.
func choose(sel, value string) chromedp.Action[chromedp.Void] {
	expr := fmt.Sprintf(`(() => { const el = document.querySelector(%s); el.value = %s; if (el.value !== %[2]s) throw new Error("no option " + %[2]s); el.dispatchEvent(new Event("change", {bubbles: true})); return true })()`,
		jsString(sel), jsString(value))
	return script(expr)
}

// script runs a JavaScript expression in the page.
func script(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Evaluate[any](expr)(ctx, t)
		return err
	})
}

func click(sel string) chromedp.Action[chromedp.Void] { return chromedp.Click(chromedp.CSS(sel)) }

func visible(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.WaitVisible(chromedp.CSS(sel))
}

var positionRE = regexp.MustCompile(`(\d+):(\d+): `)

// apiPosition asks the API directly where it places the error of body, so
// the test compares the console's marker with the server's own answer.
func apiPosition(t *testing.T, url, body string) (line, col string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e struct{ Message string }
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
		t.Fatal(err)
	}
	m := positionRE.FindStringSubmatch(e.Message)
	if resp.StatusCode < 400 || m == nil {
		t.Fatalf("POST %s: %d %q, want an error with a position", url, resp.StatusCode, e.Message)
	}
	return m[1], m[2]
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

const goodDDL = `CREATE STREAM demo (v BIGINT) WITH (DATASOURCE="in", TYPE="memory", FORMAT="json")`

// TestConsoleEndToEnd is a new user's first five minutes: open the
// daemon's address, create a stream and a rule through the forms (after
// an SQL error marked at its position), watch the live output and a chart
// point, and stop the rule.
func TestConsoleEndToEnd(t *testing.T) {
	d := servertest.Start(t, servertest.Options{})
	b := newBrowser(t)

	b.run("open the daemon's address", chromedp.Navigate(d.URL+"/"), visible("#version"))
	url := value(b, "read the location", chromedp.Location())
	if url != d.URL+"/console/" {
		t.Fatalf("browser at %s, want the console at %s/console/", url, d.URL)
	}
	if v := b.text("#version"); v == "" {
		t.Fatal("overview shows no version")
	}
	b.screenshot("overview")

	b.run("open streams", click(`a[data-nav="streams"]`), visible("#ddl"))
	badDDL := "CREATE STREAM demo (v BIGINT\n  WITH (DATASOURCE=\"in\", TYPE=\"memory\")"
	line, col := apiPosition(t, d.URL+"/streams", `{"sql":`+jsString(badDDL)+`}`)
	// Typing is enough: the statement is validated as it changes.
	b.run("type a bad statement", setValue("#ddl", badDDL))
	b.waitFor("the DDL error marker", fmt.Sprintf(`!!document.querySelector('#ddl-err .sql-error[data-line="%s"][data-col="%s"]')`, line, col))
	if _, err := d.Catalog.Stream("demo"); err == nil {
		t.Fatal("validating as the user types stored the stream")
	}
	if inv := b.attr("#ddl", "aria-invalid"); inv != "true" {
		t.Errorf("DDL area aria-invalid = %q, want true", inv)
	}
	b.screenshot("ddl-error")
	b.run("type a good statement", setValue("#ddl", goodDDL))
	b.waitFor("the statement valid", `document.querySelector("#ddl").dataset.valid === "true" && !document.querySelector("#ddl-err .sql-error")`)
	b.run("create the stream", click(`#stream-form button[type="submit"]`))
	b.waitFor("the stream in the list", `[...document.querySelectorAll("main td")].some(td => td.textContent === "demo")`)
	if _, err := d.Catalog.Stream("demo"); err != nil {
		t.Fatalf("stream not in the catalog after the form: %v", err)
	}

	b.run("open the rule form", click(`a[data-nav="rules"]`), visible(`a[href="#/rules/new"]`),
		click(`a[href="#/rules/new"]`), visible("#rule-sql"))
	badSQL := "SELECT v * 2 AS w\nFROM demo WHERE"
	ruleJSON := func(sql string) string {
		return `{"id":"r1","sql":` + jsString(sql) + `,"actions":[{"memory":{"topic":"out"}}]}`
	}
	line, col = apiPosition(t, d.URL+"/rules", ruleJSON(badSQL))
	// The action through its form, generated from the memory sink's spec.
	b.run("choose the memory sink", visible("#act-0-type"), choose("#act-0-type", "memory"), visible("#act-0-topic"))
	b.run("submit a bad rule", setValue("#rule-id", "r1"), setValue("#rule-sql", badSQL),
		setValue("#act-0-topic", "out"), click(`#rule-form button[type="submit"]`))
	b.waitFor("the SQL error marker", fmt.Sprintf(`!!document.querySelector('#rule-sql-err .sql-error[data-line="%s"][data-col="%s"]')`, line, col))
	b.screenshot("sql-error")
	b.run("create the rule", setValue("#rule-sql", "SELECT v * 2 AS w FROM demo"), click(`#rule-form button[type="submit"]`))
	b.waitFor("the rule page, running", `location.hash === "#/rules/r1" && document.querySelector("#rule-state")?.textContent === "running"`)

	// The page opened the tap; rows published now reach it.
	b.waitFor("the tap to connect", `document.querySelector("#tap-info")?.textContent === "Listening…"`)
	testwait.Within(t, pollTimeout, "the rule page to open its tap", func() bool { return d.Taps.Watching("r1") })
	d.Publish(t, "in", map[string]any{"v": int64(2)})
	d.Publish(t, "in", map[string]any{"v": int64(5)})
	b.waitFor("live output", `[...document.querySelectorAll("#tap-rows li")].map(li => li.textContent).join() === '[{"w":10}],[{"w":4}]'`)
	if info := b.text("#tap-info"); !strings.HasPrefix(info, "2 emissions") {
		t.Errorf("tap info %q, want 2 emissions", info)
	}

	b.waitFor("the counters", `document.querySelector('#counters tr[data-node^="source_demo"] td')?.textContent === "2"`)
	d.History.Sample()
	b.waitFor("a chart point", `(() => { const f = document.querySelector("figure.chart"); return f && f.dataset.points === "1" && f.querySelector("svg").getAttribute("aria-label").includes(": 2 in, 2 out, 0 errors") })()`)
	b.waitFor("the topology", `document.querySelectorAll("svg.dag g.node").length >= 3 && !!document.querySelector('svg.dag g[data-node^="source_demo"]')`)
	b.screenshot("rule-running")
	if c := b.text("#checkpoints"); !strings.Contains(c, "Checkpointing is off") {
		t.Errorf("checkpoint panel of a qos 0 rule: %q", c)
	}
	if c := b.text("#sink-cache"); !strings.Contains(c, "cache on") {
		t.Errorf("sink cache panel of a rule without cache: %q", c)
	}

	b.run("stop the rule", click(`button[aria-label="Stop rule r1"]`))
	b.waitFor("the rule stopped", `document.querySelector("#rule-state")?.textContent === "stopped"`)
	if st, err := d.Rules.Status("r1"); err != nil || st.State != rulemgr.StateStopped {
		t.Fatalf("rule after Stop: %v %v, want stopped", st.State, err)
	}
	b.screenshot("rule-stopped")

	b.run("export", click(`a[data-nav="transfer"]`), visible("#export-text"), click(`main section button`))
	b.waitFor("the export", `(() => { try { const e = JSON.parse(document.querySelector("#export-text").value); return !!e.rules.r1 && !!e.streams.demo } catch { return false } })()`)
	b.waitFor("the download link", `!document.querySelector("#export-download").hidden`)
	b.run("back to the overview", click(`a[data-nav="overview"]`), visible("#version"))
	b.waitFor("the rules by state", `document.querySelector(".counts")?.textContent.includes("stopped")`)
}

func (b *browser) attr(sel, name string) string {
	b.t.Helper()
	return value(b, "read "+sel+"@"+name, chromedp.AttributeValue(chromedp.CSS(sel), name)).Value
}

// TestConsoleSignIn: with authentication on, the console asks for a token,
// refuses a bad one and works with a good one; the token goes with every
// call, the live tap's included.
func TestConsoleSignIn(t *testing.T) {
	d := servertest.Start(t, servertest.Options{Config: func(c *config.Config) { c.Basic.Authentication = true }})
	token := d.Token(t)
	b := newBrowser(t)
	b.run("open the console", chromedp.Navigate(d.URL+"/console/#/rules"), visible("#token"))
	b.screenshot("sign-in")
	b.run("sign in with a bad token", setValue("#token", "not-a-token"), click(`form.signin button[type="submit"]`))
	b.waitFor("the refusal", `!!document.querySelector("form.signin .error")`)
	if msg := b.text("form.signin .error"); !strings.Contains(msg, "invalid token") {
		t.Errorf("refusal %q, want the server's reason", msg)
	}
	b.run("sign in", setValue("#token", token), click(`form.signin button[type="submit"]`))
	b.waitFor("the rules page", `!!document.querySelector('a[href="#/rules/new"]') && !document.querySelector("#token")`)

	req, _ := http.NewRequest("POST", d.URL+"/streams", strings.NewReader(`{"sql":`+jsString(goodDDL)+`}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("create stream: %v %v", resp, err)
	}
	resp.Body.Close()
	req, _ = http.NewRequest("POST", d.URL+"/rules", strings.NewReader(`{"id":"r1","sql":"SELECT v FROM demo","actions":[{"nop":{}}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	if resp, err = http.DefaultClient.Do(req); err != nil || resp.StatusCode != 201 {
		t.Fatalf("create rule: %v %v", resp, err)
	}
	resp.Body.Close()

	b.run("open the rule", chromedp.Navigate(d.URL+"/console/#/rules/r1"), visible("#tap-info"))
	testwait.Within(t, pollTimeout, "the signed-in rule page to open its tap", func() bool { return d.Taps.Watching("r1") })
	d.Publish(t, "in", map[string]any{"v": int64(7)})
	b.waitFor("live output with the token", `document.querySelector("#tap-rows li")?.textContent === '[{"v":7}]'`)
	b.screenshot("signed-in-rule")

	b.run("sign out", click("#signout"), visible("#token"))
	stored := value(b, "read the stored token", chromedp.Evaluate[string](`sessionStorage.getItem("rekuiper.token") || ""`))
	if stored != "" {
		t.Error("the token stays in sessionStorage after sign-out")
	}
}
