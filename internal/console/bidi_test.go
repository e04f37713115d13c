package console_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/rekuiper/rekuiper/internal/testwait"
)

// firefoxPage is one tab of a headless Firefox driven through WebDriver
// BiDi, the protocol of Firefox's built-in remote agent: no geckodriver,
// just a WebSocket. Console errors and uncaught exceptions of the page
// fail the test, as in the Chromium tests.
type firefoxPage struct {
	t    *testing.T
	ctx  context.Context
	conn *websocket.Conn
	tab  string // browsing context id
	dir  string // artefacts
	shot int

	mu      sync.Mutex // guards nextID and pending
	nextID  int
	pending map[int]chan bidiReply
	pageErrors
}

type bidiReply struct {
	Type    string          `json:"type"`
	ID      int             `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   string          `json:"error"`
	Message string          `json:"message"`
}

var bidiListening = regexp.MustCompile(`WebDriver BiDi listening on (ws://\S+)`)

// firefoxPrefs keep the browser from reaching the network on its own and
// from showing first-run pages; the remote agent adds its recommended
// automation prefs itself.
const firefoxPrefs = `user_pref("app.update.disabledForTesting", true);
user_pref("browser.shell.checkDefaultBrowser", false);
user_pref("browser.startup.homepage_override.mstone", "ignore");
user_pref("datareporting.policy.dataSubmissionEnabled", false);
user_pref("toolkit.telemetry.reportingpolicy.firstRun", false);
user_pref("services.settings.server", "data:,");
user_pref("network.captive-portal-service.enabled", false);
user_pref("network.connectivity-service.enabled", false);
user_pref("extensions.update.enabled", false);
user_pref("browser.safebrowsing.update.enabled", false);
`

// newFirefox starts headless Firefox with a fresh profile and opens a
// BiDi session; without Firefox the test is skipped (CI installs
// firefox-esr).
func newFirefox(t *testing.T) *firefoxPage {
	t.Helper()
	bin := ""
	for _, name := range []string{"firefox-esr", "firefox"} {
		if p, err := exec.LookPath(name); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		t.Skip("firefox is not installed, so the console is not tested in Firefox here; " +
			"install it with `apt-get install -y firefox-esr` (.ci/run does)")
	}
	profile := t.TempDir()
	if err := os.WriteFile(filepath.Join(profile, "user.js"), []byte(firefoxPrefs), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), browserTimeout)
	cmd := exec.Command(bin, "--headless", "--no-remote", "--remote-debugging-port=0", "--profile", profile, "about:blank")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its content processes go with it
	cmd.Env = append(os.Environ(), "MOZ_CRASHREPORTER_DISABLE=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start firefox: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := bidiListening.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case urls <- m[1]:
				default:
				}
			}
		}
	}()
	var url string
	select {
	case url = <-urls:
	case <-exited:
		t.Fatal("firefox exited before its remote agent listened")
	case <-ctx.Done():
		t.Fatal("firefox's remote agent never listened")
	}
	conn, _, err := websocket.Dial(ctx, url+"/session", nil)
	if err != nil {
		t.Fatalf("connect to firefox: %v", err)
	}
	conn.SetReadLimit(64 << 20) // screenshots
	dir := os.Getenv("REKUIPER_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	p := &firefoxPage{t: t, ctx: ctx, conn: conn, dir: dir, pending: map[int]chan bidiReply{}}
	go p.read()
	t.Cleanup(func() {
		// Ask the browser to quit; the cleanup above kills it if it does not.
		closeCtx, done := context.WithTimeout(context.Background(), 5*time.Second)
		defer done()
		_, _ = p.send(closeCtx, "browser.close", map[string]any{})
		conn.Close(websocket.StatusNormalClosure, "")
	})
	t.Cleanup(func() { p.report(t, "firefox") }) // runs first, while the page is still open

	p.must("session.new", map[string]any{"capabilities": map[string]any{}})
	p.must("session.subscribe", map[string]any{"events": []string{"log.entryAdded"}})
	var tree struct {
		Contexts []struct {
			Context string `json:"context"`
		} `json:"contexts"`
	}
	p.decode(p.must("browsingContext.getTree", map[string]any{"maxDepth": 0}), &tree)
	if len(tree.Contexts) == 0 {
		t.Fatal("firefox has no tab")
	}
	p.tab = tree.Contexts[0].Context
	p.must("browsingContext.setViewport", map[string]any{"context": p.tab, "viewport": map[string]any{"width": 1280, "height": 900}})
	return p
}

// read dispatches answers to their callers and records the page's
// console errors, until the connection closes.
func (p *firefoxPage) read() {
	for {
		_, b, err := p.conn.Read(context.Background())
		if err != nil {
			p.mu.Lock()
			for id, ch := range p.pending {
				close(ch)
				delete(p.pending, id)
			}
			p.mu.Unlock()
			return
		}
		var r bidiReply
		if err := json.Unmarshal(b, &r); err != nil {
			p.fail("undecodable message from firefox: %v", err)
			continue
		}
		if r.Type == "event" {
			p.event(r)
			continue
		}
		p.mu.Lock()
		ch := p.pending[r.ID]
		delete(p.pending, r.ID)
		p.mu.Unlock()
		if ch != nil {
			ch <- r
		}
	}
}

func (p *firefoxPage) event(r bidiReply) {
	if r.Method != "log.entryAdded" {
		return
	}
	var e struct {
		Type   string `json:"type"`
		Level  string `json:"level"`
		Text   string `json:"text"`
		Method string `json:"method"`
		Source struct {
			Context string `json:"context"`
		} `json:"source"`
		StackTrace *struct {
			CallFrames []struct {
				URL        string `json:"url"`
				LineNumber int    `json:"lineNumber"`
			} `json:"callFrames"`
		} `json:"stackTrace"`
	}
	if err := json.Unmarshal(r.Params, &e); err != nil {
		p.fail("undecodable log entry: %v", err)
		return
	}
	if e.Level != "error" {
		return
	}
	where := ""
	if e.StackTrace != nil && len(e.StackTrace.CallFrames) > 0 {
		f := e.StackTrace.CallFrames[0]
		where = fmt.Sprintf(" at %s:%d", f.URL, f.LineNumber)
	}
	p.fail("%s %s%s: %s", e.Type, e.Method, where, e.Text)
}

// send runs one BiDi command and returns its result.
func (p *firefoxPage) send(ctx context.Context, method string, params any) (json.RawMessage, error) {
	p.mu.Lock()
	p.nextID++
	id := p.nextID
	ch := make(chan bidiReply, 1)
	p.pending[id] = ch
	p.mu.Unlock()
	b, err := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	if err := p.conn.Write(ctx, websocket.MessageText, b); err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return nil, fmt.Errorf("%s: the connection to firefox closed", method)
		}
		if r.Type == "error" {
			return nil, fmt.Errorf("%s: %s: %s", method, r.Error, r.Message)
		}
		return r.Result, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// must is send that fails the test, with a screenshot when it can.
func (p *firefoxPage) must(method string, params any) json.RawMessage {
	p.t.Helper()
	res, err := p.send(p.ctx, method, params)
	if err != nil {
		p.t.Fatal(err)
	}
	return res
}

func (p *firefoxPage) decode(raw json.RawMessage, v any) {
	p.t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		p.t.Fatalf("decode %s: %v", raw, err)
	}
}

// navigate loads url and waits for the page's load event.
func (p *firefoxPage) navigate(url string) {
	p.t.Helper()
	p.must("browsingContext.navigate", map[string]any{"context": p.tab, "url": url, "wait": "complete"})
}

// eval runs a JavaScript expression in the page (awaiting a promise) and
// returns its value as JSON text; an exception fails the test.
func (p *firefoxPage) eval(expr string) string {
	p.t.Helper()
	s, err := p.tryEval(expr)
	if err != nil {
		p.failed("evaluate "+expr, err)
	}
	return s
}

func (p *firefoxPage) tryEval(expr string) (string, error) {
	raw, err := p.send(p.ctx, "script.evaluate", map[string]any{
		"expression":   "(async () => JSON.stringify(await (" + expr + ")))()",
		"target":       map[string]any{"context": p.tab},
		"awaitPromise": true,
	})
	if err != nil {
		return "", err
	}
	var r struct {
		Type   string `json:"type"`
		Result struct {
			Type  string `json:"type"`
			Value string `json:"value"`
		} `json:"result"`
		ExceptionDetails struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return "", err
	}
	if r.Type == "exception" {
		return "", fmt.Errorf("exception: %s", r.ExceptionDetails.Text)
	}
	return r.Result.Value, nil
}

// waitFor polls the expression until it is true.
func (p *firefoxPage) waitFor(what, expr string) {
	p.t.Helper()
	var v string
	var err error
	if !testwait.Poll(pollTimeout, func() bool {
		v, err = p.tryEval(expr)
		return err == nil && v == "true"
	}) {
		p.failed("wait for "+what, fmt.Errorf("still %s %v after %s", v, err, pollTimeout))
	}
}

// do runs a statement in the page, e.g. setting a field and firing its
// event as typing does.
func (p *firefoxPage) do(what, stmt string) {
	p.t.Helper()
	if _, err := p.tryEval("(() => { " + stmt + "; return true })()"); err != nil {
		p.failed(what, err)
	}
}

func (p *firefoxPage) setValue(sel, value string) {
	p.t.Helper()
	p.do("set "+sel, fmt.Sprintf(`const el = document.querySelector(%s); el.value = %s; el.dispatchEvent(new Event("input", {bubbles: true}))`, jsString(sel), jsString(value)))
}

func (p *firefoxPage) choose(sel, value string) {
	p.t.Helper()
	p.do("choose "+value+" in "+sel, fmt.Sprintf(`const el = document.querySelector(%s); el.value = %s; if (el.value !== %[2]s) throw new Error("no option " + %[2]s); el.dispatchEvent(new Event("change", {bubbles: true}))`, jsString(sel), jsString(value)))
}

func (p *firefoxPage) click(sel string) {
	p.t.Helper()
	p.do("click "+sel, fmt.Sprintf(`document.querySelector(%s).click()`, jsString(sel)))
}

func (p *firefoxPage) failed(what string, err error) {
	p.t.Helper()
	p.screenshot("failed-" + strings.ReplaceAll(what, " ", "-"))
	p.t.Fatalf("%s: %v", what, err)
}

// screenshot writes the tab as <test>-<n>-<name>.png in the artefacts
// folder.
func (p *firefoxPage) screenshot(name string) {
	p.shot++
	ctx, cancel := context.WithTimeout(p.ctx, 20*time.Second)
	defer cancel()
	raw, err := p.send(ctx, "browsingContext.captureScreenshot", map[string]any{"context": p.tab, "origin": "document"})
	if err != nil {
		p.t.Logf("screenshot %s: %v", name, err)
		return
	}
	var r struct {
		Data string `json:"data"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		p.t.Logf("screenshot %s: %v", name, err)
		return
	}
	png, err := base64.StdEncoding.DecodeString(r.Data)
	if err != nil || len(png) == 0 {
		p.t.Logf("screenshot %s: %d bytes, %v", name, len(png), err)
		return
	}
	name = fmt.Sprintf("%s-%02d-%s.png", strings.ReplaceAll(p.t.Name(), "/", "_"), p.shot, name)
	if err := os.WriteFile(filepath.Join(p.dir, name), png, 0o644); err != nil {
		p.t.Errorf("write screenshot: %v", err)
	}
}
