package main

import (
	"bytes"
	"context"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/procs"
	"github.com/rekuiper/rekuiper/internal/rulemgr"
	"github.com/rekuiper/rekuiper/internal/rulemgr/rulemgrtest"
	"github.com/rekuiper/rekuiper/internal/server"
)

func testDaemon(t *testing.T) (host, port string) {
	t.Helper()
	ctx := context.Background()
	st, err := catalog.Open(ctx, filepath.Join(t.TempDir(), "sqliteKV.db"), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.New(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	mgr := rulemgr.New(rulemgr.Config{Catalog: cat, Runner: rulemgrtest.New()})
	srv := httptest.NewServer(server.New(server.Options{Catalog: cat, Rules: mgr}))
	t.Cleanup(func() {
		srv.Close()
		mgr.Close(ctx) //nolint:errcheck // test end
		st.Close()
	})
	u, _ := url.Parse(srv.URL)
	return u.Hostname(), u.Port()
}

func TestRemoteCommands(t *testing.T) {
	host, port := testDaemon(t)
	dir := t.TempDir()
	ruleFile := filepath.Join(dir, "rule.json")
	if err := os.WriteFile(ruleFile, []byte(`{"sql":"SELECT a FROM demo","actions":[{"log":{}}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	export := filepath.Join(dir, "export.json")
	tests := []cliCase{
		{"create stream", []string{"create", "stream", "demo", `(a bigint) WITH (TYPE="memory", DATASOURCE="t")`}, 0, "Stream demo is created."},
		{"create stream full sql", []string{"create", "stream", "s2", `CREATE STREAM s2 () WITH (TYPE="memory")`}, 0, "Stream s2 is created."},
		{"create table", []string{"create", "table", "t1", `() WITH (TYPE="memory", KIND="lookup")`}, 0, "Table t1 is created."},
		{"show streams", []string{"show", "streams"}, 0, "demo\ns2\n"},
		{"show tables", []string{"show", "tables"}, 0, "t1"},
		{"describe stream", []string{"describe", "stream", "demo"}, 0, `"Name": "demo"`},
		{"create rule from file", []string{"create", "rule", "r1", "-f", ruleFile}, 0, "Rule r1 was created successfully."},
		{"create rule inline", []string{"create", "rule", "r2", `{"sql":"SELECT a FROM demo","actions":[{"log":{}}],"triggered":false}`}, 0, "Rule r2 was created successfully."},
		{"create rule again", []string{"create", "rule", "r2", `{"sql":"SELECT a FROM demo","actions":[{"log":{}}]}`}, 1, "already exists (status 409)"},
		{"show rules", []string{"show", "rules"}, 0, `"id": "r2"`},
		{"describe rule", []string{"describe", "rule", "r1"}, 0, `"sql": "SELECT a FROM demo"`},
		{"getstatus", []string{"getstatus", "rule", "r1"}, 0, `"status": "running"`},
		{"gettopo", []string{"gettopo", "rule", "r1"}, 0, `"source_demo"`},
		{"stop", []string{"stop", "rule", "r1"}, 0, "Rule r1 was stopped."},
		{"start", []string{"start", "rule", "r1"}, 0, "Rule r1 was started"},
		{"restart", []string{"restart", "rule", "r1"}, 0, "Rule r1 was restarted"},
		{"validate", []string{"validate", "rule", "v", `{"sql":"SELECT a FROM demo","actions":[{"log":{}}]}`}, 0, `"valid":true`},
		{"validate invalid", []string{"validate", "rule", "v", `{"sql":"SELECT a FROM nope","actions":[{"log":{}}]}`}, 1, "nope is not found"},
		{"export ruleset", []string{"export", "ruleset", export}, 0, "ruleset is exported to"},
		{"drop stream referenced", []string{"drop", "stream", "demo"}, 1, "referenced"},
		{"drop rule", []string{"drop", "rule", "r1"}, 0, "Rule r1 is dropped."},
		{"drop rule unknown", []string{"drop", "rule", "r1"}, 1, "not found"},
		{"import ruleset", []string{"import", "ruleset", "-f", export}, 0, "imported 2 streams, 1 tables and 2 rules"},
		{"export data", []string{"export", "data", export, "-r", `["r2"]`}, 0, "data is exported to"},
		{"import data partial", []string{"import", "data", "-f", export, "-p", "true"}, 0, `"ErrorMsg": ""`},
		{"usage", []string{"drop", "stream"}, 2, "usage: kuiper drop"},
		{"traversing name", []string{"describe", "stream", "../../x"}, 2, `stream name "../../x" contains invalid characters: '/' is not allowed`},
		{"dot name", []string{"getstatus", "rule", ".."}, 2, `rule name ".." is not allowed`},
		{"unknown kind", []string{"show", "widgets"}, 2, "unknown kind"},
		{"show plugins", []string{"show", "plugins", "sink"}, 0, "No plugins were found."},
		{"show services", []string{"show", "services"}, 0, "No services were found."},
		{"show schemas", []string{"show", "schemas", "protobuf"}, 0, "No schemas were found."},
		{"show udfs", []string{"show", "udfs"}, 0, "No udfs were found."},
		{"create plugin", []string{"create", "plugin", "source", "random", `{"file":"http://h/random.zip"}`}, 1, "public Go SDK"},
	}
	runCLICases(t, host, port, tests)
}

// cliCase is one kuiper command line and what it must answer.
type cliCase struct {
	name string
	args []string
	code int    // exit code
	out  string // substring of stdout (or stderr when code != 0)
}

// runCLICases runs each case, one subtest each, against the daemon at
// host and port.
func runCLICases(t *testing.T, host, port string, cases []cliCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(append(tc.args, "-host", host, "-port", port), &stdout, &stderr)
			text := stdout.String()
			if tc.code != 0 {
				text = stderr.String()
			}
			if code != tc.code || !strings.Contains(text, tc.out) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit %d with %q", code, stdout.String(), stderr.String(), tc.code, tc.out)
			}
		})
	}
}

func TestUnreachable(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run([]string{"show", "streams", "-host", "127.0.0.1", "-port", "1"}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "cannot reach kuiperd at http://127.0.0.1:1: connection refused") {
		t.Fatalf("exit %d: %q", code, stderr.String())
	}
}

func TestClientYAML(t *testing.T) {
	host, port := testDaemon(t)
	base := t.TempDir()
	if err := os.MkdirAll(filepath.Join(base, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	yaml := "basic:\n  host: " + host + "\n  port: " + port + "\n"
	if err := os.WriteFile(filepath.Join(base, "etc", "client.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KuiperBaseKey", base)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"show", "streams"}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "No stream definitions") {
		t.Fatalf("exit %d: %q %q", code, stdout.String(), stderr.String())
	}
}

func TestVersion(t *testing.T) {
	host, port := testDaemon(t)
	var out, errb strings.Builder
	if code := run([]string{"version", "-host", host, "-port", port}, &out, &errb); code != 0 {
		t.Fatalf("kuiper version exited %d: %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "kuiper dev (commit ") ||
		!strings.HasPrefix(lines[1], "kuiperd at http://"+host+":"+port+": dev (commit ") {
		t.Fatalf("kuiper version printed %q", out.String())
	}
	out.Reset()
	free, err := procs.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	if code := run([]string{"version", "-host", "127.0.0.1", "-port", strconv.Itoa(free)}, &out, &errb); code != 0 {
		t.Fatalf("kuiper version without a daemon exited %d", code)
	}
	if !strings.Contains(out.String(), "not reachable") {
		t.Fatalf("kuiper version without a daemon printed %q", out.String())
	}
}
