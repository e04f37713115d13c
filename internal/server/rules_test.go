package server_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/rekuiper/rekuiper/internal/rule"
)

const r1 = `{"id":"r1","name":"first","sql":"SELECT a FROM demo","actions":[{"log":{}}],"tags":["t1"],"version":"2"}`

func TestRules(t *testing.T) {
	s := newServer(t, "")
	s.run([]step{
		{"stream", "POST", "/streams", demoDDL, 201, ""},
		{"create", "POST", "/rules", r1, 201, "Rule r1 was created successfully."},
		{"create again", "POST", "/rules", r1, 409, "already exists"},
		{"empty body", "POST", "/rules", "", 400, "empty body"},
		{"not json", "POST", "/rules", "{", 400, "malformed rule"},
		{"not an object", "POST", "/rules", "[1]", 400, "malformed rule"},
		{"unknown field", "POST", "/rules", `{"id":"x","sql":"SELECT a FROM demo","actions":[{"log":{}}],"sqll":"y"}`, 400, `unknown field \"sqll\"`},
		{"unknown option", "POST", "/rules", `{"id":"x","sql":"SELECT a FROM demo","actions":[{"log":{}}],"options":{"qoss":1}}`, 400, "qoss"},
		{"wrong type", "POST", "/rules", `{"id":"x","sql":5,"actions":[{"log":{}}]}`, 400, `field \"sql\"`},
		{"graph", "POST", "/rules", `{"id":"g","graph":{"nodes":{}}}`, 422, "graph rules are not supported yet"},
		{"no actions", "POST", "/rules", `{"id":"x","sql":"SELECT a FROM demo"}`, 422, "actions are required"},
		{"no sql", "POST", "/rules", `{"id":"x","actions":[{"log":{}}]}`, 422, "sql is required"},
		{"no id", "POST", "/rules", `{"sql":"SELECT a FROM demo","actions":[{"log":{}}]}`, 400, "id is required"},
		{"bad id", "POST", "/rules", `{"id":"a b","sql":"SELECT a FROM demo","actions":[{"log":{}}]}`, 400, "contains invalid characters"},
		{"bad option", "POST", "/rules", `{"id":"x","sql":"SELECT a FROM demo","actions":[{"log":{}}],"options":{"qos":7}}`, 422, "qos"},
		{"cron without duration", "POST", "/rules", `{"id":"x","sql":"SELECT a FROM demo","actions":[{"log":{}}],"options":{"cron":"* * * * *"}}`, 422, "needs option duration"},
		{"bad cron", "POST", "/rules", `{"id":"x","sql":"SELECT a FROM demo","actions":[{"log":{}}],"options":{"cron":"nope","duration":"1m"}}`, 422, "cron"},
		{"unknown stream", "POST", "/rules", `{"id":"x","sql":"SELECT a FROM nope","actions":[{"log":{}}]}`, 422, "nope is not found"},
		{"bad sql", "POST", "/rules", `{"id":"x","sql":"SELECT FROM","actions":[{"log":{}}]}`, 422, "parse sql"},
		{"list", "GET", "/rules", "", 200, `[{"id":"r1","name":"first","status":"running","tags":["t1"],"trace":false,"version":"2"}]`},
		{"get", "GET", "/rules/r1", "", 200, `"triggered":true`},
		{"get unknown", "GET", "/rules/nope", "", 404, "not found"},
		{"status", "GET", "/rules/r1/status", "", 200, "{\n  \"status\": \"running\",\n  \"message\": \"\",\n  \"lastStartTimestamp\": "},
		{"status metrics", "GET", "/rules/r1/status", "", 200, `"source_demo_0_records_in_total": 3`},
		{"status unknown", "GET", "/rules/nope/status", "", 404, ""},
		{"v2 status", "GET", "/v2/rules/r1/status", "", 200, `"op_2_project_0_records_in_total":3`},
		{"status all", "GET", "/rules/status/all", "", 200, `{"r1":{"exceptions_total":1,"last_exception":"boom","status":"running"}}`},
		{"topo", "GET", "/rules/r1/topo", "", 200, `"sources":["source_demo"]`},
		{"explain", "GET", "/rules/r1/explain", "", 200, `"type":"ProjectPlan"`},
		{"explain unknown", "GET", "/rules/nope/explain", "", 404, ""},
		{"stop", "POST", "/rules/r1/stop", "", 200, "Rule r1 was stopped."},
		{"stopped status", "GET", "/rules/r1/status", "", 200, `"status": "stopped"`},
		{"get stopped", "GET", "/rules/r1", "", 200, `"triggered":false`},
		{"topo stopped", "GET", "/rules/r1/topo", "", 409, "not running"},
		{"start", "POST", "/rules/r1/start", "", 200, "Rule r1 was started"},
		{"restart", "POST", "/rules/r1/restart", "", 200, "Rule r1 was restarted"},
		{"start unknown", "POST", "/rules/nope/start", "", 404, ""},
		{"stop unknown", "POST", "/rules/nope/stop", "", 404, ""},
		{"restart unknown", "POST", "/rules/nope/restart", "", 404, ""},
		{"validate", "POST", "/rules/validate", `{"id":"v","sql":"SELECT a FROM demo","actions":[{"log":{}}]}`, 200, `{"sources":["demo"],"valid":true}`},
		{"validate invalid", "POST", "/rules/validate", `{"id":"v","sql":"SELECT a FROM nope","actions":[{"log":{}}]}`, 422, ""},
		{"validate malformed", "POST", "/rules/validate", `{"id":`, 400, ""},
		{"validate did not create", "GET", "/rules/v", "", 404, ""},
		{"update older version", "PUT", "/rules/r1", `{"id":"r1","version":"1","sql":"SELECT * FROM demo","actions":[{"log":{}}]}`, 409, "version"},
		{"update id mismatch", "PUT", "/rules/r1", `{"id":"r9","sql":"SELECT * FROM demo","actions":[{"log":{}}]}`, 400, "does not match"},
		{"update invalid", "PUT", "/rules/r1", `{"sql":"SELECT * FROM demo"}`, 422, ""},
		{"update", "PUT", "/rules/r1", `{"version":"3","sql":"SELECT * FROM demo","actions":[{"log":{}}],"tags":["t1"]}`, 200, "Rule r1 was updated successfully."},
		{"updated and running", "GET", "/rules/r1/status", "", 200, `"status": "running"`},
		{"updated definition", "GET", "/rules/r1", "", 200, `"sql":"SELECT * FROM demo"`},
		{"upsert creates", "PUT", "/rules/r2", `{"sql":"SELECT * FROM demo","actions":[{"log":{}}],"triggered":false}`, 200, "Rule r2 was updated successfully."},
		{"r2 stopped", "GET", "/rules/r2/status", "", 200, `"status": "stopped"`},
		{"update keeps stopped without triggered", "PUT", "/rules/r2", `{"sql":"SELECT a FROM demo","actions":[{"log":{}}]}`, 200, ""},
		{"r2 still stopped", "GET", "/rules/r2/status", "", 200, `"status": "stopped"`},
		{"update triggered true starts", "PUT", "/rules/r2", `{"sql":"SELECT * FROM demo","actions":[{"log":{}}],"triggered":true}`, 200, ""},
		{"r2 running after update", "GET", "/rules/r2/status", "", 200, `"status": "running"`},
		{"r2 definition says triggered", "GET", "/rules/r2", "", 200, `"triggered":true`},
		{"update triggered false stops", "PUT", "/rules/r2", `{"sql":"SELECT * FROM demo","actions":[{"log":{}}],"triggered":false}`, 200, ""},
		{"r2 stopped after update", "GET", "/rules/r2/status", "", 200, `"status": "stopped"`},
		{"r2 definition says not triggered", "GET", "/rules/r2", "", 200, `"triggered":false`},
		{"tags replace", "PUT", "/rules/r2/tags", `{"tags":["t1","t2"]}`, 200, ""},
		{"tags add", "PATCH", "/rules/r2/tags", `{"tags":["t3"]}`, 200, ""},
		{"tags remove", "DELETE", "/rules/r2/tags", `{"tags":["t2"]}`, 200, ""},
		{"tags bad body", "PUT", "/rules/r2/tags", `{"tag":["x"]}`, 400, ""},
		{"tags unknown rule", "PUT", "/rules/nope/tags", `{"tags":["x"]}`, 404, ""},
		{"tags in definition", "GET", "/rules/r2", "", 200, `"tags":["t1","t3"]`},
		{"match t1", "GET", "/rules/tags/match", `{"tags":["t1"]}`, 200, `{"rules":["r1","r2"]}`},
		{"match t1 t3", "GET", "/rules/tags/match", `{"tags":["t1","t3"]}`, 200, `{"rules":["r2"]}`},
		{"bulkstart", "POST", "/rules/bulkstart", `{"tags":["t3"]}`, 200, `[{"ruleId":"r2","success":true}]`},
		{"r2 started", "GET", "/rules/r2/status", "", 200, `"status": "running"`},
		{"bulkstop", "POST", "/rules/bulkstop", `{"tags":["t1"]}`, 200, `{"ruleId":"r1","success":true},{"ruleId":"r2","success":true}`},
		{"bulk no match", "POST", "/rules/bulkstop", `{"tags":["zz"]}`, 404, "no rules match"},
		{"bulk no tags", "POST", "/rules/bulkstop", `{"tags":[]}`, 400, ""},
		{"delete", "DELETE", "/rules/r1", "", 200, "Rule r1 is dropped."},
		{"delete again", "DELETE", "/rules/r1", "", 404, ""},
		{"gone", "GET", "/rules/r1", "", 404, ""},
	})
}

func TestStartFailureStatus(t *testing.T) {
	s := newServer(t, "")
	s.runner.SetFailStart(func(*rule.Def) error { return errors.New("no engine wired") })
	s.run([]step{
		{"stream", "POST", "/streams", demoDDL, 201, ""},
		{"create still succeeds", "POST", "/rules", r1, 201, ""},
		{"stopped by error", "GET", "/rules/r1/status", "", 200, "\"status\": \"stopped by error\",\n  \"message\": \"no engine wired\""},
		{"list", "GET", "/rules", "", 200, `"status":"stopped by error"`},
		{"wanted state kept", "GET", "/rules/r1", "", 200, `"triggered":true`},
	})
}

func TestRulesetAndData(t *testing.T) {
	src := newServer(t, "")
	src.run([]step{
		{"stream", "POST", "/streams", demoDDL, 201, ""},
		{"table", "POST", "/tables", `{"sql":"CREATE TABLE lk () WITH (TYPE=\"memory\", KIND=\"lookup\")"}`, 201, ""},
		{"rule", "POST", "/rules", r1, 201, ""},
		{"stopped rule", "POST", "/rules", `{"id":"r2","sql":"SELECT * FROM lk","actions":[{"log":{}}],"triggered":false}`, 201, ""},
		{"confKey", "PUT", "/metadata/sinks/mqtt/confKeys/k1", `{"server":"tcp://h:1883"}`, 200, ""},
	})
	_, rs := src.do("POST", "/ruleset/export", "")
	var doc map[string]map[string]string
	if err := json.Unmarshal([]byte(rs), &doc); err != nil || len(doc["streams"]) != 1 || len(doc["tables"]) != 1 || len(doc["rules"]) != 2 {
		t.Fatalf("export: %v %s", err, rs)
	}
	_, data := src.do("GET", "/data/export", "")
	_, partial := src.do("POST", "/data/export", `["r2"]`)
	if !strings.Contains(partial, `"lk"`) || strings.Contains(partial, `"demo"`) || strings.Contains(partial, `"r1"`) {
		t.Fatalf("partial export: %s", partial)
	}

	dst := newServer(t, "")
	content, _ := json.Marshal(map[string]string{"content": rs})
	dst.run([]step{
		{"import ruleset", "POST", "/ruleset/import", string(content), 200, "imported 1 streams, 1 tables and 2 rules"},
		{"import nothing", "POST", "/ruleset/import", `{}`, 400, "content or file"},
		{"import both", "POST", "/ruleset/import", `{"content":"{}","file":"file:///x"}`, 400, ""},
		{"import garbage", "POST", "/ruleset/import", `{"content":"nope"}`, 400, "decode ruleset"},
		{"rule running", "GET", "/rules/r1/status", "", 200, `"status": "running"`},
		{"stopped rule stays stopped", "GET", "/rules/r2/status", "", 200, `"status": "stopped"`},
		{"extra stream", "POST", "/streams", `{"sql":"CREATE STREAM extra () WITH (TYPE=\"memory\")"}`, 201, ""},
	})
	dataBody, _ := json.Marshal(map[string]string{"content": data})
	dst.run([]step{
		{"partial import keeps extra", "POST", "/data/import?partial=1", string(dataBody), 200, `"ErrorMsg":""`},
		{"extra kept", "GET", "/streams", "", 200, `["demo","extra"]`},
		{"full import resets", "POST", "/data/import", string(dataBody), 200, `"ErrorMsg":""`},
		{"extra gone", "GET", "/streams", "", 200, `["demo"]`},
		{"confKey imported", "GET", "/metadata/sinks/yaml/mqtt", "", 200, `"k1":{"server":"tcp://h:1883"}`},
		{"rules back", "GET", "/rules", "", 200, `"id":"r2"`},
	})
	file := dst.data + "/rs.json"
	if err := writeFile(file, rs); err != nil {
		t.Fatal(err)
	}
	dst.run([]step{
		{"import from file", "POST", "/ruleset/import", `{"file":"file://` + file + `"}`, 200, "imported 1 streams, 1 tables and 2 rules"},
		{"import missing file", "POST", "/ruleset/import", `{"file":"file://` + dst.data + `/does/not/exist"}`, 400, ""},
	})
}

// TestDataImportFailures: a /data/import whose items fail answers 400 with
// the per-section errors (eKuiper's shape), and a full import that would
// fail changes nothing. triggered in an import is honoured.
func TestDataImportFailures(t *testing.T) {
	s := newServer(t, "")
	s.run([]step{
		{"stream", "POST", "/streams", demoDDL, 201, ""},
		{"rule", "POST", "/rules", r1, 201, ""},
	})
	bad, _ := json.Marshal(map[string]string{"content": `{"streams":{"s2":"CREATE STREAM s2 () WITH (TYPE=\"memory\")","s3":"CREATE STREAM"},` +
		`"rules":{"r9":"{\"id\":\"r9\",\"sql\":\"SELECT * FROM nowhere\",\"actions\":[{\"log\":{}}]}"},"sinkConfig":{"mqtt":"[1"}}`})
	code, body := s.do("POST", "/data/import", string(bad))
	if code != 400 {
		t.Fatalf("failed import: %d %s", code, body)
	}
	var shape struct {
		Message string `json:"message"`
	}
	if err := json.Unmarshal([]byte(body), &shape); err != nil {
		t.Fatal(err)
	}
	var resp map[string]map[string]string
	if err := json.Unmarshal([]byte(shape.Message), &resp); err != nil {
		t.Fatalf("message is not the per-section errors: %q", shape.Message)
	}
	for sec, name := range map[string]string{"streams": "s3", "rules": "r9", "sinkConfig": "mqtt"} {
		if resp[sec][name] == "" {
			t.Errorf("no error for %s %s in %v", sec, name, resp)
		}
	}
	if _, ok := resp["streams"]["s2"]; ok {
		t.Errorf("valid stream s2 reported failed: %v", resp)
	}
	s.run([]step{
		{"nothing deleted", "GET", "/streams", "", 200, `["demo"]`},
		{"rule kept", "GET", "/rules/r1/status", "", 200, `"status": "running"`},
		{"partial failure is 400 too", "POST", "/data/import?partial=1", string(bad), 400, "r9"},
		{"still nothing changed", "GET", "/streams", "", 200, `["demo"]`},
	})
	stop, _ := json.Marshal(map[string]string{"content": `{"rules":{"r1":"{\"id\":\"r1\",\"sql\":\"SELECT * FROM demo\",\"actions\":[{\"log\":{}}],\"triggered\":false}"}}`})
	s.run([]step{
		{"import triggered false", "POST", "/data/import?partial=1", string(stop), 200, `"ErrorMsg":""`},
		{"rule stopped by import", "GET", "/rules/r1/status", "", 200, `"status": "stopped"`},
		{"ruleset triggered true", "POST", "/ruleset/import", `{"content":"{\"rules\":{\"r1\":\"{\\\"id\\\":\\\"r1\\\",\\\"sql\\\":\\\"SELECT * FROM demo\\\",\\\"actions\\\":[{\\\"log\\\":{}}],\\\"triggered\\\":true}\"}}"}`, 200, "1 rules"},
		{"rule started by import", "GET", "/rules/r1/status", "", 200, `"status": "running"`},
	})
	// Without "triggered" an import starts the rule (eKuiper's default
	// true), whether its definition changed or not.
	same, _ := json.Marshal(map[string]string{"content": `{"rules":{"r1":"{\"id\":\"r1\",\"sql\":\"SELECT * FROM demo\",\"actions\":[{\"log\":{}}]}"}}`})
	changed, _ := json.Marshal(map[string]string{"content": `{"rules":{"r1":"{\"id\":\"r1\",\"sql\":\"SELECT * FROM demo WHERE true\",\"actions\":[{\"log\":{}}]}"}}`})
	s.run([]step{
		{"stop", "POST", "/rules/r1/stop", "", 200, ""},
		{"stopped", "GET", "/rules/r1/status", "", 200, `"status": "stopped"`},
		{"import unchanged", "POST", "/data/import?partial=1", string(same), 200, `"ErrorMsg":""`},
		{"started by unchanged import", "GET", "/rules/r1/status", "", 200, `"status": "running"`},
		{"stop again", "POST", "/rules/r1/stop", "", 200, ""},
		{"import changed", "POST", "/ruleset/import", string(changed), 200, "1 rules"},
		{"started by changed import", "GET", "/rules/r1/status", "", 200, `"status": "running"`},
		{"definition replaced", "GET", "/rules/r1", "", 200, "WHERE true"},
	})
}

// TestSchemalessStreamSchema: the schema of a schemaless stream lists the
// fields its running rules read (eKuiper's inferred schema); a rule that
// reads every field makes it open.
func TestSchemalessStreamSchema(t *testing.T) {
	s := newServer(t, "")
	s.run([]step{
		{"stream", "POST", "/streams", `{"sql":"CREATE STREAM free () WITH (TYPE=\"memory\", SHARED=\"true\")"}`, 201, ""},
		{"no rules", "GET", "/streams/free/schema", "", 200, "{}"},
		{"rule a", "POST", "/rules", `{"id":"ra","sql":"SELECT temp AS t, meta(topic) FROM free WHERE hum > 3","actions":[{"log":{}}]}`, 201, ""},
		{"rule b", "POST", "/rules", `{"id":"rb","sql":"SELECT f.temp, count(*) FROM free AS f GROUP BY f.site, TUMBLINGWINDOW(ss, 1) HAVING count(*) > 1","actions":[{"log":{}}]}`, 201, ""},
		{"fields of the rules", "GET", "/streams/free/schema", "", 200, `{"hum":null,"site":null,"temp":null}`},
		{"stopped rule", "POST", "/rules/rb/stop", "", 200, ""},
		{"stopped rule's fields gone", "GET", "/streams/free/schema", "", 200, `{"hum":null,"temp":null}`},
		{"wildcard rule", "POST", "/rules", `{"id":"rc","sql":"SELECT * FROM free","actions":[{"log":{}}]}`, 201, ""},
		{"open", "GET", "/streams/free/schema", "", 200, `{}`},
	})
}

// TestRuleSchema: GET /rules/{id}/schema lists the fields a running rule
// sends to its sinks, typed where they are columns of a typed stream.
func TestRuleSchema(t *testing.T) {
	s := newServer(t, "")
	s.run([]step{
		{"stream", "POST", "/streams", demoDDL, 201, ""},
		{"rule", "POST", "/rules", `{"id":"r1","sql":"SELECT a, d AS arr, b->c, a + 1 AS n, count(*), * FROM demo GROUP BY a, TUMBLINGWINDOW(ss, 1)","actions":[{"log":{}}]}`, 201, ""},
		{"schema", "GET", "/rules/r1/schema", "", 200, `{"a":{"hasIndex":true,"index":0,"type":"bigint"},"arr":{"hasIndex":true,"index":1,"items":{"index":0,"type":"float"},"type":"array"},"count":{"hasIndex":true,"index":4},"kuiper_field_2":{"hasIndex":true,"index":2},"n":{"hasIndex":true,"index":3}}`},
		{"unknown", "GET", "/rules/nope/schema", "", 404, ""},
		{"stopped", "POST", "/rules/r1/stop", "", 200, ""},
		{"not running", "GET", "/rules/r1/schema", "", 409, ""},
	})
}
