package daemon

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/connector/sqldb/pgtest"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// startDaemon runs a daemon in base with extra environment until the test
// ends and returns its REST address.
func startDaemon(t *testing.T, base string, env ...string) string {
	t.Helper()
	addr, stop := runDaemon(t, base, env...)
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	})
	return addr
}

// runDaemon runs the whole daemon process (Run) in base with extra
// environment and returns its REST address once it serves, and stop,
// which ends it and returns Run's error.
func runDaemon(t *testing.T, base string, env ...string) (string, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, RunOptions{
			BaseDir: base,
			Environ: append([]string{"KUIPER__BASIC__RESTPORT=0", "KUIPER__BASIC__RESTIP=127.0.0.1", "KUIPER__BASIC__FILELOG=true"}, env...),
			Ready:   func(addr string) { ready <- addr },
		})
	}()
	select {
	case addr := <-ready:
		return addr, func() error { cancel(); return <-done }
	case err := <-done:
		cancel()
		t.Fatalf("run ended early: %v", err)
		return "", nil
	}
}

func getJSON(t *testing.T, url string, into any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode == 200 && into != nil {
		if err := json.Unmarshal(b, into); err != nil {
			t.Fatalf("%s: %v: %s", url, err, b)
		}
	}
	return resp.StatusCode
}

// TestTwoDaemonsShareAPostgresCatalog: two daemons on one PostgreSQL
// catalog name themselves, see each other as members, and a stream created
// through one is served by the other. The URL's password is never logged.
func TestTwoDaemonsShareAPostgresCatalog(t *testing.T) {
	srv := pgtest.Start(t)
	url := strings.Replace(srv.NewDatabase(t), "postgres@", "postgres:s3cret@", 1) // trust auth ignores it
	env := "KUIPER__BASIC__CATALOG=" + url
	baseA, baseB := t.TempDir(), t.TempDir()
	a := startDaemon(t, baseA, env)
	b := startDaemon(t, baseB, env)

	var infoA, infoB map[string]any
	getJSON(t, "http://"+a+"/", &infoA)
	getJSON(t, "http://"+b+"/", &infoB)
	if infoA["node"] == nil || infoA["node"] == "" || infoA["node"] == infoB["node"] {
		t.Fatalf("nodes %v and %v", infoA["node"], infoB["node"])
	}
	testwait.Until(t, "two healthy members", func() bool {
		var nodes []struct {
			ID      string `json:"id"`
			Healthy bool   `json:"healthy"`
			Self    bool   `json:"self"`
		}
		getJSON(t, "http://"+a+"/cluster/nodes", &nodes)
		return len(nodes) == 2 && nodes[0].Healthy && nodes[1].Healthy && (nodes[0].Self != nodes[1].Self)
	})

	resp, err := http.Post("http://"+a+"/streams", "application/json", strings.NewReader(`{"sql":"CREATE STREAM shared () WITH (DATASOURCE=\"t\", TYPE=\"memory\")"}`))
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("create stream: %v %v", err, resp)
	}
	resp.Body.Close()
	testwait.Until(t, "stream served by b", func() bool { return getJSON(t, "http://"+b+"/streams/shared", nil) == 200 })

	if _, err := os.Stat(filepath.Join(baseA, "data", catalog.DefaultFileName)); err == nil {
		t.Error("a SQLite catalog was created although basic.catalog names PostgreSQL")
	}
	for _, base := range []string{baseA, baseB} {
		b, err := os.ReadFile(filepath.Join(base, "log", "stream.log"))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "s3cret") {
			t.Errorf("log shows the catalog password:\n%s", b)
		}
		if !strings.Contains(string(b), "postgres:******@") {
			t.Errorf("log does not name the masked catalog:\n%s", b)
		}
	}
}

func TestUnknownCatalogSchemeRefused(t *testing.T) {
	err := Run(context.Background(), RunOptions{
		BaseDir: t.TempDir(),
		Environ: []string{"KUIPER__BASIC__CATALOG=mysql://u:s3cret@h/db"},
	})
	if err == nil || !strings.Contains(err.Error(), "basic.catalog") || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("start with a mysql catalog: %v", err)
	}
}
