package server_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/procs"
	"github.com/rekuiper/rekuiper/internal/server/servertest"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// newCheckedServer serves the REST API over the daemon's real engine with
// an etc folder holding mqtt_source.yaml (a confKey "filekey" pointing at a
// port nobody listens on), the engine checking stream definitions as
// kuiperd does.
func newCheckedServer(t *testing.T) *testServer {
	t.Helper()
	port, err := procs.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	yaml := "default:\n  qos: 1\nfilekey:\n  server: tcp://127.0.0.1:" + strconv.Itoa(port) + "\n"
	d := servertest.Start(t, servertest.Options{Etc: map[string]string{"mqtt_source.yaml": yaml}})
	return &testServer{t: t, url: d.URL, data: d.Data, cat: d.Catalog, mgr: d.Rules}
}

func ddl(sql string) string {
	return fmt.Sprintf(`{"sql":%q}`, sql)
}

func TestCreateChecksStreams(t *testing.T) {
	s := newCheckedServer(t)
	s.run([]step{
		{"unknown type", "POST", "/streams", ddl(`CREATE STREAM s1 () WITH (DATASOURCE="t", TYPE="nosuch")`), 400, `stream s1: unknown TYPE \"nosuch\"; source types are `},
		{"unknown type names the known ones", "POST", "/streams", ddl(`CREATE STREAM s1 () WITH (DATASOURCE="t", TYPE="nosuch")`), 400, "memory"},
		{"unknown format", "POST", "/streams", ddl(`CREATE STREAM s1 () WITH (DATASOURCE="t", TYPE="memory", FORMAT="xml")`), 400, `stream s1: FORMAT \"xml\": unknown format \"xml\"`},
		{"missing confKey", "POST", "/streams", ddl(`CREATE STREAM s1 () WITH (DATASOURCE="t", CONF_KEY="nokey")`), 400, `stream s1: CONF_KEY \"nokey\" is not a confKey of source type mqtt (neither in etc/mqtt_source.yaml nor stored over REST)`},
		{"missing confKey of another type", "POST", "/tables", ddl(`CREATE TABLE t1 () WITH (DATASOURCE="t", TYPE="memory", CONF_KEY="nokey")`), 400, `etc/sources/memory.yaml`},
		{"unknown property", "POST", "/streams", ddl(`CREATE STREAM s1 () WITH (DATASOURCE="t", TYPE="memory", EXTRA="{\"nope\":1}")`), 400, "unknown properties: nope"},
		{"bufferLength on a source without a queue", "POST", "/streams", ddl(`CREATE STREAM s1 () WITH (DATASOURCE="t", CONF_KEY="filekey", EXTRA="{\"bufferLength\":1024}")`), 400, `property \"bufferLength\": 1024 is not supported`},
		{"interval on a pushed source", "POST", "/streams", ddl(`CREATE STREAM s1 () WITH (DATASOURCE="t", TYPE="memory", EXTRA="{\"interval\":\"1s\"}")`), 400, `property \"interval\": 1s is not supported`},
		{"file type is no lookup table", "POST", "/tables", ddl(`CREATE TABLE t1 () WITH (DATASOURCE="t", TYPE="file", KIND="lookup")`), 400, `table t1: TYPE \"file\" cannot serve a lookup table`},
		{"nothing was stored", "GET", "/streams", "", 200, "[]"},
		{"confKey of the etc file", "POST", "/streams", ddl(`CREATE STREAM s1 () WITH (DATASOURCE="t", CONF_KEY="filekey")`), 201, "Stream s1 is created."},
		{"confKey of the etc file, any case", "POST", "/streams", ddl(`CREATE STREAM s1b () WITH (DATASOURCE="t", CONF_KEY="FileKey")`), 201, ""},
		{"store a confKey", "PUT", "/metadata/sources/memory/confKeys/restkey", `{}`, 200, ""},
		{"confKey stored over REST", "POST", "/streams", ddl(`CREATE STREAM s2 () WITH (DATASOURCE="t", TYPE="memory", CONF_KEY="restkey")`), 201, ""},
		{"memory lookup table without KEY", "POST", "/tables", ddl(`CREATE TABLE t2 () WITH (DATASOURCE="t", TYPE="memory", KIND="lookup")`), 400, `table t2: invalid properties: property \"key\" is required`},
		{"lookup table", "POST", "/tables", ddl(`CREATE TABLE t2 () WITH (DATASOURCE="t", TYPE="memory", KIND="lookup", KEY="id")`), 201, ""},
		{"replace with unknown type", "PUT", "/streams/s2", ddl(`CREATE STREAM s2 () WITH (DATASOURCE="t", TYPE="nosuch")`), 400, `unknown TYPE \"nosuch\"`},
		{"replace with missing confKey", "PUT", "/streams/s2", ddl(`CREATE STREAM s2 () WITH (DATASOURCE="t", TYPE="memory", CONF_KEY="gone")`), 400, `CONF_KEY \"gone\"`},
		{"replace kept the old definition", "GET", "/streams/s2", "", 200, `"confKey":"restkey"`},
		{"confKey selecting an unknown connection", "PUT", "/metadata/sources/mqtt/confKeys/viaconn", `{"connectionSelector":"mqtt.nosuch"}`, 200, ""},
		{"unknown connection", "POST", "/streams", ddl(`CREATE STREAM s3 () WITH (DATASOURCE="t", CONF_KEY="viaconn")`), 400, `stream s3: connectionSelector \"mqtt.nosuch\"`},
		{"unknown connection in EXTRA", "POST", "/streams", ddl(`CREATE STREAM s3 () WITH (DATASOURCE="t", EXTRA="{\"connectionSelector\":\"other\"}")`), 400, `connectionSelector \"other\"`},
		{"connection of another type", "POST", "/connections", `{"id":"rc","typ":"redis","props":{"addr":"127.0.0.1:1"}}`, 201, ""},
		{"connection of the wrong type", "POST", "/streams", ddl(`CREATE STREAM s3 () WITH (DATASOURCE="t", EXTRA="{\"connectionSelector\":\"rc\"}")`), 400, `names a redis connection, not mqtt`},
	})
}

// A broker that is down is no mistake: the stream is created, the rule
// starts and keeps retrying.
func TestCreateDoesNotPingBrokers(t *testing.T) {
	s := newCheckedServer(t)
	s.run([]step{
		{"stream on a broker that is down", "POST", "/streams", ddl(`CREATE STREAM s1 () WITH (DATASOURCE="t", CONF_KEY="filekey")`), 201, ""},
		{"rule", "POST", "/rules", `{"id":"r1","sql":"SELECT * FROM s1","actions":[{"nop":{}}]}`, 201, "Rule r1 was created successfully."},
	})
	// Wait until the source reported a failed connection attempt: the rule
	// must still be running then.
	var body string
	if !testwait.Poll(testwait.Limit, func() bool {
		var code int
		code, body = s.do("GET", "/v2/rules/r1/status", "")
		if code != 200 || !strings.Contains(body, `"status":"running"`) {
			t.Fatalf("status: %d %s", code, body)
		}
		return strings.Contains(body, `"source_s1_0_connection_last_disconnected_message":"`) &&
			!strings.Contains(body, `"source_s1_0_connection_last_disconnected_message":""`)
	}) {
		t.Fatalf("the source never reported the broker down: %s", body)
	}
}

// Streams stored before the checks existed (or written behind the API)
// fail rules at validation and creation with the stream's problem.
func TestRulesCheckTheirStreams(t *testing.T) {
	s := newCheckedServer(t)
	ctx := context.Background()
	for name, sql := range map[string]string{
		"badtype": `CREATE STREAM badtype () WITH (DATASOURCE="t", TYPE="nosuch")`,
		"badkey":  `CREATE STREAM badkey () WITH (DATASOURCE="t", CONF_KEY="gone")`,
		"badfmt":  `CREATE STREAM badfmt () WITH (DATASOURCE="t", TYPE="memory", FORMAT="protobuf")`,
	} {
		if _, err := s.cat.PutStream(ctx, catalog.Stream{Name: name, Kind: catalog.KindStream, SQL: sql}, catalog.Create); err != nil {
			t.Fatal(err)
		}
	}
	s.run([]step{
		{"validate", "POST", "/rules/validate", `{"id":"r1","sql":"SELECT * FROM badtype","actions":[{"nop":{}}]}`, 422, `rule r1 reads stream badtype: unknown TYPE \"nosuch\"`},
		{"create", "POST", "/rules", `{"id":"r1","sql":"SELECT * FROM badtype","actions":[{"nop":{}}]}`, 422, `unknown TYPE \"nosuch\"`},
		{"not created", "GET", "/rules/r1", "", 404, ""},
		{"missing confKey", "POST", "/rules", `{"id":"r2","sql":"SELECT * FROM badkey","actions":[{"nop":{}}]}`, 422, `stream badkey: CONF_KEY \"gone\"`},
		{"unsupported format", "PUT", "/rules/r3", `{"sql":"SELECT * FROM badfmt","actions":[{"nop":{}}]}`, 422, `FORMAT \"protobuf\"`},
		{"good stream", "POST", "/streams", ddl(`CREATE STREAM good () WITH (DATASOURCE="t", TYPE="memory")`), 201, ""},
		{"action with an unknown connection", "POST", "/rules", `{"id":"r4","sql":"SELECT * FROM good","actions":[{"mqtt":{"connectionSelector":"nosuch","topic":"x"}}]}`, 422, `connectionSelector \"nosuch\": unknown connection \"nosuch\"`},
		{"action with an unknown resourceId", "POST", "/rules", `{"id":"r4","sql":"SELECT * FROM good","actions":[{"mqtt":{"resourceId":"nosuch"}}]}`, 422, `resourceId \"nosuch\" not found`},
		{"no rule was stored", "GET", "/rules", "", 200, "[]"},
	})
}

func TestImportsCheckStreams(t *testing.T) {
	s := newCheckedServer(t)
	ruleset := `{"streams":{"good":"CREATE STREAM good () WITH (DATASOURCE=\"t\", TYPE=\"memory\")","bad":"CREATE STREAM bad () WITH (DATASOURCE=\"t\", TYPE=\"nosuch\")"},` +
		`"rules":{"rgood":"{\"sql\":\"SELECT * FROM good\",\"actions\":[{\"nop\":{}}]}","rbad":"{\"sql\":\"SELECT * FROM bad\",\"actions\":[{\"nop\":{}}]}"}}`
	data := `{"sourceConfig":{"memory":"{\"imported\":{}}"},"streams":{"s1":"CREATE STREAM s1 () WITH (DATASOURCE=\"t\", TYPE=\"memory\", CONF_KEY=\"imported\")",` +
		`"s2":"CREATE STREAM s2 () WITH (DATASOURCE=\"t\", TYPE=\"memory\", CONF_KEY=\"absent\")"}}`
	s.run([]step{
		{"ruleset", "POST", "/ruleset/import", fmt.Sprintf(`{"content":%q}`, ruleset), 400, `stream bad: stream bad: unknown TYPE \"nosuch\"`},
		{"good stream imported", "GET", "/streams/good", "", 200, ""},
		{"bad stream not imported", "GET", "/streams/bad", "", 404, ""},
		{"good rule imported", "GET", "/rules/rgood", "", 200, ""},
		{"bad rule not imported", "GET", "/rules/rbad", "", 404, ""},
		{"data, confKeys first", "POST", "/data/import?partial=1", fmt.Sprintf(`{"content":%q}`, data), 400, `stream s2: CONF_KEY`},
		{"stream on an imported confKey", "GET", "/streams/s1", "", 200, ""},
		{"stream on a missing confKey not imported", "GET", "/streams/s2", "", 404, ""},
	})
}

func TestDeleteInUse(t *testing.T) {
	s := newCheckedServer(t)
	s.run([]step{
		{"source confKey", "PUT", "/metadata/sources/memory/confKeys/k1", `{}`, 200, ""},
		{"stream on it", "POST", "/streams", ddl(`CREATE STREAM s1 () WITH (DATASOURCE="t", TYPE="memory", CONF_KEY="k1")`), 201, ""},
		{"rule on the stream", "POST", "/rules", `{"id":"r1","sql":"SELECT * FROM s1","actions":[{"nop":{}}]}`, 201, ""},
		{"delete confKey in use", "DELETE", "/metadata/sources/memory/confKeys/k1", "", 409, "confKey memory/k1 is referenced by streams s1; rules r1"},
		{"delete a default confKey in use", "PUT", "/metadata/sources/memory/confKeys/default", `{}`, 200, ""},
		{"default underlies every stream of the type", "DELETE", "/metadata/sources/memory/confKeys/default", "", 409, "streams s1"},
		{"delete unknown confKey", "DELETE", "/metadata/sources/memory/confKeys/nope", "", 404, ""},
		{"sink confKey", "PUT", "/metadata/sinks/memory/confKeys/out", `{"topic":"o"}`, 200, ""},
		{"rule using it", "POST", "/rules", `{"id":"r2","sql":"SELECT * FROM s1","actions":[{"memory":{"resourceId":"out"}}]}`, 201, ""},
		{"delete sink confKey in use", "DELETE", "/metadata/sinks/memory/confKeys/out", "", 409, "confKey memory/out is referenced by rules r2"},
		{"connection", "POST", "/connections", `{"id":"mc","typ":"mqtt","props":{"server":"tcp://127.0.0.1:1"}}`, 201, ""},
		{"confKey selecting it", "PUT", "/metadata/sources/mqtt/confKeys/viaconn", `{"connectionSelector":"mqtt.mc"}`, 200, ""},
		{"delete connection used by a confKey", "DELETE", "/connections/mc", "", 409, "connection mc is referenced by confKeys sources/mqtt/viaconn"},
		{"stream through the confKey", "POST", "/streams", ddl(`CREATE STREAM s3 () WITH (DATASOURCE="t", CONF_KEY="viaconn")`), 201, ""},
		{"delete connection used by a stream", "DELETE", "/connections/mc", "", 409, "connection mc is referenced by streams s3; confKeys sources/mqtt/viaconn"},
		{"delete confKey used by the stream", "DELETE", "/metadata/sources/mqtt/confKeys/viaconn", "", 409, "streams s3"},
		{"drop r1", "DELETE", "/rules/r1", "", 200, ""},
		{"drop r2", "DELETE", "/rules/r2", "", 200, ""},
		{"drop s1", "DELETE", "/streams/s1", "", 200, ""},
		{"drop s3", "DELETE", "/streams/s3", "", 200, ""},
		{"delete confKey no longer used", "DELETE", "/metadata/sources/memory/confKeys/k1", "", 200, ""},
		{"delete sink confKey no longer used", "DELETE", "/metadata/sinks/memory/confKeys/out", "", 200, ""},
		{"delete viaconn", "DELETE", "/metadata/sources/mqtt/confKeys/viaconn", "", 200, ""},
		{"delete connection no longer used", "DELETE", "/connections/mc", "", 200, "success"},
	})
}

func TestRulesCheckFieldNames(t *testing.T) {
	s := newCheckedServer(t)
	rule := func(id, sql string) string {
		return fmt.Sprintf(`{"id":%q,"sql":%q,"actions":[{"nop":{}}]}`, id, sql)
	}
	s.run([]step{
		{"typed stream", "POST", "/streams", ddl(`CREATE STREAM s (temperature FLOAT, id BIGINT, st STRUCT(a BIGINT)) WITH (DATASOURCE="s", TYPE="memory")`), 201, ""},
		{"second typed stream", "POST", "/streams", ddl(`CREATE STREAM s2 (id BIGINT, hum BIGINT) WITH (DATASOURCE="s2", TYPE="memory")`), 201, ""},
		{"schemaless stream", "POST", "/streams", ddl(`CREATE STREAM free () WITH (DATASOURCE="free", TYPE="memory")`), 201, ""},
		{"unknown field", "POST", "/rules", rule("r1", "SELECT temprature FROM s"), 422, "invalid rule: plan rule r1: 1:8: unknown field temprature"},
		{"not created", "GET", "/rules/r1", "", 404, ""},
		{"validate", "POST", "/rules/validate", rule("r1", "SELECT temperature FROM s WHERE temprature > 1"), 422, "1:33: unknown field temprature"},
		{"put", "PUT", "/rules/r1", rule("r1", "SELECT temperature\nFROM s\nORDER BY tmp"), 422, "3:10: unknown field tmp"},
		{"unknown stream qualifier", "POST", "/rules", rule("r1", "SELECT x.temperature FROM s"), 422, "1:8: unknown field x: x.temperature names neither a stream of the rule (s) nor a field"},
		{"ambiguous column", "POST", "/rules", rule("r1", "SELECT id FROM s INNER JOIN s2 ON s.id = s2.id GROUP BY TUMBLINGWINDOW(ss, 10)"), 422, "1:8: ambiguous field id: it is a field of s and s2; qualify it as s.id"},
		{"nothing stored", "GET", "/rules", "", 200, "[]"},
		{"known fields", "POST", "/rules", rule("r1", "SELECT temperature AS t, st.a, st->a, meta(topic) FROM s WHERE t > 1"), 201, "Rule r1 was created successfully."},
		{"qualified join", "POST", "/rules", rule("r2", "SELECT s.id, hum FROM s INNER JOIN s2 ON s.id = s2.id GROUP BY TUMBLINGWINDOW(ss, 10)"), 201, ""},
		{"schemaless accepts any field", "POST", "/rules", rule("r3", "SELECT temprature, x.y FROM free"), 201, ""},
		{"ruleset import refuses the rule", "POST", "/ruleset/import", fmt.Sprintf(`{"content":%q}`, `{"rules":{"r4":"{\"sql\":\"SELECT nope FROM s\",\"actions\":[{\"nop\":{}}]}"}}`), 422, "rule r4: invalid rule: plan rule r4: 1:8: unknown field nope"},
	})
}
