package console_test

import (
	"io"
	"io/fs"
	"net/http"
	"strings"
	"testing"

	"github.com/rekuiper/rekuiper/internal/config"
	"github.com/rekuiper/rekuiper/internal/console"
	"github.com/rekuiper/rekuiper/internal/server/servertest"
)

// TestAssetsServedWithoutToken: with authentication on, the console's
// files need no token (they hold no data) while API data still does.
func TestAssetsServedWithoutToken(t *testing.T) {
	d := servertest.Start(t, servertest.Options{Config: func(c *config.Config) { c.Basic.Authentication = true }})
	for _, c := range []struct{ path, ctype, contains string }{
		{"/console/", "text/html", `<script type="module" src="js/app.js">`},
		{"/console/js/app.js", "text/javascript", "signIn"},
		{"/console/console.css", "text/css", "--accent"},
		{"/console/icon.svg", "image/svg+xml", "<svg"},
	} {
		resp, err := http.Get(d.URL + c.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), c.ctype) || !strings.Contains(string(body), c.contains) {
			t.Errorf("GET %s: %d %s, want 200 %s containing %q", c.path, resp.StatusCode, resp.Header.Get("Content-Type"), c.ctype, c.contains)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("GET %s: Content-Security-Policy %q", c.path, csp)
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: no nosniff header", c.path)
		}
	}
	for _, path := range []string{"/rules", "/metrics/history", "/rules/r1/tap"} {
		resp, err := http.Get(d.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s without a token: %d, want 401", path, resp.StatusCode)
		}
	}
	resp, err := http.Get(d.URL + "/console/nope.js")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("missing asset: %d, want 404", resp.StatusCode)
	}
	req, _ := http.NewRequest("POST", d.URL+"/console/", strings.NewReader("{}"))
	req.Header.Set("Content-Type", "application/json")
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /console/: %d, want 405", resp.StatusCode)
	}
}

// TestAssetsSmall keeps the embedded console well under the 3 MB budget.
func TestAssetsSmall(t *testing.T) {
	total := int64(0)
	err := fs.WalkDir(console.Assets(), ".", func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		total += info.Size()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if total == 0 || total > 1<<20 {
		t.Fatalf("embedded assets are %d bytes; want some, and at most 1 MiB", total)
	}
}
