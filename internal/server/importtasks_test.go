package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/rekuiper/rekuiper/internal/connector/connection"
	"github.com/rekuiper/rekuiper/internal/server"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// waitTask polls GET /async/task/{id} until the task leaves "running".
func waitTask(t *testing.T, s *testServer, id string) map[string]any {
	t.Helper()
	var task map[string]any
	var body string
	if !testwait.Poll(testwait.Limit, func() bool {
		var code int
		code, body = s.do("GET", "/async/task/"+id, "")
		if code != 200 {
			t.Fatalf("task %s: %d %s", id, code, body)
		}
		task = nil
		if err := json.Unmarshal([]byte(body), &task); err != nil {
			t.Fatal(err)
		}
		return task["status"] != "running"
	}) {
		t.Fatalf("task %s still running: %s", id, body)
	}
	return task
}

func startAsyncImport(t *testing.T, s *testServer, query, content string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"content": content})
	code, resp := s.do("POST", "/async/data/import"+query, string(body))
	if code != 200 {
		t.Fatalf("async import: %d %s", code, resp)
	}
	var out struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(resp), &out); err != nil || !strings.HasPrefix(out.ID, "dataImport-") {
		t.Fatalf("async import answer %s: %v", resp, err)
	}
	return out.ID
}

func TestAsyncImport(t *testing.T) {
	s := newServer(t, "")
	s.run([]step{
		{"status before any import", "GET", "/data/import/status", "", 200, `"nativePlugins":{}`},
		{"bad body at once", "POST", "/async/data/import", `{"content":`, 400, "decode"},
		{"unknown task", "GET", "/async/task/dataImport-1", "", 404, "dataImport-1"},
		{"cancel unknown task", "POST", "/async/task/dataImport-1/cancel", "", 404, "dataImport-1"},
	})

	ok := startAsyncImport(t, s, "?partial=1", `{"streams":{"a1":"CREATE STREAM a1 () WITH (TYPE=\"memory\", DATASOURCE=\"t\")"}}`)
	task := waitTask(t, s, ok)
	if task["status"] != "finish" || task["id"] != ok {
		t.Fatalf("import task: %v", task)
	}
	if code, body := s.do("GET", "/streams", ""); code != 200 || !strings.Contains(body, `"a1"`) {
		t.Fatalf("stream not imported: %d %s", code, body)
	}
	s.run([]step{
		{"cancel a finished task", "POST", "/async/task/" + ok + "/cancel", "", 409, "ended"},
	})

	bad := startAsyncImport(t, s, "?partial=1", `{"streams":{"a2":"CREATE STWREAM a2 ()"}}`)
	if bad == ok {
		t.Fatalf("two tasks share id %s", ok)
	}
	task = waitTask(t, s, bad)
	if task["status"] != "error" || !strings.Contains(task["message"].(string), "a2") {
		t.Fatalf("failed import task: %v", task)
	}
	code, body := s.do("GET", "/data/import/status", "")
	var status map[string]map[string]string
	if err := json.Unmarshal([]byte(body), &status); code != 200 || err != nil {
		t.Fatalf("import status: %d %s %v", code, body, err)
	}
	if !strings.Contains(status["streams"]["a2"], "STWREAM") {
		t.Fatalf("import status lacks the failed stream: %s", body)
	}
	for _, sec := range []string{"streams", "tables", "rules", "nativePlugins", "portablePlugins", "sourceConfig", "sinkConfig", "connectionConfig", "Service", "Schema", "uploads", "scripts"} {
		if _, ok := status[sec]; !ok {
			t.Errorf("import status lacks section %s: %s", sec, body)
		}
	}
}

func TestCompatRoutes(t *testing.T) {
	s := newServer(t, "")
	s.run([]step{
		{"stop", "POST", "/stop", "", 501, "SIGTERM"},
		{"configs", "PATCH", "/configs", `{"logLevel":"debug"}`, 501, "kuiper.yaml"},
		{"reset state", "PUT", "/rules/r1/reset_state", `{"type":1}`, 501, "checkpoint"},
		{"yaml export", "GET", "/v2/data/export", "", 501, "/data/export"},
		{"yaml import", "POST", "/v2/data/import", `{"content":""}`, 501, "/data/import"},
		{"metrics dump", "GET", "/metrics/dump", "", 501, "/metrics/history"},
		{"metrics dump check", "GET", "/metrics/dump/check", "", 200, "disabled"},
		{"cpu usage", "GET", "/rules/usage/cpu", "", 200, "cpu usage not enabled"},
		{"operators", "GET", "/metadata/operators", "", 200, "[]"},
		{"no connection registry", "GET", "/metadata/connections", "", 200, "[]"},
	})
}

func TestConnectionMetadata(t *testing.T) {
	conns := connection.NewRegistry(nil)
	key := func(props map[string]any) (string, error) { return "k", nil }
	for _, typ := range []string{"redis", "redispub", "nosuchconnector"} {
		if err := conns.SetKeyFunc(typ, key); err != nil {
			t.Fatal(err)
		}
	}
	s := newServerWith(t, "", func(o *server.Options) { o.Connections = conns })
	code, body := s.do("GET", "/metadata/connections", "")
	var list []struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal([]byte(body), &list); code != 200 || err != nil {
		t.Fatalf("list: %d %s %v", code, body, err)
	}
	// Named as the connectors are registered; a type without a connector
	// is left out.
	if len(list) != 2 || list[0].Name != "redis" || list[1].Name != "redisPub" {
		t.Fatalf("connection types = %s, want redis and redisPub", body)
	}
	s.run([]step{
		{"redis properties", "GET", "/metadata/connections/redis", "", 200, `"properties":{"default":[`},
		{"any case", "GET", "/metadata/connections/REDISPUB", "", 200, "redisPub connection"},
		{"without connector", "GET", "/metadata/connections/nosuchconnector", "", 404, "nosuchconnector"},
		{"unknown", "GET", "/metadata/connections/nope", "", 404, "nope"},
	})
}
