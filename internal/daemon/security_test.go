package daemon_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/daemon"
	"github.com/rekuiper/rekuiper/internal/server/servertest"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// kuiperd is the whole daemon (REST, catalog on SQLite in a temp folder,
// the real engine and connectors) running in this process.
type kuiperd struct {
	t    *testing.T
	url  string
	base string
}

func (d *kuiperd) data() string { return filepath.Join(d.base, "data") }

func startKuiperd(t *testing.T, env ...string) *kuiperd {
	t.Helper()
	base := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	environ := append([]string{
		"KUIPER__BASIC__RESTPORT=0", "KUIPER__BASIC__RESTIP=127.0.0.1",
		"KUIPER__BASIC__FILELOG=true", "KUIPER__BASIC__CONSOLELOG=false", "KUIPER__BASIC__LOGLEVEL=debug",
		"KUIPER__BASIC__PROMETHEUS=false", "KUIPER__BASIC__PPROF=false", "KUIPER__SOURCE__HTTPSERVERPORT=0",
	}, env...)
	go func() {
		done <- daemon.Run(ctx, daemon.RunOptions{
			BaseDir: base, Environ: environ,
			Ready: func(addr string) { ready <- addr },
		})
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("kuiperd did not start: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("kuiperd: %v", err)
		}
	})
	return &kuiperd{t: t, url: "http://" + addr, base: base}
}

// do sends a request (JSON body when body is not empty) and returns the
// status and body.
func (d *kuiperd) do(method, path, body string) (int, string) {
	d.t.Helper()
	resp, b := servertest.RequestJSON(d.t, method, d.url+path, body)
	return resp.StatusCode, b
}

func (d *kuiperd) must(method, path, body string, want int) string {
	d.t.Helper()
	code, b := d.do(method, path, body)
	if code != want {
		d.t.Fatalf("%s %s: %d %s, want %d", method, path, code, b, want)
	}
	return b
}

func (d *kuiperd) log() string {
	b, err := os.ReadFile(filepath.Join(d.base, "log", "stream.log"))
	if err != nil {
		d.t.Fatal(err)
	}
	return string(b)
}

// eventually waits until cond holds. The deadline only bounds a hung
// test; nothing is asserted about how long it took.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestSecurityNames(t *testing.T) {
	d := startKuiperd(t)
	outside := filepath.Join(d.base, "outside.yaml")
	if err := os.WriteFile(outside, []byte("default:\n  server: tcp://LEAKED:1883\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"sources", "sinks", "connections"} {
		for _, p := range []string{"..%2F..%2Foutside", "..%2F..%2F..%2Ftmp%2Fx", "..", "%2E%2E"} {
			code, body := d.do("GET", "/metadata/"+c+"/yaml/"+p, "")
			if code < 400 || code >= 500 || strings.Contains(body, "LEAKED") {
				t.Errorf("GET /metadata/%s/yaml/%s: %d %s, want 4xx without the file", c, p, code, body)
			}
		}
		code, body := d.do("PUT", "/metadata/"+c+"/..%2F..%2Fx/confKeys/k", `{"a":1}`)
		if code != 400 {
			t.Errorf("PUT confKey with a traversing type: %d %s", code, body)
		}
	}

	escape := "../../../../outside/x"
	stream := "CREATE STREAM `" + escape + "` () WITH (TYPE=\"httppush\", DATASOURCE=\"/in\")"
	rs, _ := json.Marshal(map[string]any{
		"streams": map[string]string{escape: stream},
		"rules":   map[string]string{escape: `{"id":` + jsonString(escape) + `,"sql":"SELECT * FROM x","actions":[{"log":{}}],"options":{"qos":1}}`},
	})
	body := d.must("POST", "/ruleset/import", `{"content":`+jsonString(string(rs))+`}`, 400)
	if !strings.Contains(body, "contains invalid characters") {
		t.Errorf("ruleset import of %q: %s", escape, body)
	}
	data, _ := json.Marshal(map[string]any{"streams": map[string]string{escape: stream}, "sourceConfig": map[string]string{"../x": `{"k":{"a":1}}`}})
	body = d.must("POST", "/data/import?partial=1", `{"content":`+jsonString(string(data))+`}`, 400)
	if !strings.Contains(body, "contains invalid characters") || strings.Contains(body, `"streams":{}`) {
		t.Errorf("data import of %q: %s", escape, body)
	}
	d.must("GET", "/streams", "", 200)
	if b := d.must("GET", "/streams", "", 200); b != "[]" {
		t.Errorf("a stream was imported: %s", b)
	}
	for _, p := range []string{filepath.Join(d.base, "outside"), filepath.Join(filepath.Dir(d.base), "outside")} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists: %v", p, err)
		}
	}
	for _, bad := range []string{`{"id":"..","sql":"SELECT * FROM s","actions":[{"log":{}}]}`, `{"id":"a\u0000b","sql":"SELECT * FROM s","actions":[{"log":{}}]}`} {
		if code, b := d.do("POST", "/rules", bad); code < 400 || code >= 500 {
			t.Errorf("POST /rules %s: %d %s", bad, code, b)
		}
	}
}

func TestSecurityFileGuard(t *testing.T) {
	d := startKuiperd(t)
	outside := filepath.Join(d.base, "outside")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(outside, "victim.json")
	if err := os.WriteFile(victim, []byte(`[{"a":1}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	inside := filepath.Join(d.data(), "in")
	if err := os.MkdirAll(inside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(d.data(), "link")); err != nil {
		t.Fatal(err)
	}
	refused := []struct{ name, method, path, body, prop string }{
		{"source path", "POST", "/streams", ddl(`CREATE STREAM f1 () WITH (TYPE="file", DATASOURCE="victim.json", EXTRA='{"path":"` + outside + `"}')`), "path"},
		{"source path with ..", "POST", "/streams", ddl(`CREATE STREAM f2 () WITH (TYPE="file", EXTRA='{"path":"data/../../outside"}')`), "path"},
		{"source path through a symlink", "POST", "/streams", ddl(`CREATE STREAM f3 () WITH (TYPE="file", EXTRA='{"path":"link","actionAfterRead":1}')`), "path"},
		{"moveTo", "PUT", "/metadata/sources/file/confKeys/mv", `{"path":"in","actionAfterRead":2,"moveTo":` + jsonString(outside) + `}`, "moveTo"},
		{"datasource", "POST", "/streams", `{"sql":"CREATE STREAM f4 () WITH (TYPE=\"file\", DATASOURCE=\"../../outside/victim.json\")"}`, "datasource"},
		{"sink confKey", "PUT", "/metadata/sinks/file/confKeys/out", `{"path":` + jsonString(filepath.Join(outside, "out.txt")) + `}`, "path"},
		{"import file", "POST", "/ruleset/import", `{"file":"file://` + victim + `"}`, "file"},
	}
	for _, tc := range refused {
		code, body := d.do(tc.method, tc.path, tc.body)
		if code != 422 || !strings.Contains(body, `\"`+tc.prop+`\"`) && !strings.Contains(body, tc.prop+` \"`) || !strings.Contains(body, "outside the allowed folders") {
			t.Errorf("%s: %d %s, want 422 naming %s", tc.name, code, body, tc.prop)
		}
	}
	d.must("POST", "/streams", `{"sql":"CREATE STREAM s () WITH (TYPE=\"memory\", DATASOURCE=\"t\")"}`, 201)
	body := d.must("POST", "/rules", `{"id":"out","sql":"SELECT * FROM s","actions":[{"file":{"path":`+jsonString(filepath.Join(outside, "out.txt"))+`}}]}`, 422)
	if !strings.Contains(body, "outside the allowed folders") {
		t.Errorf("file sink outside: %s", body)
	}
	d.must("POST", "/rules", `{"id":"in","sql":"SELECT * FROM s","actions":[{"file":{"path":"data/in/out.txt"}}]}`, 201)

	// Defence in depth: a folder accepted at create time and swapped for a
	// symlink to outside afterwards is refused when the rule starts, and
	// actionAfterRead=1 deletes nothing outside.
	swap := filepath.Join(d.data(), "swap")
	if err := os.MkdirAll(swap, 0o755); err != nil {
		t.Fatal(err)
	}
	d.must("POST", "/streams", ddl(`CREATE STREAM del () WITH (TYPE="file", EXTRA='{"path":"swap","actionAfterRead":1}')`), 201)
	if err := os.Remove(swap); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, swap); err != nil {
		t.Fatal(err)
	}
	d.must("POST", "/rules", `{"id":"del","sql":"SELECT * FROM del","actions":[{"log":{}}]}`, 201)
	testwait.Within(t, 60*time.Second, "rule del to report the refused path", func() bool {
		_, st := d.do("GET", "/rules/del/status", "")
		return strings.Contains(st, "outside the allowed folders")
	})
	if _, err := os.Stat(victim); err != nil {
		t.Fatalf("the file outside was touched: %v", err)
	}

	// The import oracle: a refused file gives the same answer whether it
	// exists or not.
	_, a := d.do("POST", "/ruleset/import", `{"file":"file:///etc/shadow"}`)
	_, b := d.do("POST", "/ruleset/import", `{"file":"file:///etc/no-such-file-here"}`)
	if strings.ReplaceAll(a, "shadow", "X") != strings.ReplaceAll(b, "no-such-file-here", "X") {
		t.Errorf("import file answers differ:\n%s\n%s", a, b)
	}
}

func TestSecurityFileGuardOff(t *testing.T) {
	d := startKuiperd(t, "KUIPER__BASIC__ALLOWEXTERNALFILEACCESS=true")
	outside := filepath.Join(d.base, "outside")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	d.must("POST", "/streams", ddl(`CREATE STREAM f1 () WITH (TYPE="file", EXTRA='{"path":"`+outside+`"}')`), 201)
	d.must("PUT", "/metadata/sinks/file/confKeys/out", `{"path":`+jsonString(filepath.Join(outside, "out.txt"))+`}`, 200)
}

func TestSecurityNetworkGuard(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte(`{"streams":{},"tables":{},"rules":{}}`)) //nolint:errcheck // test server
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := closed.Addr().(*net.TCPAddr).Port
	closed.Close()

	d := startKuiperd(t)
	_, open := d.do("POST", "/ruleset/import", `{"file":"http://127.0.0.1:`+port+`/"}`)
	code, shut := d.do("POST", "/ruleset/import", `{"file":"http://127.0.0.1:`+itoa(closedPort)+`/"}`)
	if code != 422 || strings.ReplaceAll(open, port, "P") != strings.ReplaceAll(shut, itoa(closedPort), "P") {
		t.Errorf("import from loopback: open port %s, closed port %d %s", open, code, shut)
	}
	code, body := d.do("POST", "/ruleset/import", `{"file":"http://localhost:`+port+`/"}`)
	if code != 422 || !strings.Contains(body, "not allowed") {
		t.Errorf("import from localhost: %d %s", code, body)
	}

	d.must("PUT", "/metadata/sources/simulator/confKeys/sim", `{"data":[{"a":1}],"interval":"10ms"}`, 200)
	d.must("POST", "/streams", `{"sql":"CREATE STREAM sim () WITH (TYPE=\"simulator\", CONF_KEY=\"sim\")"}`, 201)
	d.must("POST", "/rules", `{"id":"rest","sql":"SELECT * FROM sim","actions":[{"rest":{"url":"http://localhost:`+port+`/x"}}]}`, 201)
	d.must("POST", "/streams", ddl(`CREATE STREAM pull () WITH (TYPE="httppull", EXTRA='{"url":"http://localhost:`+port+`/","interval":"10ms"}')`), 201)
	d.must("POST", "/rules", `{"id":"pull","sql":"SELECT * FROM pull","actions":[{"log":{}}]}`, 201)
	for _, id := range []string{"rest", "pull"} {
		testwait.Within(t, 60*time.Second, "rule "+id+" to report the refused address", func() bool {
			_, st := d.do("GET", "/rules/"+id+"/status", "")
			return strings.Contains(st, "not allowed")
		})
	}
	if hits.Load() != 0 {
		t.Fatalf("the loopback server got %d requests", hits.Load())
	}

	on := startKuiperd(t, "KUIPER__BASIC__ENABLEPRIVATENET=true")
	on.must("POST", "/ruleset/import", `{"file":"http://localhost:`+port+`/"}`, 200)
	if hits.Load() != 1 {
		t.Fatalf("with enablePrivateNet true the server got %d requests, want 1", hits.Load())
	}
}

func ddl(sql string) string { return `{"sql":` + jsonString(sql) + `}` }

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// fakeBroker accepts MQTT connections and records the password of every
// CONNECT; it acknowledges the connection and reads whatever follows.
type fakeBroker struct {
	ln        net.Listener
	mu        sync.Mutex
	passwords []string
}

func newFakeBroker(t *testing.T) *fakeBroker {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &fakeBroker{ln: ln}
	go b.serve()
	t.Cleanup(func() { ln.Close() })
	return b
}

func (b *fakeBroker) url() string { return "tcp://" + b.ln.Addr().String() }

func (b *fakeBroker) seen() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.passwords...)
}

func (b *fakeBroker) serve() {
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		go b.conn(c)
	}
}

func (b *fakeBroker) conn(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	typ, body, err := readPacket(r)
	if err != nil || typ>>4 != 1 {
		return
	}
	pw, v5 := connectPassword(body)
	b.mu.Lock()
	b.passwords = append(b.passwords, pw)
	b.mu.Unlock()
	if v5 {
		c.Write([]byte{0x20, 3, 0, 0, 0}) //nolint:errcheck // the client may be gone
	} else {
		c.Write([]byte{0x20, 2, 0, 0}) //nolint:errcheck // the client may be gone
	}
	for {
		typ, _, err := readPacket(r)
		if err != nil {
			return
		}
		if typ>>4 == 12 { // PINGREQ
			c.Write([]byte{0xd0, 0}) //nolint:errcheck // the client may be gone
		}
	}
}

func readPacket(r *bufio.Reader) (byte, []byte, error) {
	typ, err := r.ReadByte()
	if err != nil {
		return 0, nil, err
	}
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return 0, nil, err
	}
	body := make([]byte, n)
	_, err = io.ReadFull(r, body)
	return typ, body, err
}

// connectPassword returns the password field of a CONNECT body (MQTT 3.1.1
// or 5) and whether it was MQTT 5.
func connectPassword(b []byte) (string, bool) {
	str := func() []byte {
		if len(b) < 2 {
			return nil
		}
		n := int(binary.BigEndian.Uint16(b))
		if len(b) < 2+n {
			b = nil
			return nil
		}
		s := b[2 : 2+n]
		b = b[2+n:]
		return s
	}
	str() // protocol name
	if len(b) < 4 {
		return "", false
	}
	level, flags := b[0], b[1]
	b = b[4:]
	v5 := level == 5
	skipProps := func() {
		n, k := binary.Uvarint(b)
		if k > 0 && int(n)+k <= len(b) {
			b = b[k+int(n):]
		}
	}
	if v5 {
		skipProps()
	}
	str() // client id
	if flags&0x04 != 0 {
		if v5 {
			skipProps()
		}
		str()
		str()
	}
	if flags&0x80 != 0 {
		str()
	}
	if flags&0x40 != 0 {
		return string(str()), v5
	}
	return "", v5
}

func TestSecuritySecrets(t *testing.T) {
	a, b := newFakeBroker(t), newFakeBroker(t)
	d := startKuiperd(t, "KUIPER__BASIC__ENABLEPRIVATENET=true")
	secrets := []string{"s3cretPW", "urlPW", "hdrTOKEN", "qTOKEN", "connPW", "keyPW", "pgPW", "streamPW", "streamTOK"}
	d.must("POST", "/streams", ddl(`CREATE STREAM hp () WITH (TYPE="httppull", DATASOURCE="/x?token=streamTOK", EXTRA='{"url":"http://u:streamPW@example.com"}')`), 201)
	d.must("PUT", "/metadata/sources/simulator/confKeys/sim", `{"data":[{"a":1}],"interval":"20ms"}`, 200)
	d.must("POST", "/streams", `{"sql":"CREATE STREAM sim () WITH (TYPE=\"simulator\", CONF_KEY=\"sim\")"}`, 201)
	rule := func(server, pw string) string {
		return `{"id":"r1","sql":"SELECT * FROM sim","actions":[` +
			`{"mqtt":{"server":"` + server + `","topic":"t","username":"u","password":"` + pw + `"}},` +
			`{"rest":{"url":"http://user:urlPW@127.0.0.1:9/x?token=qTOKEN&a=1","headers":{"Authorization":"Bearer hdrTOKEN","X-Api-Key":"hdrTOKEN"}}}]}`
	}
	d.must("POST", "/rules", rule(a.url(), "s3cretPW"), 201)
	d.must("POST", "/connections", `{"id":"c1","typ":"sql","props":{"dataSource":"postgres://u:pgPW@db.example:5432/x","password":"connPW"}}`, 201)
	d.must("PUT", "/metadata/sinks/mqtt/confKeys/k1", `{"server":"tcp://u:keyPW@h:1883"}`, 200)
	testwait.Within(t, 60*time.Second, "the first broker to receive the password", func() bool { return len(a.seen()) > 0 })
	if got := a.seen()[0]; got != "s3cretPW" {
		t.Fatalf("broker a got password %q", got)
	}

	check := func(what, body string) {
		t.Helper()
		for _, s := range secrets {
			if strings.Contains(body, s) {
				t.Errorf("%s leaks %s: %s", what, s, body)
			}
		}
	}
	for _, p := range []string{"/streams/hp", "/rules/r1", "/rules/r1/status", "/v2/rules/r1/status", "/rules/status/all", "/rules/r1/explain", "/connections", "/connections/c1", "/metadata/sinks/yaml/mqtt", "/data/export"} {
		_, body := d.do("GET", p, "")
		check("GET "+p, body)
	}
	_, exp := d.do("POST", "/ruleset/export", "")
	check("ruleset export", exp)
	_, exp2 := d.do("POST", "/data/export", `["r1"]`)
	check("data export", exp2)
	code, body := d.do("PUT", "/connections/c1", `{"typ":"sql","props":{"dataSource":"postgres://u:pgPW@other:5432/x","password":"connPW","bad":`)
	check("422/400 echo", body)
	if code < 400 {
		t.Fatalf("malformed put: %d", code)
	}

	// Sending the masked rule back keeps the secrets; pointing it at a new
	// host with the masked password is refused and the new host sees
	// nothing.
	var masked map[string]any
	_, rj := d.do("GET", "/rules/r1", "")
	if err := json.Unmarshal([]byte(rj), &masked); err != nil {
		t.Fatal(err)
	}
	mq := masked["actions"].([]any)[0].(map[string]any)["mqtt"].(map[string]any)
	if mq["password"] != "******" {
		t.Fatalf("mqtt password not masked: %v", mq)
	}
	mq["server"] = b.url()
	moved, _ := json.Marshal(masked)
	code, body = d.do("PUT", "/rules/r1", string(moved))
	if code != 422 || !strings.Contains(body, `\"server\" changed`) || !strings.Contains(body, "password") {
		t.Fatalf("masked password to a new server: %d %s", code, body)
	}
	mq["server"] = a.url()
	same, _ := json.Marshal(masked)
	d.must("PUT", "/rules/r1", string(same), 200)
	testwait.Within(t, 60*time.Second, "the restarted rule to reconnect", func() bool { return len(a.seen()) > 1 })
	for _, pw := range a.seen() {
		if pw != "s3cretPW" {
			t.Fatalf("broker a got password %q after a masked PUT", pw)
		}
	}
	d.must("PUT", "/rules/r1", rule(b.url(), "newPW"), 200)
	testwait.Within(t, 60*time.Second, "the second broker to receive the new password", func() bool { return len(b.seen()) > 0 })
	for _, pw := range b.seen() {
		if pw != "newPW" {
			t.Fatalf("broker b got password %q", pw)
		}
	}

	// The import path: a masked export imported back keeps the stored
	// secrets only for unchanged endpoints.
	var doc map[string]map[string]string
	_, full := d.do("GET", "/data/export", "")
	if err := json.Unmarshal([]byte(full), &doc); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(doc["streams"]["hp"], "******") {
		t.Fatalf("stream not masked in the export: %v", doc["streams"])
	}
	imp, _ := json.Marshal(doc)
	body = d.must("POST", "/data/import?partial=1", `{"content":`+jsonString(string(imp))+`}`, 200)
	if !strings.Contains(body, `"ErrorMsg":""`) {
		t.Errorf("the masked export imported back: %s", body)
	}
	doc["sinkConfig"]["mqtt"] = strings.Replace(doc["sinkConfig"]["mqtt"], "@h:1883", "@evil:1883", 1)
	doc["streams"]["hp"] = strings.Replace(doc["streams"]["hp"], "example.com", "evil.example", 1)
	imp, _ = json.Marshal(doc)
	body = d.must("POST", "/data/import?partial=1", `{"content":`+jsonString(string(imp))+`}`, 400)
	if !strings.Contains(body, `server\\\" carries a masked secret`) || !strings.Contains(body, "differs from the stored one") {
		t.Errorf("import of masked secrets with new hosts: %s", body)
	}
	check("import answer", body)
	check("log", d.log())
	if !strings.Contains(d.log(), "rest call rejected") {
		t.Fatalf("the log has no debug lines to check")
	}
}
