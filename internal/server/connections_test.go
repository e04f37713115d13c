package server_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	_ "modernc.org/sqlite" // the "sqlite" driver, to create the sink's table

	"github.com/rekuiper/rekuiper/internal/broker"
	"github.com/rekuiper/rekuiper/internal/connector/redis/redistest"
	"github.com/rekuiper/rekuiper/internal/server/servertest"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// newEngineServer serves the REST API over the daemon's real engine, so
// that connectors report their connections.
func newEngineServer(t *testing.T) *testServer {
	t.Helper()
	d := servertest.Start(t, servertest.Options{})
	return &testServer{t: t, url: d.URL, cat: d.Catalog, mgr: d.Rules}
}

// connection is GET /connections/{id}, decoded.
type connectionJSON struct {
	Status           string   `json:"status"`
	Err              string   `json:"err"`
	RefCount         int      `json:"refCount"`
	Clients          int      `json:"clients"`
	LastConnected    int64    `json:"lastConnected"`
	LastDisconnected int64    `json:"lastDisconnected"`
	RuleRefs         []string `json:"ruleRefs"`
}

func (s *testServer) connection(id string) connectionJSON {
	s.t.Helper()
	code, body := s.do("GET", "/connections/"+id, "")
	if code != 200 {
		s.t.Fatalf("GET /connections/%s: %d %s", id, code, body)
	}
	var c connectionJSON
	if err := json.Unmarshal([]byte(body), &c); err != nil {
		s.t.Fatalf("decode %s: %v", body, err)
	}
	return c
}

// waitConnection polls the connection until ok accepts it; rules start and
// stop in the background.
func (s *testServer) waitConnection(id string, what string, ok func(connectionJSON) bool) connectionJSON {
	s.t.Helper()
	var c connectionJSON
	if !testwait.Poll(testwait.Limit, func() bool { c = s.connection(id); return ok(c) }) {
		s.t.Fatalf("connection %s never %s: %+v", id, what, c)
	}
	return c
}

func (s *testServer) must(method, path, body string, status int) {
	s.t.Helper()
	if code, got := s.do(method, path, body); code != status {
		s.t.Fatalf("%s %s: %d %s, want %d", method, path, code, got, status)
	}
}

func ruleJSON(id, action string) string {
	return fmt.Sprintf(`{"id":%q,"sql":"SELECT * FROM demo","actions":[%s]}`, id, action)
}

const memoryDDL = `{"sql":"CREATE STREAM demo () WITH (DATASOURCE=\"t\", TYPE=\"memory\", FORMAT=\"json\")"}`

func TestConnectionStatusRedis(t *testing.T) {
	rs := redistest.Start(t)
	s := newEngineServer(t)
	s.must("POST", "/connections", `{"id":"rc","typ":"redis","props":{"addr":"`+rs.Addr()+`"}}`, 201)
	if c := s.connection("rc"); c.Status != "disconnected" || c.RefCount != 0 || c.Clients != 0 || c.LastConnected != 0 {
		t.Fatalf("before any rule: %+v", c)
	}
	s.must("POST", "/streams", memoryDDL, 201)
	s.must("POST", "/rules", ruleJSON("r1", `{"redis":{"connectionSelector":"rc","key":"k1"}}`), 201)
	c := s.waitConnection("rc", "used by r1", func(c connectionJSON) bool { return c.RefCount == 1 })
	if c.Status != "connected" || c.Clients != 1 || c.Err != "" || c.LastConnected == 0 {
		t.Fatalf("rule r1 running: %+v", c)
	}

	// A second rule selecting the connection shares its client.
	s.must("POST", "/rules", ruleJSON("r2", `{"redis":{"connectionSelector":"redis.rc","key":"k2"}}`), 201)
	c = s.waitConnection("rc", "used by r1 and r2", func(c connectionJSON) bool { return c.RefCount == 2 })
	if c.Status != "connected" || c.Clients != 1 || strings.Join(c.RuleRefs, ",") != "r1,r2" {
		t.Fatalf("rules r1 and r2 running: %+v", c)
	}

	s.must("POST", "/rules/r1/stop", "", 200)
	c = s.waitConnection("rc", "released by r1", func(c connectionJSON) bool { return c.RefCount == 1 })
	if c.Status != "connected" || c.Clients != 1 {
		t.Fatalf("r1 stopped: %+v", c)
	}
	s.must("POST", "/rules/r2/stop", "", 200)
	c = s.waitConnection("rc", "released by r2", func(c connectionJSON) bool { return c.RefCount == 0 })
	if c.Status != "disconnected" || c.Clients != 0 || c.LastDisconnected < c.LastConnected || c.Err != "" {
		t.Fatalf("both rules stopped: %+v", c)
	}
	if len(c.RuleRefs) != 2 {
		t.Fatalf("stopped rules still reference the connection: %+v", c)
	}
}

func TestConnectionStatusSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE t (a BIGINT)`); err != nil {
		t.Fatal(err)
	}
	s := newEngineServer(t)
	s.must("POST", "/connections", `{"id":"db","typ":"sql","props":{"url":"sqlite://`+path+`"}}`, 201)
	s.must("POST", "/streams", memoryDDL, 201)
	s.must("POST", "/rules", ruleJSON("r1", `{"sql":{"connectionSelector":"sql/db","table":"t"}}`), 201)
	c := s.waitConnection("db", "used by r1", func(c connectionJSON) bool { return c.RefCount == 1 })
	if c.Status != "connected" || c.Clients != 1 || c.Err != "" {
		t.Fatalf("rule running: %+v", c)
	}
	s.must("POST", "/rules/r1/stop", "", 200)
	c = s.waitConnection("db", "released", func(c connectionJSON) bool { return c.RefCount == 0 })
	if c.Status != "disconnected" || c.Clients != 0 {
		t.Fatalf("rule stopped: %+v", c)
	}
}

func TestConnectionStatusUnreachable(t *testing.T) {
	port := redistest.FreePort(t)
	s := newEngineServer(t)
	s.must("POST", "/connections", `{"id":"down","typ":"redis","props":{"addr":"127.0.0.1:`+strconv.Itoa(port)+`","timeout":"300ms"}}`, 201)
	s.must("POST", "/streams", memoryDDL, 201)
	s.must("POST", "/rules", ruleJSON("r1", `{"redis":{"connectionSelector":"down","key":"k"}}`), 201)
	c := s.waitConnection("down", "failed", func(c connectionJSON) bool { return c.Err != "" })
	if c.Status != "disconnected" || !strings.Contains(c.Err, "127.0.0.1:"+strconv.Itoa(port)) || c.LastConnected != 0 {
		t.Fatalf("unreachable server: %+v", c)
	}

	t.Run("invalid properties", func(t *testing.T) {
		s.must("POST", "/connections", `{"id":"bad","typ":"sql","props":{"url":"mysql://h/db"}}`, 201)
		if c := s.connection("bad"); c.Status != "disconnected" || !strings.Contains(c.Err, "unsupported database url") {
			t.Fatalf("invalid connection: %+v", c)
		}
	})
	t.Run("untracked type", func(t *testing.T) {
		s.must("POST", "/connections", `{"id":"ws","typ":"websocket","props":{"addr":"127.0.0.1:1"}}`, 201)
		if c := s.connection("ws"); c.Status != "disconnected" || c.Err != "" || c.RefCount != 0 {
			t.Fatalf("untracked connection: %+v", c)
		}
	})
}

func TestConnectionStatusMQTT(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b, err := broker.Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	s := newEngineServer(t)
	s.must("POST", "/connections", `{"id":"mq","typ":"mqtt","props":{"server":"`+b.URL()+`"}}`, 201)
	s.must("POST", "/streams", memoryDDL, 201)
	s.must("POST", "/rules", ruleJSON("r1", `{"mqtt":{"connectionSelector":"mqtt.mq","topic":"out"}}`), 201)
	c := s.waitConnection("mq", "connected for r1", func(c connectionJSON) bool { return c.RefCount == 1 && c.Status == "connected" })
	if c.Clients != 1 || c.LastConnected == 0 {
		t.Fatalf("rule running: %+v", c)
	}
	s.must("POST", "/rules/r1/stop", "", 200)
	c = s.waitConnection("mq", "released", func(c connectionJSON) bool { return c.RefCount == 0 })
	if c.Status != "disconnected" || c.Clients != 0 || c.LastDisconnected == 0 {
		t.Fatalf("rule stopped: %+v", c)
	}

	// A broker that is down: the sink keeps its connection retrying, so it
	// still counts as a user.
	port := redistest.FreePort(t)
	s.must("POST", "/connections", `{"id":"down","typ":"mqtt","props":{"server":"tcp://127.0.0.1:`+strconv.Itoa(port)+`"}}`, 201)
	s.must("POST", "/rules", ruleJSON("r2", `{"mqtt":{"connectionSelector":"down","topic":"out"}}`), 201)
	c = s.waitConnection("down", "failing for r2", func(c connectionJSON) bool { return c.RefCount == 1 && c.Err != "" })
	if c.Status != "disconnected" || c.Clients != 1 || !strings.Contains(c.Err, strconv.Itoa(port)) {
		t.Fatalf("broker down: %+v", c)
	}
}

// TestSourceConnectionStatus follows eKuiper's connection test: a source
// on a named connection whose broker is down reports disconnected (-1);
// once connected, 1; when the broker goes away, connecting (0) while it
// retries. The rule metrics are named after the connection
// (source_<connection>/<datasource>_0_...) as well as after the stream.
func TestSourceConnectionStatus(t *testing.T) {
	port := redistest.FreePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	s := newEngineServer(t)
	s.must("POST", "/connections", `{"id":"conn1","typ":"mqtt","props":{"server":"tcp://`+addr+`"}}`, 201)
	s.must("PUT", "/metadata/sources/mqtt/confKeys/ttt", `{"connectionSelector":"conn1"}`, 200)
	s.must("POST", "/streams", `{"sql":"CREATE STREAM tttStream () WITH (TYPE=\"mqtt\", DATASOURCE=\"ttt\", FORMAT=\"json\", CONF_KEY=\"ttt\", SHARED=\"true\")"}`, 201)
	s.must("POST", "/rules", `{"id":"r1","sql":"SELECT * FROM tttStream","actions":[{"nop":{}}]}`, 201)
	metric := func(st map[string]any) any { return st["source_conn1/ttt_0_connection_status"] }
	s.waitStatus("r1", "never connected", func(st map[string]any) bool {
		msg, _ := st["source_conn1/ttt_0_connection_last_disconnected_message"].(string)
		return msg != "" && metric(st) == -1.0 && st["source_tttStream_0_connection_status"] == -1.0
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b, err := broker.Start(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	s.waitStatus("r1", "connected", func(st map[string]any) bool { return metric(st) == 1.0 })
	if c := s.connection("conn1"); c.Status != "connected" {
		t.Fatalf("connection after the broker started: %+v", c)
	}
	b.Close()
	s.waitStatus("r1", "connection lost", func(st map[string]any) bool { return metric(st) == 0.0 })
	s.waitConnection("conn1", "connecting", func(c connectionJSON) bool { return c.Status == "connecting" })
}

// waitStatus polls GET /v2/rules/{id}/status until ok accepts it.
func (s *testServer) waitStatus(id, what string, ok func(map[string]any) bool) map[string]any {
	s.t.Helper()
	var st map[string]any
	if !testwait.Poll(testwait.Limit, func() bool {
		code, body := s.do("GET", "/v2/rules/"+id+"/status", "")
		if code != 200 {
			s.t.Fatalf("status of %s: %d %s", id, code, body)
		}
		st = map[string]any{}
		if err := json.Unmarshal([]byte(body), &st); err != nil {
			s.t.Fatal(err)
		}
		return ok(st)
	}) {
		s.t.Fatalf("rule %s never %s: %v", id, what, st)
	}
	return st
}
