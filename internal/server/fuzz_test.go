package server_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/rekuiper/rekuiper/internal/server/servertest"
)

// fuzzRoutes are the REST routes the fuzz target drives; {} is replaced by
// a fuzzed name.
var fuzzRoutes = []string{
	"GET /", "GET /ping",
	"GET /streams", "POST /streams", "GET /streams/{}", "PUT /streams/{}", "DELETE /streams/{}", "GET /streams/{}/schema", "GET /streamdetails",
	"GET /tables", "POST /tables", "GET /tables/{}", "PUT /tables/{}", "DELETE /tables/{}", "GET /tabledetails?kind={}",
	"GET /rules", "POST /rules", "GET /rules/{}", "PUT /rules/{}", "DELETE /rules/{}",
	"POST /rules/{}/start", "POST /rules/{}/stop", "POST /rules/{}/restart",
	"GET /rules/{}/status", "GET /v2/rules/{}/status", "GET /rules/status/all", "GET /rules/{}/topo", "GET /rules/{}/explain",
	"POST /rules/validate", "POST /rules/replay", "PUT /rules/{}/tags", "DELETE /rules/{}/tags", "GET /rules/tags/match",
	"POST /rules/bulkstart", "POST /rules/bulkstop",
	"GET /connections", "POST /connections", "GET /connections/{}", "PUT /connections/{}", "DELETE /connections/{}",
	"GET /metadata/sources/yaml/{}", "PUT /metadata/sources/{}/confKeys/k", "PUT /metadata/sources/file/confKeys/{}", "DELETE /metadata/sources/{}/confKeys/k",
	"GET /metadata/sinks/yaml/{}", "PUT /metadata/sinks/{}/confKeys/k", "DELETE /metadata/sinks/{}/confKeys/{}",
	"GET /metadata/connections/yaml/{}", "PUT /metadata/connections/{}/confKeys/{}",
	"POST /ruleset/export", "POST /ruleset/import", "GET /data/export", "POST /data/export", "POST /data/import", "POST /data/import?partial=1",
}

// fuzzSeeds are valid requests (route index into fuzzRoutes, name, body).
var fuzzSeeds = []struct {
	route string
	name  string
	body  string
}{
	{"POST /streams", "", `{"sql":"CREATE STREAM demo (a BIGINT, b STRING) WITH (TYPE=\"memory\", DATASOURCE=\"t\", FORMAT=\"json\")"}`},
	{"POST /streams", "", `{"sql":"CREATE STREAM f () WITH (TYPE=\"file\", DATASOURCE=\"x.json\", EXTRA='{\"path\":\"data/in\",\"actionAfterRead\":2,\"moveTo\":\"done\"}')"}`},
	{"POST /tables", "", `{"sql":"CREATE TABLE lk (a BIGINT) WITH (TYPE=\"memory\", KIND=\"lookup\", KEY=\"a\", DATASOURCE=\"t2\")"}`},
	{"POST /rules", "", `{"id":"r1","sql":"SELECT a, count(*) FROM demo GROUP BY a, TUMBLINGWINDOW(ss, 1)","actions":[{"log":{}},{"memory":{"topic":"o"}}]}`},
	{"POST /rules", "", `{"id":"r2","sql":"SELECT * FROM demo WHERE a > 1","actions":[{"rest":{"url":"http://u:p@example.com/x?token=t","headers":{"Authorization":"Bearer x"}}}],"options":{"qos":1,"checkpointInterval":"1s"}}`},
	{"POST /rules", "", `{"id":"r3","sql":"SELECT * FROM demo","actions":[{"file":{"path":"data/out.txt"}}],"triggered":false}`},
	{"PUT /rules/{}", "r1", `{"id":"r1","sql":"SELECT b FROM demo","actions":[{"log":{}}]}`},
	{"POST /rules/validate", "", `{"id":"v","sql":"SELECT * FROM demo","actions":[{"log":{}}]}`},
	{"POST /rules/replay", "", `{"streams":["CREATE STREAM s (a BIGINT) WITH (DATASOURCE=\"s\");"],"inputs":{"s":[{"data":{"a":1}}]},"timeline":[{"at":5,"stream":"s","index":0}],"rule":{"sql":"SELECT a, count(*) FROM s GROUP BY TUMBLINGWINDOW(ms, 2)"},"expected":[[{"a":1}]]}`},
	{"PUT /rules/{}/tags", "r1", `{"tags":["a","b"]}`},
	{"POST /rules/{}/stop", "r1", ""},
	{"GET /rules/{}/explain", "r1", ""},
	{"POST /connections", "", `{"id":"c1","typ":"mqtt","props":{"server":"tcp://u:pw@127.0.0.1:1","password":"pw"}}`},
	{"PUT /connections/{}", "c1", `{"typ":"mqtt","props":{"server":"tcp://u:******@127.0.0.1:1","password":"******"}}`},
	{"PUT /metadata/sources/{}/confKeys/k", "mqtt", `{"server":"tcp://127.0.0.1:1","password":"x","qos":1}`},
	{"PUT /metadata/sources/file/confKeys/{}", "k2", `{"path":"data","fileType":"csv"}`},
	{"GET /metadata/sources/yaml/{}", "..%2F..%2Fetc%2Fx", ""},
	{"POST /ruleset/import", "", `{"content":"{\"streams\":{\"s2\":\"CREATE STREAM s2 () WITH (TYPE=\\\"memory\\\", DATASOURCE=\\\"q\\\")\"},\"rules\":{}}"}`},
	{"POST /ruleset/import", "", `{"file":"file:///etc/passwd"}`},
	{"POST /data/import?partial=1", "", `{"content":"{\"sinkConfig\":{\"mqtt\":\"{\\\"k\\\":{\\\"server\\\":\\\"tcp://h:1\\\"}}\"}}"}`},
	{"POST /data/export", "", `["r1"]`},
	{"POST /rules/bulkstart", "", `[{"id":"r1"}]`},
}

// FuzzREST sends a fuzzed JSON body to a fuzzed route of the in-process
// server over a real SQLite catalog and the real engine. No request may
// panic or answer 500 (this target injects no storage fault).
func FuzzREST(f *testing.F) {
	index := map[string]int{}
	for i, r := range fuzzRoutes {
		index[r] = i
	}
	for _, s := range fuzzSeeds {
		i, ok := index[s.route]
		if !ok {
			f.Fatalf("seed route %q is not in fuzzRoutes", s.route)
		}
		f.Add(uint8(i), s.name, []byte(s.body))
	}
	h := newFuzzServer(f)
	f.Fuzz(func(t *testing.T, route uint8, name string, body []byte) {
		r := fuzzRoutes[int(route)%len(fuzzRoutes)]
		method, path, _ := strings.Cut(r, " ")
		path = strings.ReplaceAll(path, "{}", url.PathEscape(name))
		if strings.HasPrefix(name, "..%2F") { // seeds that test raw escapes
			path = strings.ReplaceAll(r[len(method)+1:], "{}", escapeControls(name))
		}
		req := httptest.NewRequest(method, "http://kuiperd"+path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code >= 500 {
			t.Fatalf("%s %s %q: %d %s", method, path, body, w.Code, w.Body.String())
		}
	})
}

func newFuzzServer(f *testing.F) http.Handler {
	// Streams of the default type would reach the broker on the default
	// port; point them at a port nothing listens on.
	d := servertest.Start(f, servertest.Options{Etc: map[string]string{"mqtt_source.yaml": "default:\n  server: tcp://127.0.0.1:1\n"}})
	return d.Handler
}

// escapeControls percent-encodes spaces and control bytes, which no
// request line can carry, and leaves the rest of a raw path as it is.
func escapeControls(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c == 0x7f {
			fmt.Fprintf(&b, "%%%02X", c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}
