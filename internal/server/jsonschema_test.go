package server_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/rekuiper/rekuiper/internal/broker"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

const readingSchema = `{"type":"object","required":["id"],"properties":{"id":{"type":"string"},"t":{"type":"number"}}}`

func TestJSONSchemasREST(t *testing.T) {
	s, _ := newSchemaServer(t)
	s.run([]step{
		{"empty list", "GET", "/schemas/json", "", 200, `[]`},
		{"create", "POST", "/schemas/json", schemaJSON("reading", readingSchema), 201, "json schema reading is created"},
		{"list", "GET", "/schemas/json", "", 200, `["reading"]`},
		{"protobuf list apart", "GET", "/schemas/protobuf", "", 200, `["filed"]`},
		{"describe", "GET", "/schemas/json/reading", "", 200, `"type":"json"`},
		{"not json", "POST", "/schemas/json", schemaJSON("bad", `{"type":`), 400, "json schema bad is not JSON"},
		{"not a schema", "POST", "/schemas/json", schemaJSON("bad", `{"type":"nosuch"}`), 400, "json schema bad"},
		{"file ref refused", "POST", "/schemas/json", schemaJSON("bad", `{"$ref":"file:///etc/hosts"}`), 400, "only other registered json schemas"},
		{"ref to a registered schema", "POST", "/schemas/json", schemaJSON("batch", `{"type":"array","items":{"$ref":"reading.json"}}`), 201, ""},
		{"stream with unknown schema", "POST", "/streams", ddl(`CREATE STREAM js () WITH (DATASOURCE="t", TYPE="memory", FORMAT="json", SCHEMAID="nosuch")`), 400, "schema json/nosuch: not found"},
		{"stream", "POST", "/streams", ddl(`CREATE STREAM js () WITH (DATASOURCE="t", TYPE="memory", FORMAT="json", SCHEMAID="reading")`), 201, ""},
		{"delete used by a stream", "DELETE", "/schemas/json/reading", "", 409, "stream js"},
		{"a protobuf schema of that name is another schema", "POST", "/schemas/protobuf", schemaJSON("reading", `syntax = "proto3"; message R { string id = 1; }`), 201, ""},
		{"delete the protobuf one", "DELETE", "/schemas/protobuf/reading", "", 200, ""},
		{"drop the stream", "DELETE", "/streams/js", "", 200, ""},
		{"delete", "DELETE", "/schemas/json/reading", "", 200, "json schema reading is deleted"},
	})
}

// TestJSONSchemaEndToEnd feeds JSON messages through an MQTT broker into a
// stream with a JSON schema: records that do not validate are counted as
// decode errors and reach no rule; the others flow.
func TestJSONSchemaEndToEnd(t *testing.T) {
	b := startBroker(t)
	s, data := newSchemaServer(t)
	s.must("POST", "/schemas/json", schemaJSON("reading", readingSchema), 201)
	s.must("PUT", "/metadata/sources/mqtt/confKeys/js", `{"server":"`+b.URL()+`"}`, 200)
	s.must("POST", "/streams", ddl(`CREATE STREAM js () WITH (DATASOURCE="js/in", TYPE="mqtt", CONF_KEY="js", FORMAT="json", SCHEMAID="reading")`), 201)
	s.must("POST", "/rules", `{"id":"r1","sql":"SELECT id, t FROM js","actions":[{"file":{"path":"out/r1.txt"}}]}`, 201)

	cl := paho.NewClient(paho.NewClientOptions().AddBroker(b.URL()).SetClientID("jstest"))
	if tok := cl.Connect(); tok.Wait() && tok.Error() != nil {
		t.Fatal(tok.Error())
	}
	defer cl.Disconnect(0)
	publish := func(payload string) {
		if tok := cl.Publish("js/in", 1, false, payload); tok.Wait() && tok.Error() != nil {
			t.Fatal(tok.Error())
		}
	}
	out := filepath.Join(data, "out", "r1.txt")
	lines := func() []string {
		b, _ := os.ReadFile(out)
		if len(b) == 0 {
			return nil
		}
		return strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	}
	// Until the rule's subscription is in place, a message finds no
	// subscriber: prime it with valid records until one comes out.
	testwait.Until(t, "a record through the stream", func() bool {
		if len(lines()) > 0 {
			return true
		}
		publish(`{"id":"prime","t":0}`)
		return false
	})
	publish(`{"t":2}`)
	publish(`{"id":"b","t":3}`)
	s.waitStatus("r1", "past the record b", func(st map[string]any) bool {
		ls := lines()
		return len(ls) > 0 && ls[len(ls)-1] == `[{"id":"b","t":3}]`
	})
	for _, l := range lines() {
		if l != `[{"id":"prime","t":0}]` && l != `[{"id":"b","t":3}]` {
			t.Fatalf("line %q: a record that does not validate came through", l)
		}
	}
	st := s.waitStatus("r1", "counting the invalid record", func(st map[string]any) bool {
		return st["source_js_0_exceptions_total"] == float64(1)
	})
	if e, _ := st["source_js_0_last_exception"].(string); !strings.Contains(e, "json schema reading: at '': missing property 'id'") {
		t.Fatalf("last exception %q, want the validation error", e)
	}
}

// TestSchemaExportImport: registered schemas travel in the Schema section
// of /data/export and /data/import, keyed "<type>_<name>"; an import that
// carries streams using its schemas, and schemas importing each other,
// applies in one go; a bad schema refuses the whole import.
func TestSchemaExportImport(t *testing.T) {
	s, _ := newSchemaServer(t)
	s.must("POST", "/schemas/json", schemaJSON("reading", readingSchema), 201)
	s.must("POST", "/schemas/protobuf", schemaJSON("demo", demoProto), 201)
	code, body := s.do("GET", "/data/export", "")
	if code != 200 {
		t.Fatalf("export: %d %s", code, body)
	}
	var doc struct {
		Schema map[string]string `json:"Schema"`
	}
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Schema) != 2 {
		t.Fatalf("Schema section %v: want the two registered schemas (not the etc file)", doc.Schema)
	}
	var reading map[string]string
	if err := json.Unmarshal([]byte(doc.Schema["json_reading"]), &reading); err != nil {
		t.Fatalf("json_reading %q: %v", doc.Schema["json_reading"], err)
	}
	if reading["type"] != "json" || reading["name"] != "reading" || reading["content"] != readingSchema {
		t.Fatalf("exported %v", reading)
	}
	importDoc := func(schemas, streams map[string]string) string {
		doc, err := json.Marshal(map[string]any{"Schema": schemas, "streams": streams})
		if err != nil {
			t.Fatal(err)
		}
		return mustJSON(map[string]string{"content": string(doc)})
	}
	item := func(typ, name, content string) string {
		return mustJSON(map[string]string{"type": typ, "name": name, "content": content})
	}
	base := `syntax = "proto3"; message Base { int64 v = 1; }`
	user := `syntax = "proto3"; import "base.proto"; message User { Base b = 1; }`
	s.run([]step{
		{"bad schema refuses all", "POST", "/data/import", importDoc(map[string]string{
			"protobuf_base": item("protobuf", "base", base),
			"json_bad":      item("json", "bad", `{"type":`),
		}, nil), 400, `\"Schema\":{\"json_bad\":`},
		{"key mismatch", "POST", "/data/import", importDoc(map[string]string{"json_other": item("json", "x", `{}`)}, nil), 400, `key \\\"json_other\\\" does not match`},
		{"unknown type", "POST", "/data/import", importDoc(map[string]string{"avro_x": item("avro", "x", `{}`)}, nil), 400, `unknown schema type`},
		{"bad name", "POST", "/data/import", importDoc(map[string]string{"json_../x": item("json", "../x", `{}`)}, nil), 400, `path separator`},
		{"nothing changed", "GET", "/schemas/protobuf", "", 200, `["demo","filed"]`},
		{"full import", "POST", "/data/import", importDoc(map[string]string{
			"protobuf_base": item("protobuf", "base", base),
			"protobuf_user": item("protobuf", "user", user),
			"json_reading":  item("json", "reading", readingSchema),
		}, map[string]string{
			"u": `CREATE STREAM u () WITH (DATASOURCE="t", TYPE="memory", FORMAT="protobuf", SCHEMAID="user.User")`,
			"j": `CREATE STREAM j () WITH (DATASOURCE="t", TYPE="memory", FORMAT="json", SCHEMAID="reading")`,
		}), 200, `"Schema":{}`},
		{"demo removed by the full import", "GET", "/schemas/protobuf/demo", "", 404, ""},
		{"protobuf imported", "GET", "/schemas/protobuf", "", 200, `["base","filed","user"]`},
		{"json imported", "GET", "/schemas/json/reading", "", 200, `"content":` + mustJSON(readingSchema)},
		{"stream on imported schema", "GET", "/streams/u", "", 200, `user.User`},
		{"partial import adds", "POST", "/data/import?partial=1", importDoc(map[string]string{
			"json_batch": item("json", "batch", `{"type":"array","items":{"$ref":"reading.json"}}`),
		}, nil), 200, ""},
		{"both json schemas", "GET", "/schemas/json", "", 200, `["batch","reading"]`},
	})
}

// startBroker starts an in-process MQTT broker on an ephemeral port,
// closed when the test ends.
func startBroker(t *testing.T) *broker.Broker {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	b, err := broker.Start(ctx, "127.0.0.1:0")
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		b.Close()
		cancel()
	})
	return b
}
