package console_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/connector/connectortest"
	"github.com/rekuiper/rekuiper/internal/server/servertest"
)

// acceptConfirms makes window.confirm answer yes, as a user confirming a
// delete does.
var acceptConfirms = script(`window.confirm = () => true`)

// TestConsoleConnections: a named connection and a config key are
// created, tested, edited and deleted through forms generated from the
// connector specs; secrets stay masked in the page and kept in the store.
func TestConsoleConnections(t *testing.T) {
	d := servertest.Start(t, servertest.Options{})
	b := newBrowser(t)

	b.run("open connections", chromedp.Navigate(d.URL+"/console/#/connections"), visible("#conn-type"), choose("#conn-type", "mqtt"), visible("#conn-p-server"))
	if v := b.attr("#conn-p-password", "type"); v != "password" {
		t.Errorf("the secret password field is a %q input, want password", v)
	}
	dead := "tcp://" + connectortest.ClosedAddr(t)
	b.run("test a connection to nothing", setValue("#conn-id", "c1"), setValue("#conn-p-server", dead), setValue("#conn-p-password", "pw"), click("#conn-form .test-conn"))
	b.waitFor("the refusal", `document.querySelector("#conn-form .test-result.error")?.textContent.includes("connection refused")`)
	b.screenshot("connection-test-failed")

	b.run("create the connection", click(`#conn-form button[type="submit"]`))
	b.waitFor("the connection listed", `document.querySelector('tr[data-id="c1"]')?.textContent.includes('"password":"******"')`)
	c, err := d.Catalog.Connection("c1")
	if err != nil || c.Type != "mqtt" || c.Props["password"] != "pw" || c.Props["server"] != dead {
		t.Fatalf("stored connection %+v %v, want mqtt with the typed server and password", c, err)
	}
	if _, ok := c.Props["qos"]; ok {
		t.Errorf("stored connection %+v carries the untouched default qos", c.Props)
	}

	b.run("edit it", click(`a[aria-label="Edit connection c1"]`), visible("#conn-id[readonly]"), visible("#conn-p-clientid"))
	if v := value(b, "read the password field", chromedp.Value(chromedp.CSS("#conn-p-password"))); v != "******" {
		t.Errorf("password field shows %q, want the mask", v)
	}
	b.run("save the edit", setValue("#conn-p-clientid", "console"), click(`#conn-form button[type="submit"]`))
	b.waitFor("back on the list", `location.hash === "#/connections" && document.querySelector('tr[data-id="c1"]')?.textContent.includes('"clientid":"console"')`)
	if c, _ = d.Catalog.Connection("c1"); c.Props["password"] != "pw" || c.Props["clientid"] != "console" || c.Props["server"] != dead {
		t.Fatalf("after the edit %+v, want the new clientid and the stored password", c.Props)
	}
	if _, ok := c.Props["enableClientSession"]; ok {
		t.Errorf("stored connection %+v sets the unset enableClientSession", c.Props)
	}
	b.run("delete it", acceptConfirms, click(`button[aria-label="Delete connection c1"]`))
	b.waitFor("the connection gone", `!document.querySelector('tr[data-id="c1"]') && document.querySelector("main td")?.textContent === "None yet."`)
	if _, err := d.Catalog.Connection("c1"); err == nil {
		t.Fatal("connection still stored after Delete")
	}

	b.run("open config keys", click(`a[href="#/confkeys"]`), visible("#ck-type"), choose("#ck-type", "memory"), visible("#ck-p-datasource"))
	b.run("save a key without its required datasource", setValue("#ck-key", "k1"), click(`#ck-form button[type="submit"]`))
	b.waitFor("the missing field named", `document.querySelector("#ck-form .error")?.textContent === "datasource is required"`)
	b.run("test the key", setValue("#ck-p-datasource", "t1"), click("#ck-form .test-conn"))
	// A memory source reaches no server: the daemon refuses to ping it
	// (400), and the form shows the daemon's reason.
	b.waitFor("the refusal shown", `!document.querySelector("#ck-form .test-result.ok") && (document.querySelector("#ck-form .test-result")?.textContent || "").includes("doesn't support ping connection")`)
	b.run("save the key", setValue("#ck-p-bufferLength", "7"), click(`#ck-form button[type="submit"]`))
	b.waitFor("the key listed", `document.querySelector('tr[data-key="k1"]')?.textContent.includes('"bufferLength":7')`)
	keys := confKeys(t, d.URL+"/metadata/sources/yaml/memory")
	if k := keys["k1"]; k["datasource"] != "t1" || k["bufferLength"] != float64(7) {
		t.Fatalf("confKey k1 = %v, want datasource t1 and bufferLength 7", k)
	}
	b.screenshot("confkeys")
	b.run("delete the key", acceptConfirms, click(`button[aria-label="Delete key k1"]`))
	b.waitFor("the key gone", `!document.querySelector('tr[data-key="k1"]')`)
	if _, err := d.Catalog.ConfKey(catalog.ConfSource, "memory", "k1"); err == nil {
		t.Fatal("confKey still stored after Delete")
	}
}

func confKeys(t *testing.T, url string) map[string]map[string]any {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return out
}
