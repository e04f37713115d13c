package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/config"
	"github.com/rekuiper/rekuiper/internal/rulemgr"
	"github.com/rekuiper/rekuiper/internal/rulemgr/rulemgrtest"
	"github.com/rekuiper/rekuiper/internal/server"
	"github.com/rekuiper/rekuiper/internal/server/servertest"
)

// faultyStore fails every write while fail is set, as a full disk would.
type faultyStore struct {
	*catalog.SQLiteStore
	mu   sync.Mutex
	fail bool
}

var errDiskFull = errors.New("database or disk is full")

func (f *faultyStore) failing() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fail
}

func (f *faultyStore) PutStream(ctx context.Context, s catalog.Stream, m catalog.PutMode) (catalog.Stream, error) {
	if f.failing() {
		return catalog.Stream{}, errDiskFull
	}
	return f.SQLiteStore.PutStream(ctx, s, m)
}

func (f *faultyStore) PutRule(ctx context.Context, r catalog.Rule, m catalog.PutMode) (catalog.Rule, error) {
	if f.failing() {
		return catalog.Rule{}, errDiskFull
	}
	return f.SQLiteStore.PutRule(ctx, r, m)
}

func (f *faultyStore) SetRuleState(ctx context.Context, id string, st catalog.RuleState) (catalog.Rule, error) {
	if f.failing() {
		return catalog.Rule{}, errDiskFull
	}
	return f.SQLiteStore.SetRuleState(ctx, id, st)
}

func (f *faultyStore) DeleteStream(ctx context.Context, name string) error {
	if f.failing() {
		return errDiskFull
	}
	return f.SQLiteStore.DeleteStream(ctx, name)
}

type testServer struct {
	t      *testing.T
	url    string
	data   string // the data folder
	cat    *catalog.Catalog
	store  *faultyStore
	runner *rulemgrtest.Runner
	mgr    *rulemgr.Manager
}

func newServer(t *testing.T, etc string) *testServer {
	t.Helper()
	return newServerWith(t, etc, nil)
}

// newServerWith is newServer with opts, its Config already set, passed
// through edit before the server is built.
func newServerWith(t *testing.T, etc string, edit func(*server.Options)) *testServer {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	st, err := catalog.Open(ctx, filepath.Join(dir, "sqliteKV.db"), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fs := &faultyStore{SQLiteStore: st}
	cat, err := catalog.New(ctx, fs)
	if err != nil {
		t.Fatal(err)
	}
	runner := rulemgrtest.New()
	mgr := rulemgr.New(rulemgr.Config{Catalog: cat, Runner: runner})
	cfg := config.Default()
	cfg.Paths = config.Paths{Etc: etc, Data: dir}
	opts := server.Options{Catalog: cat, Rules: mgr, Config: cfg}
	if edit != nil {
		edit(&opts)
	}
	srv := httptest.NewServer(server.New(opts))
	t.Cleanup(func() {
		srv.Close()
		mgr.Close(context.Background()) //nolint:errcheck // test end
		st.Close()
	})
	return &testServer{t: t, url: srv.URL, data: dir, cat: cat, store: fs, runner: runner, mgr: mgr}
}

// do sends a request (a JSON body when body is not empty) and returns the
// status and body; an error answer must have the one JSON shape.
func (s *testServer) do(method, path, body string) (int, string) {
	s.t.Helper()
	resp, b := servertest.RequestJSON(s.t, method, s.url+path, body)
	s.checkErrorBody(method, path, resp, b)
	if resp.StatusCode >= 400 {
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			s.t.Errorf("%s %s: error content type %q", method, path, ct)
		}
	}
	return resp.StatusCode, b
}

// checkErrorBody fails the test unless an error answer (400 and up) has
// the one JSON error shape, {error, message}.
func (s *testServer) checkErrorBody(method, path string, resp *http.Response, b string) {
	s.t.Helper()
	if resp.StatusCode < 400 {
		return
	}
	var shape struct {
		Error   int    `json:"error"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal([]byte(b), &shape); err != nil || shape.Error == 0 || shape.Message == "" {
		s.t.Errorf("%s %s: error body %q is not {error, message}", method, path, b)
	}
}

// step is one REST call and what its answer must be: the status, and a
// substring of the body ("" for any).
type step struct {
	name, method, path, body string
	status                   int
	contains                 string
}

func (s *testServer) run(steps []step) {
	s.t.Helper()
	for _, st := range steps {
		s.t.Run(st.name, func(t *testing.T) {
			code, body := s.do(st.method, st.path, st.body)
			if code != st.status || !strings.Contains(body, st.contains) {
				t.Fatalf("%s %s: got %d %q, want %d containing %q", st.method, st.path, code, body, st.status, st.contains)
			}
		})
	}
}

const demoDDL = `{"sql":"CREATE STREAM demo (a bigint, b STRUCT(c string), d ARRAY(float)) WITH (DATASOURCE=\"t\", TYPE=\"memory\", FORMAT=\"json\", VERSION=\"2\")"}`

func TestBasics(t *testing.T) {
	s := newServer(t, "")
	s.run([]step{
		{"ping", "GET", "/ping", "", 200, ""},
		{"info", "GET", "/", "", 200, `"version":"dev"`},
		{"info post", "POST", "/", "", 200, `"upTimeSeconds"`},
		{"unknown route", "GET", "/nothing/here", "", 404, "no such route"},
		{"wrong method", "PATCH", "/streams", "", 404, ""},
	})
}

func TestStreams(t *testing.T) {
	s := newServer(t, "")
	s.run([]step{
		{"create", "POST", "/streams", demoDDL, 201, "Stream demo is created."},
		{"create again", "POST", "/streams", demoDDL, 409, "already exists"},
		{"empty body", "POST", "/streams", "", 400, "empty body"},
		{"bad json", "POST", "/streams", `{"sql":`, 400, "decode body"},
		{"unknown field", "POST", "/streams", `{"sql":"x","extra":1}`, 400, `unknown field \"extra\"`},
		{"bad sql", "POST", "/streams", `{"sql":"CREATE STREAM"}`, 400, "parse sql"},
		{"select on streams", "POST", "/streams", `{"sql":"SELECT * FROM s1"}`, 400, "CREATE STREAM"},
		{"list", "GET", "/streams", "", 200, `["demo"]`},
		{"details", "GET", "/streamdetails", "", 200, `[{"format":"json","name":"demo","type":"memory"}]`},
		{"describe", "GET", "/streams/demo", "", 200, `"StreamFields":[{"FieldType":"bigint","Name":"a"},{"FieldType":{"Fields":[{"FieldType":"string","Name":"c"}],"Type":"struct"},"Name":"b"},{"FieldType":{"ElementType":"float","Type":"array"},"Name":"d"}]`},
		{"describe options", "GET", "/streams/demo", "", 200, `"Options":{"datasource":"t","format":"json","type":"memory","version":"2"}`},
		{"describe unknown", "GET", "/streams/nope", "", 404, "not found"},
		{"describe table as stream", "GET", "/tables/demo", "", 404, "not found"},
		{"schema", "GET", "/streams/demo/schema", "", 200, `"d":{"index":0,"items":{"index":0,"type":"float"},"type":"array"}`},
		{"schema unknown", "GET", "/streams/nope/schema", "", 404, ""},
		{"replace older version", "PUT", "/streams/demo", `{"sql":"CREATE STREAM demo () WITH (TYPE=\"memory\", VERSION=\"1\")"}`, 409, "not newer"},
		{"replace name mismatch", "PUT", "/streams/demo", `{"sql":"CREATE STREAM other () WITH (TYPE=\"memory\")"}`, 400, "does not match"},
		{"replace unknown", "PUT", "/streams/nope", `{"sql":"CREATE STREAM nope () WITH (TYPE=\"memory\")"}`, 404, ""},
		{"replace", "PUT", "/streams/demo", `{"sql":"CREATE STREAM demo () WITH (TYPE=\"memory\", DATASOURCE=\"t2\", VERSION=\"3\")"}`, 200, "Stream demo is updated."},
		{"replaced", "GET", "/streams/demo", "", 200, `"StreamFields":null`},
		{"create table", "POST", "/tables", `{"sql":"CREATE TABLE lk () WITH (TYPE=\"memory\", KIND=\"lookup\", KEY=\"id\")"}`, 201, "Table lk is created."},
		{"create scan table", "POST", "/tables", `{"sql":"CREATE TABLE sc () WITH (TYPE=\"file\", FORMAT=\"csv\")"}`, 201, "Table sc is created."},
		{"tables", "GET", "/tables", "", 200, `["lk","sc"]`},
		{"lookup tables", "GET", "/tables?kind=lookup", "", 200, `["lk"]`},
		{"scan table details", "GET", "/tabledetails?kind=scan", "", 200, `[{"format":"csv","name":"sc","type":"file"}]`},
		{"describe table", "GET", "/tables/lk", "", 200, `"StreamType":1`},
		{"streams exclude tables", "GET", "/streams", "", 200, `["demo"]`},
		{"rule on demo", "POST", "/rules", `{"id":"r1","sql":"SELECT * FROM demo INNER JOIN lk ON demo.a = lk.id","actions":[{"log":{}}]}`, 201, ""},
		{"drop referenced", "DELETE", "/streams/demo", "", 409, "referenced by rules r1"},
		{"drop referenced table", "DELETE", "/tables/lk", "", 409, "r1"},
		{"drop forced", "DELETE", "/streams/demo?force=true", "", 200, "Stream demo is dropped."},
		{"drop unknown", "DELETE", "/streams/demo", "", 404, ""},
		{"drop table", "DELETE", "/tables/sc", "", 200, "Table sc is dropped."},
	})
}

func TestStorageFailure(t *testing.T) {
	s := newServer(t, "")
	s.run([]step{
		{"create", "POST", "/streams", demoDDL, 201, ""},
		{"rule", "POST", "/rules", `{"id":"r1","sql":"SELECT * FROM demo","actions":[{"log":{}}]}`, 201, ""},
	})
	s.store.mu.Lock()
	s.store.fail = true
	s.store.mu.Unlock()
	s.run([]step{
		{"create fails", "POST", "/streams", `{"sql":"CREATE STREAM s2 () WITH (TYPE=\"memory\")"}`, 500, "disk is full"},
		{"not in memory", "GET", "/streams", "", 200, `["demo"]`},
		{"drop fails", "DELETE", "/streams/demo?force=true", "", 500, "disk is full"},
		{"still there", "GET", "/streams/demo", "", 200, ""},
		{"rule create fails", "POST", "/rules", `{"id":"r2","sql":"SELECT * FROM demo","actions":[{"log":{}}]}`, 500, "disk is full"},
		{"rule absent", "GET", "/rules/r2", "", 404, ""},
		{"stop fails", "POST", "/rules/r1/stop", "", 500, "disk is full"},
		{"still running", "GET", "/rules/r1/status", "", 200, `"status": "running"`},
		{"update fails", "PUT", "/rules/r1", `{"id":"r1","sql":"SELECT a FROM demo","actions":[{"log":{}}]}`, 500, ""},
		{"definition unchanged", "GET", "/rules/r1", "", 200, `"sql":"SELECT * FROM demo"`},
	})
	s.store.mu.Lock()
	s.store.fail = false
	s.store.mu.Unlock()
	s.run([]step{
		{"writes work again", "POST", "/streams", `{"sql":"CREATE STREAM s2 () WITH (TYPE=\"memory\")"}`, 201, ""},
		{"stop works", "POST", "/rules/r1/stop", "", 200, "Rule r1 was stopped."},
	})
	if err := s.store.IntegrityCheck(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestSecretMasking(t *testing.T) {
	etc := t.TempDir()
	if err := os.WriteFile(filepath.Join(etc, "mqtt_source.yaml"), []byte("default:\n  server: tcp://127.0.0.1:1883\n  password: filepw\n  certificationRaw: CERT\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := newServer(t, etc)
	s.run([]step{
		{"stream", "POST", "/streams", demoDDL, 201, ""},
		{"rule with secrets", "POST", "/rules", `{"id":"r1","sql":"SELECT * FROM demo","actions":[{"mqtt":{"server":"tcp://h:1883","password":"rulepw","token":"tk","nested":{"saslPassword":"sp"}}}]}`, 201, ""},
		{"yaml masked", "GET", "/metadata/sources/yaml/mqtt", "", 200, `"password":"******"`},
		{"certificate is not secret", "GET", "/metadata/sources/yaml/mqtt", "", 200, `"certificationRaw":"CERT"`},
		{"put confKey", "PUT", "/metadata/sources/mqtt/confKeys/demo_conf", `{"server":"tcp://x:1883","password":"keypw","clientSecret":"cs"}`, 200, ""},
		{"put confKey bad body", "PUT", "/metadata/sources/mqtt/confKeys/demo_conf", `[1]`, 400, ""},
		{"keep secret on masked put", "PUT", "/metadata/sources/mqtt/confKeys/demo_conf", `{"server":"tcp://x:1883","password":"******","clientSecret":"******","qos":1}`, 200, ""},
		{"masked put to a new server", "PUT", "/metadata/sources/mqtt/confKeys/demo_conf", `{"server":"tcp://y:1883","password":"******","clientSecret":"******"}`, 422, `\"server\" changed`},
		{"connection", "POST", "/connections", `{"id":"c1","typ":"mqtt","props":{"server":"tcp://h:1883","password":"connpw","privateKey":"pk"}}`, 201, "success"},
	})
	for _, path := range []string{"/rules/r1", "/metadata/sources/yaml/mqtt", "/connections", "/connections/c1", "/data/export"} {
		t.Run("GET "+path, func(t *testing.T) {
			code, body := s.do("GET", path, "")
			for _, secret := range []string{"rulepw", "tk", `"sp"`, "filepw", "keypw", `"cs"`, "connpw", `"pk"`} {
				if strings.Contains(body, secret) {
					t.Fatalf("%s leaks %s: %s", path, secret, body)
				}
			}
			if code != 200 || !strings.Contains(body, "******") {
				t.Fatalf("%s: %d %s", path, code, body)
			}
		})
	}
	code, body := s.do("POST", "/ruleset/export", "")
	if code != 200 || strings.Contains(body, "rulepw") {
		t.Fatalf("ruleset export: %d %s", code, body)
	}
	k, err := s.cat.ConfKey(catalog.ConfSource, "mqtt", "demo_conf")
	if err != nil || k.Props["password"] != "keypw" || k.Props["clientSecret"] != "cs" || k.Props["server"] != "tcp://x:1883" {
		t.Fatalf("masked put lost the stored secret: %v %v", k.Props, err)
	}
	s.run([]step{
		{"rule put with masked secret", "PUT", "/rules/r1", `{"id":"r1","sql":"SELECT * FROM demo","actions":[{"mqtt":{"server":"tcp://h:1883","password":"******","token":"******","nested":{"saslPassword":"******"},"qos":1}}]}`, 200, "Rule r1 was updated successfully."},
		{"rule put with masked secret to a new server", "PUT", "/rules/r1", `{"id":"r1","sql":"SELECT * FROM demo","actions":[{"mqtt":{"server":"tcp://h2:1883","password":"******","token":"******","nested":{"saslPassword":"******"}}}]}`, 422, `\"server\" changed`},
		{"delete confKey", "DELETE", "/metadata/sources/mqtt/confKeys/demo_conf", "", 200, ""},
		{"delete confKey again", "DELETE", "/metadata/sources/mqtt/confKeys/demo_conf", "", 404, ""},
		{"sink confKeys empty", "GET", "/metadata/sinks/yaml/mqtt", "", 200, "{}"},
		{"connection confKey", "PUT", "/metadata/connections/mqtt/confKeys/local", `{"server":"tcp://z:1883"}`, 200, ""},
		{"connection confKeys", "GET", "/metadata/connections/yaml/mqtt", "", 200, `"local":{"server":"tcp://z:1883"}`},
	})
	def, err := s.mgr.Def("r1")
	if err != nil {
		t.Fatal(err)
	}
	p := def.Actions[0].Props
	if p["password"] != "rulepw" || p["token"] != "tk" || p["nested"].(map[string]any)["saslPassword"] != "sp" || p["server"] != "tcp://h:1883" {
		t.Fatalf("rule update lost secrets: %v", p)
	}
}

func TestConnections(t *testing.T) {
	s := newServer(t, "")
	s.run([]step{
		{"create", "POST", "/connections", `{"id":"c1","typ":"mqtt","props":{"server":"tcp://h:1883","password":"pw"}}`, 201, "success"},
		{"create again", "POST", "/connections", `{"id":"c1","typ":"mqtt","props":{}}`, 409, ""},
		{"missing typ", "POST", "/connections", `{"id":"c2","props":{}}`, 400, "typ"},
		{"bad id", "POST", "/connections", `{"id":"a/b","typ":"mqtt"}`, 400, `connection \"a/b\" contains invalid characters`},
		{"unknown field", "POST", "/connections", `{"id":"c2","typ":"mqtt","foo":1}`, 400, "foo"},
		{"list", "GET", "/connections", "", 200, `"refCount":0`},
		{"get", "GET", "/connections/c1", "", 200, `"status":"disconnected"`},
		{"get unknown", "GET", "/connections/nope", "", 404, ""},
		{"stream", "POST", "/streams", demoDDL, 201, ""},
		{"rule using the alias", "POST", "/rules", `{"id":"r1","sql":"SELECT * FROM demo","actions":[{"mqtt":{"connectionSelector":"mqtt.c1","topic":"x"}}]}`, 201, ""},
		{"rule using the canonical form", "POST", "/rules", `{"id":"r2","sql":"SELECT * FROM demo","actions":[{"mqtt":{"connectionSelector":"mqtt/c1"}}]}`, 201, ""},
		{"rule using the id", "POST", "/rules", `{"id":"r3","sql":"SELECT * FROM demo","actions":[{"mqtt":{"connectionSelector":"c1"}}]}`, 201, ""},
		{"rule references", "GET", "/connections/c1", "", 200, `"ruleRefs":["r1","r2","r3"]`},
		{"no live user without an engine report", "GET", "/connections/c1", "", 200, `"refCount":0`},
		{"update referenced", "PUT", "/connections/c1", `{"typ":"mqtt","props":{}}`, 409, "referenced"},
		{"delete referenced", "DELETE", "/connections/c1", "", 409, "referenced"},
		{"drop r1", "DELETE", "/rules/r1", "", 200, ""},
		{"drop r2", "DELETE", "/rules/r2", "", 200, ""},
		{"drop r3", "DELETE", "/rules/r3", "", 200, ""},
		{"update", "PUT", "/connections/c1", `{"typ":"mqtt","props":{"server":"tcp://h:1883","password":"******","qos":1}}`, 200, "success"},
		{"masked update to a new server", "PUT", "/connections/c1", `{"typ":"mqtt","props":{"server":"tcp://h2:1883","password":"******"}}`, 422, `\"server\" changed`},
		{"update id mismatch", "PUT", "/connections/c1", `{"id":"c9","typ":"mqtt","props":{}}`, 400, ""},
		{"update unknown", "PUT", "/connections/nope", `{"typ":"mqtt","props":{}}`, 404, ""},
		{"delete", "DELETE", "/connections/c1", "", 200, "success"},
		{"delete again", "DELETE", "/connections/c1", "", 404, ""},
	})
}

func TestSplitRef(t *testing.T) {
	for _, tc := range []struct{ in, typ, key string }{
		{"mqtt/local", "mqtt", "local"}, {"mqtt.local", "mqtt", "local"}, {"MQTT.local.x", "mqtt", "local.x"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			typ, key, ok := server.SplitRef(tc.in)
			if !ok || typ != tc.typ || key != tc.key {
				t.Fatalf("got %q %q %v", typ, key, ok)
			}
		})
	}
	if _, _, ok := server.SplitRef("plain"); ok {
		t.Fatal("plain id split")
	}
}

func writeFile(path, content string) error { return os.WriteFile(path, []byte(content), 0o644) }
