package console_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rekuiper/rekuiper/internal/config"
	"github.com/rekuiper/rekuiper/internal/rulemgr"
	"github.com/rekuiper/rekuiper/internal/server/servertest"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// TestFirefoxMainFlow is TestConsoleEndToEnd's user in Firefox: sign in,
// create a stream and a rule through the forms, watch the live output,
// stop the rule, run a rule test, and open every page, with no console
// error on the way.
func TestFirefoxMainFlow(t *testing.T) {
	d := servertest.Start(t, servertest.Options{Config: func(c *config.Config) { c.Basic.Authentication = true }})
	p := newFirefox(t)

	p.navigate(d.URL + "/")
	p.waitFor("the sign-in form", `!!document.querySelector("#token")`)
	if loc := p.eval("location.href"); loc != jsString(d.URL+"/console/") {
		t.Fatalf("firefox at %s, want the console at %s/console/", loc, d.URL)
	}
	p.setValue("#token", d.Token(t))
	p.click(`form.signin button[type="submit"]`)
	p.waitFor("the overview", `!!document.querySelector("#version")?.textContent`)
	p.screenshot("overview")

	p.click(`a[data-nav="streams"]`)
	p.waitFor("the DDL editor", `!!document.querySelector("#ddl")`)
	p.setValue("#ddl", goodDDL)
	p.waitFor("the statement valid", `document.querySelector("#ddl").dataset.valid === "true"`)
	p.click(`#stream-form button[type="submit"]`)
	p.waitFor("the stream in the list", `[...document.querySelectorAll("main td")].some(td => td.textContent === "demo")`)
	if _, err := d.Catalog.Stream("demo"); err != nil {
		t.Fatalf("stream not in the catalog after the form: %v", err)
	}

	p.navigate(d.URL + "/console/#/rules/new")
	p.waitFor("the rule form's action", `!!document.querySelector("#act-0-type")`)
	p.choose("#act-0-type", "memory")
	p.waitFor("the memory sink's form", `!!document.querySelector("#act-0-topic")`)
	p.setValue("#rule-id", "r1")
	p.setValue("#rule-sql", "SELECT v * 2 AS w FROM demo")
	p.setValue("#act-0-topic", "out")
	p.click(`#rule-form button[type="submit"]`)
	p.waitFor("the rule page, running", `location.hash === "#/rules/r1" && document.querySelector("#rule-state")?.textContent === "running"`)
	if !testwait.Poll(pollTimeout, func() bool { return d.Taps.Watching("r1") }) {
		p.failed("open the tap", fmt.Errorf("the rule page never opened its tap"))
	}
	d.Publish(t, "in", map[string]any{"v": int64(3)})
	p.waitFor("live output", `document.querySelector("#tap-rows li")?.textContent === '[{"w":6}]'`)
	p.waitFor("the counters", `document.querySelector('#counters tr[data-node^="source_demo"] td')?.textContent === "1"`)
	p.waitFor("the topology", `!!document.querySelector('svg.dag g[data-node^="source_demo"]')`)
	p.screenshot("rule-running")
	p.click(`button[aria-label="Stop rule r1"]`)
	p.waitFor("the rule stopped", `document.querySelector("#rule-state")?.textContent === "stopped"`)
	if st, err := d.Rules.Status("r1"); err != nil || st.State != rulemgr.StateStopped {
		t.Fatalf("rule after Stop: %v %v, want stopped", st.State, err)
	}

	// The rule test page's own example passes.
	p.click(`a[data-nav="ruletest"]`)
	p.waitFor("the rule test form", `!!document.querySelector('#rt-pick option[value="stream:demo"]')`)
	p.click(`#rt-form button[type="submit"]`)
	p.waitFor("the example's verdict", `document.querySelector("#rt-verdict").dataset.passed === "true" && document.querySelectorAll("#rt-results tr.match").length > 0`)
	p.screenshot("rule-test")

	// Every page of the navigation, and the confKeys page, draws its
	// heading and key controls.
	pages := []struct{ hash, key string }{
		{"#/", "#version"},
		{"#/streams", "#ddl"},
		{"#/connections", "main form"},
		{"#/confkeys", "main select"},
		{"#/rules", `a[href="#/rules/new"]`},
		{"#/rules/r1", "#rule-state"},
		{"#/rules/r1/edit", "#rule-sql"},
		{"#/ruletest", "#rt-inputs"},
		{"#/transfer", "#export-text"},
	}
	for _, pg := range pages {
		p.do("go to "+pg.hash, "location.hash = "+jsString(pg.hash))
		p.waitFor(pg.hash, fmt.Sprintf(`!!document.querySelector("main h1") && document.querySelector("main h1").textContent !== "Error" && !!document.querySelector(%s)`, jsString(pg.key)))
	}
	if errs := p.eval(`[...document.querySelectorAll("main .error")].map(e => e.textContent)`); errs != "[]" {
		t.Errorf("errors shown on the last page: %s", errs)
	}

	p.click("#signout")
	p.waitFor("the sign-in form again", `!!document.querySelector("#token")`)
	if tok := p.eval(`sessionStorage.getItem("rekuiper.token")`); tok != "null" {
		t.Errorf("the token stays after sign-out: %s", tok)
	}
	if !strings.Contains(p.eval("navigator.userAgent"), "Firefox/") {
		t.Error("the browser is not Firefox")
	}
}
