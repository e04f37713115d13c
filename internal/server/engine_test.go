package server_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/server/servertest"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// engineServer (newEngineEtc) is the REST API over the whole daemon
// (servertest: every built-in connector, a real SQLite catalog, etc and
// data folders in a temporary directory) whose catalog writes can be made
// to fail. The push endpoint server listens on an ephemeral loopback port.
type engineServer struct {
	*testServer
	etc, data string
	daemon    *servertest.Daemon
}

func newEngineEtc(t *testing.T, etcFiles map[string]string) *engineServer {
	t.Helper()
	var fs *faultyStore
	d := servertest.Start(t, servertest.Options{Etc: etcFiles, Store: func(st catalog.Store) catalog.Store {
		fs = &faultyStore{SQLiteStore: st.(*catalog.SQLiteStore)}
		return fs
	}})
	return &engineServer{testServer: &testServer{t: t, url: d.URL, data: d.Data, cat: d.Catalog, store: fs, mgr: d.Rules}, etc: d.Etc, data: d.Data, daemon: d}
}

// waitFile waits until the file at path (under the data folder) has at
// least n lines and returns them; it fails the test after a generous
// deadline (a liveness bound, not a speed assertion).
func (e *engineServer) waitFile(path string, n int) []string {
	e.t.Helper()
	var lines []string
	if !testwait.Poll(testwait.Limit, func() bool {
		b, _ := os.ReadFile(filepath.Join(e.data, path))
		lines = strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		return len(b) > 0 && len(lines) >= n
	}) {
		e.t.Fatalf("%s: %d lines %q, want %d", path, len(lines), lines, n)
	}
	return lines
}

const simulatorYAML = "default:\n  interval: 1000\n  loop: true\n  data:\n    - temperature: 20\n      humidity: 50\n"

// TestConfKeyOverDefault: a confKey stored over REST is laid over the
// default section of the source's YAML file, as eKuiper does, so a
// simulator stream whose CONF_KEY exists only in the catalog still gets
// its rows from the default section.
func TestConfKeyOverDefault(t *testing.T) {
	e := newEngineEtc(t, map[string]string{"sources/simulator.yaml": simulatorYAML})
	e.run([]step{
		{"confKey", "PUT", "/metadata/sources/simulator/confKeys/fast", `{"interval":5}`, 200, ""},
		{"stream", "POST", "/streams", `{"sql":"CREATE STREAM sim () WITH (TYPE=\"simulator\", CONF_KEY=\"fast\")"}`, 201, ""},
		{"rule", "POST", "/rules", `{"id":"r1","sql":"SELECT temperature FROM sim","actions":[{"file":{"path":"out/r1.txt"}}]}`, 201, ""},
	})
	lines := e.waitFile("out/r1.txt", 3)
	for _, l := range lines {
		if l != `[{"temperature":20}]` {
			t.Fatalf("line %q, want the default section's row", l)
		}
	}
	e.run([]step{{"running", "GET", "/rules/r1/status", "", 200, `"status": "running"`}})
}

// TestCSVHeaderOncePerFile: the file sink with hasHeader writes the header
// line once at the top of the file, not before every row.
func TestCSVHeaderOncePerFile(t *testing.T) {
	e := newEngineEtc(t, map[string]string{"sources/simulator.yaml": simulatorYAML})
	e.run([]step{
		{"stream", "POST", "/streams", `{"sql":"CREATE STREAM sim () WITH (TYPE=\"simulator\", EXTRA=\"{\\\"interval\\\":5}\")"}`, 201, ""},
		{"rule", "POST", "/rules", `{"id":"r1","sql":"SELECT * FROM sim","actions":[{"file":{"path":"out/r1.csv","fileType":"csv","hasHeader":true,"format":"delimited"}}]}`, 201, ""},
	})
	lines := e.waitFile("out/r1.csv", 4)
	if lines[0] != "humidity,temperature" {
		t.Fatalf("first line %q, want the header", lines[0])
	}
	for _, l := range lines[1:] {
		if l != "50,20" {
			t.Fatalf("line %q after the header, want a row (all lines %q)", l, lines)
		}
	}
}

// TestAggregateInWhereOverWindow: an aggregate in WHERE over a window is
// accepted, as eKuiper accepts it: the aggregate runs over the window's
// rows, then the rows are filtered.
func TestAggregateInWhereOverWindow(t *testing.T) {
	e := newEngineEtc(t, nil)
	e.run([]step{
		{"stream", "POST", "/streams", `{"sql":"CREATE STREAM sim () WITH (TYPE=\"simulator\", EXTRA=\"{\\\"interval\\\":5,\\\"data\\\":[{\\\"a\\\":1},{\\\"a\\\":3},{\\\"a\\\":8},{\\\"a\\\":2}]}\")"}`, 201, ""},
		{"no window refused", "POST", "/rules/validate", `{"id":"x","sql":"SELECT * FROM sim WHERE a > avg(a)","actions":[{"log":{}}]}`, 422, "aggregate function avg is not allowed in WHERE"},
		{"rule", "POST", "/rules", `{"id":"r1","sql":"SELECT * FROM sim WHERE a > avg(a) GROUP BY COUNTWINDOW(2)","actions":[{"file":{"path":"out/r1.txt"}}]}`, 201, ""},
		{"explain", "GET", "/rules/r1/explain", "", 200, `"FilterPlan"`},
	})
	lines := e.waitFile("out/r1.txt", 4)
	want := []string{`[{"a":3}]`, `[{"a":8}]`}
	for i, l := range lines {
		if l != want[i%2] {
			t.Fatalf("line %d %q, want %q (all %q)", i, l, want[i%2], lines)
		}
	}
}
