package server_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/rekuiper/rekuiper/internal/server"
)

type openAPIDoc struct {
	Paths map[string]map[string]struct {
		Responses map[string]struct {
			Ref     string `json:"$ref"`
			Content map[string]struct {
				Schema struct {
					Type string `json:"type"`
				} `json:"schema"`
			} `json:"content"`
		} `json:"responses"`
	} `json:"paths"`
}

func loadOpenAPI(t *testing.T, url string) openAPIDoc {
	t.Helper()
	resp, err := http.Get(url + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc openAPIDoc
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /openapi.json: %d %v", resp.StatusCode, err)
	}
	return doc
}

// docPath is the OpenAPI path of a route pattern's path.
func docPath(p string) string {
	if p == "/{$}" {
		return "/"
	}
	// A {name...} wildcard is the path parameter {name}, slashes allowed.
	return strings.ReplaceAll(p, "...}", "}")
}

type recorded struct {
	method, pattern, contentType string
	status                       int
	body                         []byte
}

// recorder remembers every answer of the wrapped handler with the route
// pattern that served it.
type recorder struct {
	h    http.Handler
	mu   sync.Mutex
	seen []recorded
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := httptest.NewRecorder()
	rc.h.ServeHTTP(rec, r)
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	w.Write(rec.Body.Bytes()) //nolint:errcheck // test client
	rc.mu.Lock()
	rc.seen = append(rc.seen, recorded{r.Method, r.Pattern, rec.Header().Get("Content-Type"), rec.Code, rec.Body.Bytes()})
	rc.mu.Unlock()
}

// TestOpenAPI walks the route table: every route is described; then a test
// run's real answers must have a described status and, for that status,
// the described content type and top-level JSON type.
func TestOpenAPI(t *testing.T) {
	s := newServer(t, t.TempDir())
	srv := server.New(server.Options{Catalog: s.cat, Rules: s.mgr})
	doc := loadOpenAPI(t, s.url)
	for _, route := range srv.Routes() {
		method, path, _ := strings.Cut(route, " ")
		if _, ok := doc.Paths[docPath(path)][strings.ToLower(method)]; !ok {
			t.Errorf("route %s is not described in openapi.json", route)
		}
	}
	for p, ops := range doc.Paths {
		for m := range ops {
			found := false
			for _, route := range srv.Routes() {
				method, path, _ := strings.Cut(route, " ")
				found = found || (strings.ToLower(method) == m && docPath(path) == p)
			}
			if !found {
				t.Errorf("openapi.json describes %s %s, which is not a route", strings.ToUpper(m), p)
			}
		}
	}

	rc := &recorder{h: srv}
	ts := httptest.NewServer(rc)
	defer ts.Close()
	run := &testServer{t: t, url: ts.URL, cat: s.cat, mgr: s.mgr}
	for _, st := range openAPIRun {
		run.do(st.method, st.path, st.body)
	}
	covered := map[string]bool{}
	for _, r := range rc.seen {
		if r.pattern == "" || r.pattern == "/" { // no route: the catch-all 404
			continue
		}
		covered[r.pattern] = true
		method, path, _ := strings.Cut(r.pattern, " ")
		op := doc.Paths[docPath(path)][strings.ToLower(method)]
		resp, ok := op.Responses[itoa(r.status)]
		if !ok {
			t.Errorf("%s answered %d, not described (%s)", r.pattern, r.status, r.body)
			continue
		}
		want := "application/json"
		wantType := "object" // the Error response
		if resp.Ref == "" {
			wantType = ""
			want = ""
			for ct, c := range resp.Content {
				want, wantType = ct, c.Schema.Type
			}
		}
		switch {
		case want == "" && len(r.body) != 0:
			t.Errorf("%s %d: described empty, got %q", r.pattern, r.status, r.body)
		case want == "text/plain" && !strings.HasPrefix(r.contentType, "text/plain"):
			t.Errorf("%s %d: content type %q, described text/plain", r.pattern, r.status, r.contentType)
		case want == "application/json":
			if r.contentType != "application/json" {
				t.Errorf("%s %d: content type %q, described json", r.pattern, r.status, r.contentType)
			}
			b := bytes.TrimSpace(r.body)
			if got := jsonType(b); got != wantType {
				t.Errorf("%s %d: top-level %s, described %s: %s", r.pattern, r.status, got, wantType, b)
			}
		}
	}
	t.Logf("%d of %d routes exercised", len(covered), len(srv.Routes()))
	if len(covered) < len(srv.Routes())/2 {
		t.Errorf("the run exercised only %d routes", len(covered))
	}
}

func jsonType(b []byte) string {
	if len(b) == 0 {
		return "empty"
	}
	switch b[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	}
	return "other"
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// openAPIRun calls most routes once, successes and failures.
var openAPIRun = []step{
	{"", "GET", "/", "", 0, ""},
	{"", "POST", "/", "", 0, ""},
	{"", "GET", "/ping", "", 0, ""},
	{"", "GET", "/openapi.json", "", 0, ""},
	{"", "GET", "/cluster/nodes", "", 0, ""},
	{"", "POST", "/streams", demoDDL, 0, ""},
	{"", "POST", "/streams", demoDDL, 0, ""},
	{"", "POST", "/streams", `{"sql":`, 0, ""},
	{"", "GET", "/streams", "", 0, ""},
	{"", "GET", "/streamdetails", "", 0, ""},
	{"", "GET", "/streams/demo", "", 0, ""},
	{"", "GET", "/streams/nope", "", 0, ""},
	{"", "GET", "/streams/demo/schema", "", 0, ""},
	{"", "PUT", "/streams/demo", `{"sql":"CREATE STREAM demo (a bigint) WITH (TYPE=\"memory\", VERSION=\"3\")"}`, 0, ""},
	{"", "POST", "/tables", `{"sql":"CREATE TABLE lk () WITH (TYPE=\"memory\", KIND=\"lookup\", KEY=\"id\")"}`, 0, ""},
	{"", "GET", "/tables", "", 0, ""},
	{"", "GET", "/tabledetails", "", 0, ""},
	{"", "GET", "/tables/lk", "", 0, ""},
	{"", "GET", "/tables/lk/schema", "", 0, ""},
	{"", "PUT", "/tables/lk", `{"sql":"CREATE TABLE lk () WITH (TYPE=\"memory\", KIND=\"lookup\", KEY=\"k\")"}`, 0, ""},
	{"", "POST", "/rules", `{"id":"r1","sql":"SELECT a FROM demo","actions":[{"log":{}}],"tags":["t"]}`, 0, ""},
	{"", "POST", "/rules", `{"id":"r1","sql":"SELECT a FROM demo","actions":[{"log":{}}]}`, 0, ""},
	{"", "POST", "/rules", `{"id":"r9","sql":"SELECT a FROM nope","actions":[{"log":{}}]}`, 0, ""},
	{"", "POST", "/rules/validate", `{"id":"v","sql":"SELECT a FROM demo","actions":[{"log":{}}]}`, 0, ""},
	{"", "POST", "/rules/replay", `{"streams":["CREATE STREAM s (a BIGINT) WITH (DATASOURCE=\"s\");"],"inputs":{"s":[{"data":{"a":1}}]},"timeline":[{"at":0,"stream":"s","index":0}],"rule":{"sql":"SELECT a FROM s"},"expected":[[{"a":1}]]}`, 0, ""},
	{"", "POST", "/rules/replay", `{"rule":{"sql":"SELECT a FROM nope"}}`, 0, ""},
	{"", "POST", "/rules/replay", `{"rule":{}}`, 0, ""},
	{"", "GET", "/rules", "", 0, ""},
	{"", "GET", "/rules/status/all", "", 0, ""},
	{"", "GET", "/rules/tags/match", `{"tags":["t"]}`, 0, ""},
	{"", "GET", "/rules/r1", "", 0, ""},
	{"", "GET", "/rules/r1/status", "", 0, ""},
	{"", "GET", "/v2/rules/r1/status", "", 0, ""},
	{"", "GET", "/rules/r1/topo", "", 0, ""},
	{"", "POST", "/rules/r1/trace/start", `{"strategy":"always"}`, 0, ""},
	{"", "POST", "/rules/r1/trace/start", `{"strategy":"x"}`, 0, ""},
	{"", "POST", "/rules/r1/trace/stop", "", 0, ""},
	{"", "GET", "/trace/rule/r1?limit=5", "", 0, ""},
	{"", "GET", "/trace/0123456789abcdef0123456789abcdef", "", 0, ""},
	{"", "POST", "/tracer", `{"action":"start"}`, 0, ""},
	{"", "GET", "/rules/r1/explain", "", 0, ""},
	{"", "GET", "/rules/r1/schema", "", 0, ""},
	{"", "PUT", "/rules/r1/tags", `{"tags":["t","u"]}`, 0, ""},
	{"", "PATCH", "/rules/r1/tags", `{"tags":["v"]}`, 0, ""},
	{"", "DELETE", "/rules/r1/tags", `{"tags":["v"]}`, 0, ""},
	{"", "POST", "/rules/bulkstop", `{"tags":["t"]}`, 0, ""},
	{"", "POST", "/rules/bulkstart", `{"tags":["t"]}`, 0, ""},
	{"", "POST", "/rules/r1/stop", "", 0, ""},
	{"", "GET", "/rules/r1/topo", "", 0, ""},
	{"", "POST", "/rules/r1/start", "", 0, ""},
	{"", "POST", "/rules/r1/restart", "", 0, ""},
	{"", "PUT", "/rules/r2", `{"sql":"SELECT a FROM demo","actions":[{"log":{}}]}`, 0, ""},
	{"", "POST", "/connections", `{"id":"c1","typ":"mqtt","props":{"server":"tcp://127.0.0.1:1"}}`, 0, ""},
	{"", "GET", "/connections", "", 0, ""},
	{"", "GET", "/connections/c1", "", 0, ""},
	{"", "PUT", "/connections/c1", `{"typ":"mqtt","props":{}}`, 0, ""},
	{"", "PUT", "/metadata/sources/mqtt/confKeys/k", `{"server":"tcp://h:1883"}`, 0, ""},
	{"", "GET", "/metadata/sources/yaml/mqtt", "", 0, ""},
	{"", "PUT", "/metadata/sinks/mqtt/confKeys/k", `{"server":"tcp://h:1883"}`, 0, ""},
	{"", "GET", "/metadata/sinks/yaml/mqtt", "", 0, ""},
	{"", "PUT", "/metadata/connections/mqtt/confKeys/k", `{"server":"tcp://h:1883"}`, 0, ""},
	{"", "GET", "/metadata/connections/yaml/mqtt", "", 0, ""},
	{"", "DELETE", "/metadata/connections/mqtt/confKeys/k", "", 0, ""},
	{"", "GET", "/metadata/sources", "", 0, ""},
	{"", "GET", "/metadata/sources/simulator", "", 0, ""},
	{"", "GET", "/metadata/sinks", "", 0, ""},
	{"", "GET", "/metadata/sinks/file", "", 0, ""},
	{"", "GET", "/metadata/lookups", "", 0, ""},
	{"", "GET", "/metadata/lookups/memory", "", 0, ""},
	{"", "GET", "/metadata/functions", "", 0, ""},
	{"", "GET", "/metadata/formats", "", 0, ""},
	{"", "POST", "/metadata/sinks/connection/nop", `{}`, 0, ""},
	{"", "POST", "/metadata/sources/connection/httppull", `{"url":"http://127.0.0.1:1/x"}`, 0, ""},
	{"", "POST", "/metadata/lookups/connection/memory", `{"datasource":"t","key":"id"}`, 0, ""},
	{"", "POST", "/ruleset/export", "", 0, ""},
	{"", "GET", "/data/export", "", 0, ""},
	{"", "POST", "/data/export", `["r1"]`, 0, ""},
	{"", "POST", "/ruleset/import", `{"content":"{}"}`, 0, ""},
	{"", "POST", "/data/import?partial=1", `{"content":"{\"streams\":{\"x\":\"CREATE STREAM\"}}"}`, 0, ""},
	{"", "POST", "/data/import?partial=1", `{"content":"{}"}`, 0, ""},
	{"", "GET", "/data/import/status", "", 0, ""},
	{"", "POST", "/async/data/import?partial=1", `{"content":"{}"}`, 0, ""},
	{"", "POST", "/async/data/import", `{"content":`, 0, ""},
	{"", "GET", "/async/task/nope", "", 0, ""},
	{"", "POST", "/async/task/nope/cancel", "", 0, ""},
	{"", "GET", "/stop", "", 0, ""},
	{"", "PATCH", "/configs", `{"logLevel":"debug"}`, 0, ""},
	{"", "PUT", "/rules/r1/reset_state", `{"type":1}`, 0, ""},
	{"", "GET", "/v2/data/export", "", 0, ""},
	{"", "GET", "/metrics/dump", "", 0, ""},
	{"", "GET", "/metrics/dump/check", "", 0, ""},
	{"", "GET", "/rules/usage/cpu", "", 0, ""},
	{"", "GET", "/metadata/operators", "", 0, ""},
	{"", "GET", "/metadata/connections", "", 0, ""},
	{"", "GET", "/metadata/connections/nope", "", 0, ""},
	{"", "POST", "/batch/req", `[{"method":"GET","path":"/ping"}]`, 0, ""},
	{"", "POST", "/config/uploads", `{"name":"u.txt","content":"x"}`, 0, ""},
	{"", "GET", "/config/uploads", "", 0, ""},
	{"", "DELETE", "/config/uploads/u.txt", "", 0, ""},
	{"", "GET", "/plugins/sources", "", 0, ""},
	{"", "POST", "/plugins/sources", `{}`, 0, ""},
	{"", "GET", "/plugins/sinks/prebuild", "", 0, ""},
	{"", "GET", "/plugins/portables/x", "", 0, ""},
	{"", "GET", "/plugins/udfs", "", 0, ""},
	{"", "GET", "/services", "", 0, ""},
	{"", "DELETE", "/services/x", "", 0, ""},
	{"", "GET", "/schemas/protobuf", "", 0, ""},
	{"", "GET", "/udf/javascript", "", 0, ""},
	{"", "POST", "/udf/javascript", `{}`, 0, ""},
	{"", "POST", "/udf/javascript", `{"id":"f","script":"function f(x) { return x }"}`, 0, ""},
	{"", "GET", "/udf/javascript/f", "", 0, ""},
	{"", "PUT", "/udf/javascript/f", `{"id":"f","script":"function f(x) { return x + 1 }"}`, 0, ""},
	{"", "DELETE", "/udf/javascript/f", "", 0, ""},
	{"", "POST", "/ruletest", `{"id":"t","sql":"SELECT a FROM demo","mockSource":{"demo":{"data":[{"a":1}]}}}`, 0, ""},
	{"", "POST", "/ruletest", `{"id":"t","sql":"SELECT a FROM demo"}`, 0, ""},
	{"", "POST", "/ruletest/t/start", "", 0, ""},
	{"", "POST", "/ruletest/t/start", "", 0, ""},
	{"", "DELETE", "/ruletest/t", "", 0, ""},
	{"", "DELETE", "/ruletest/t", "", 0, ""},
	{"", "GET", "/test/t", "", 0, ""},
	{"", "DELETE", "/connections/c1", "", 0, ""},
	{"", "DELETE", "/rules/r2", "", 0, ""},
	{"", "DELETE", "/rules/r1", "", 0, ""},
	{"", "DELETE", "/tables/lk", "", 0, ""},
	{"", "DELETE", "/streams/demo", "", 0, ""},
	{"", "GET", "/nothing", "", 0, ""},
}
