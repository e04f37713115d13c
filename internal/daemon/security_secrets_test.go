package daemon_test

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/testwait"
)

// syslogSink is a syslog server on a UDP port that keeps every datagram.
type syslogSink struct {
	pc   net.PacketConn
	mu   sync.Mutex
	text strings.Builder
}

func newSyslogSink(t *testing.T) *syslogSink {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &syslogSink{pc: pc}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 64<<10)
		for {
			n, _, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			s.mu.Lock()
			s.text.Write(buf[:n])
			s.text.WriteByte('\n')
			s.mu.Unlock()
		}
	}()
	t.Cleanup(func() { pc.Close(); <-done })
	return s
}

func (s *syslogSink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.text.String()
}

// echoServer answers every request 400 with the request's Authorization
// header and query in the body, as a server that quotes what it refused
// does, and records the Authorization headers it saw.
type echoServer struct {
	*httptest.Server
	mu   sync.Mutex
	auth []string
}

func newEchoServer(t *testing.T) *echoServer {
	e := &echoServer{}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		e.auth = append(e.auth, r.Header.Get("Authorization"))
		e.mu.Unlock()
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte("refused Authorization: " + r.Header.Get("Authorization") + " for ?" + r.URL.RawQuery)) //nolint:errcheck // test server
	}))
	t.Cleanup(e.Close)
	return e
}

func (e *echoServer) seen() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.auth...)
}

// TestSecuritySecretPaths follows secrets into the places other than the
// catalog routes where they can surface: the rule's SQL (GET, explain,
// export), rule status and its error texts (a sink error quoting a URL with
// a password and a server echoing a header), bulk and batch answers, the
// log file and syslog; and secrets inside list elements (a simulator's
// rows, a connection's list of endpoints) through GET, export and PUT.
func TestSecuritySecretPaths(t *testing.T) {
	sys := newSyslogSink(t)
	echo := newEchoServer(t)
	d := startKuiperd(t, "KUIPER__BASIC__ENABLEPRIVATENET=true",
		"KUIPER__BASIC__SYSLOG__ENABLE=true", "KUIPER__BASIC__SYSLOG__NETWORK=udp",
		"KUIPER__BASIC__SYSLOG__ADDRESS="+sys.pc.LocalAddr().String(), "KUIPER__BASIC__SYSLOG__LEVEL=debug")
	secrets := []string{"sqlPW", "sqlTOK", "restPW", "restKEY", "restHDR", "listHDR", "listPW", "listTOK"}
	check := func(what, body string) {
		t.Helper()
		for _, s := range secrets {
			if strings.Contains(body, s) {
				t.Errorf("%s leaks %s: %s", what, s, body)
			}
		}
	}

	d.must("PUT", "/metadata/sources/simulator/confKeys/sim",
		`{"data":[{"a":1,"auth":{"headers":[{"Authorization":"Bearer listHDR"}]}}],"interval":"20ms"}`, 200)
	d.must("POST", "/streams", ddl(`CREATE STREAM sim () WITH (TYPE="simulator", CONF_KEY="sim")`), 201)
	sql := `SELECT *, "http://u:sqlPW@h/x?token=sqlTOK" AS link FROM sim`
	restURL := strings.Replace(echo.URL, "http://", "http://user:restPW@", 1) + "/x?api_key=restKEY"
	ruleBody := func(sql, out string) string {
		return `{"id":"st","sql":` + jsonString(sql) + `,"actions":[` +
			`{"rest":{"url":` + jsonString(restURL) + `,"debugResp":true,"headers":{"Authorization":"Bearer restHDR"}}},` +
			`{"file":{"path":` + jsonString(out) + `}}]}`
	}
	d.must("POST", "/rules", ruleBody(sql, "data/out/before.txt"), 201)
	testwait.Within(t, 60*time.Second, "the rest sink's error in the rule status", func() bool {
		_, st := d.do("GET", "/rules/st/status", "")
		return strings.Contains(st, "http status 400")
	})
	_, st := d.do("GET", "/rules/st/status", "")
	if !strings.Contains(st, "user:******@") || !strings.Contains(st, "Authorization: ******") {
		t.Errorf("the status does not show the masked error: %s", st)
	}
	_, explain := d.do("GET", "/rules/st/explain", "")
	if !strings.Contains(explain, `u:******@h/x?token=******`) {
		t.Errorf("explain does not show the masked literal: %s", explain)
	}
	rj := d.must("GET", "/rules/st", "", 200)
	if !strings.Contains(rj, `u:******@h/x?token=******`) {
		t.Errorf("GET /rules/st does not show the masked SQL: %s", rj)
	}
	for _, p := range []string{"/rules/st/status", "/v2/rules/st/status", "/rules/status/all", "/rules/st/explain", "/rules/st/topo", "/data/export", "/metadata/sources/yaml/simulator"} {
		_, body := d.do("GET", p, "")
		check("GET "+p, body)
	}
	_, exp := d.do("POST", "/ruleset/export", "")
	check("ruleset export", exp)
	_, bulk := d.do("POST", "/rules/bulkstart", `{"tags":["none"]}`)
	check("bulk start", bulk)
	_, batch := d.do("POST", "/batch/req", `[{"method":"GET","path":"/rules/st/status"},{"method":"GET","path":"/rules/st"}]`)
	check("batch", batch)

	// Sending back what GET showed keeps the stored secrets: the SQL
	// literal and the simulator's listed header reach the file sink, the
	// rest server still gets the header.
	var yaml map[string]map[string]any
	if err := json.Unmarshal([]byte(d.must("GET", "/metadata/sources/yaml/simulator", "", 200)), &yaml); err != nil {
		t.Fatal(err)
	}
	simBack, _ := json.Marshal(yaml["sim"])
	if !strings.Contains(string(simBack), `"Authorization":"******"`) {
		t.Fatalf("the listed header is not masked: %s", simBack)
	}
	d.must("PUT", "/metadata/sources/simulator/confKeys/sim", string(simBack), 200)
	var masked map[string]any
	if err := json.Unmarshal([]byte(rj), &masked); err != nil {
		t.Fatal(err)
	}
	masked["actions"].([]any)[1].(map[string]any)["file"].(map[string]any)["path"] = "data/out/after.txt"
	back, _ := json.Marshal(masked)
	d.must("PUT", "/rules/st", string(back), 200)
	after := filepath.Join(d.base, "data", "out", "after.txt")
	testwait.Within(t, 60*time.Second, "rows from the restored rule", func() bool {
		b, _ := os.ReadFile(after)
		return strings.Contains(string(b), "listHDR")
	})
	out, err := os.ReadFile(after)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "u:sqlPW@h/x?token=sqlTOK") || strings.Contains(string(out), "******") {
		t.Errorf("the restored rule wrote %s", out)
	}
	n := len(echo.seen())
	testwait.Within(t, 60*time.Second, "the restored rest sink to send", func() bool { return len(echo.seen()) > n })
	for _, a := range echo.seen() {
		if a != "Bearer restHDR" {
			t.Fatalf("the rest server got Authorization %q", a)
		}
	}

	// The masked SQL with a new host is refused: its secret would go there.
	moved := strings.Replace(rj, "@h/x", "@evil/x", 1)
	code, body := d.do("PUT", "/rules/st", moved)
	if code != 422 || !strings.Contains(body, "the rule's sql carries a masked value") {
		t.Errorf("masked SQL with a new host: %d %s", code, body)
	}

	// A connection holding lists: endpoints with their own tokens, URLs
	// with passwords. A masked value comes back only to an unchanged
	// endpoint of its own list element.
	d.must("POST", "/connections", `{"id":"c2","typ":"websocket","props":{`+
		`"targets":[{"url":"ws://h1/a","headers":[{"Authorization":"Bearer listTOK"}]},{"url":"ws://h2/b","token":"listTOK"}],`+
		`"mirrors":["http://u:listPW@m1/x","http://u:listPW@m2/x"]}}`, 201)
	cj := d.must("GET", "/connections/c2", "", 200)
	check("GET /connections/c2", cj)
	_, exp = d.do("GET", "/data/export", "")
	check("export with c2", exp)
	var conn map[string]any
	if err := json.Unmarshal([]byte(cj), &conn); err != nil {
		t.Fatal(err)
	}
	put := func(props map[string]any) (int, string) {
		b, _ := json.Marshal(map[string]any{"typ": "websocket", "props": props})
		return d.do("PUT", "/connections/c2", string(b))
	}
	props := conn["props"].(map[string]any)
	if code, body := put(props); code != 200 {
		t.Fatalf("the masked connection sent back: %d %s", code, body)
	}
	props["targets"].([]any)[1].(map[string]any)["url"] = "ws://evil/b"
	code, body = put(props)
	if code != 422 || !strings.Contains(body, `targets[1].token\" is masked (******) but \"targets[1].url\" changed`) {
		t.Errorf("a listed token to a new url: %d %s", code, body)
	}
	check("422 answer", body)
	props["targets"].([]any)[1].(map[string]any)["url"] = "ws://h2/b"
	props["mirrors"].([]any)[0] = "http://u:******@evil/x"
	code, body = put(props)
	if code != 422 || !strings.Contains(body, `mirrors[0]\" carries a masked secret`) && !strings.Contains(body, `but \"mirrors\" changed`) {
		t.Errorf("a listed URL password to a new host: %d %s", code, body)
	}
	check("422 answer", body)
	_, exp = d.do("GET", "/data/export", "")
	var doc map[string]map[string]string
	if err := json.Unmarshal([]byte(exp), &doc); err != nil {
		t.Fatal(err)
	}
	imp, _ := json.Marshal(doc)
	body = d.must("POST", "/data/import?partial=1", `{"content":`+jsonString(string(imp))+`}`, 200)
	check("import answer", body)

	check("log", d.log())
	testwait.Within(t, 60*time.Second, "syslog to get the debug lines", func() bool { return strings.Contains(sys.String(), "rest call rejected") })
	if !strings.Contains(sys.String(), "rest sink response") {
		t.Errorf("syslog has no rest sink response line: %s", sys.String())
	}
	check("syslog", sys.String())
}
