package server_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/rekuiper/rekuiper/internal/broker"
	"github.com/rekuiper/rekuiper/internal/schema"
	"github.com/rekuiper/rekuiper/internal/server/servertest"
)

const demoProto = `syntax = "proto3";
package demo;
message Reading {
  string deviceId = 1;
  double temperature = 2;
  int64 humidity = 3;
  Loc loc = 4;
  repeated string tags = 5;
}
message Loc { double lat = 1; double lon = 2; }
message Out { string deviceId = 1; double t2 = 2; int64 humidity = 3; double lat = 4; }
`

// newSchemaServer serves the REST API over the daemon's real engine,
// checking stream definitions, with an etc folder holding
// schemas/protobuf/filed.proto.
func newSchemaServer(t *testing.T) (*testServer, string) {
	t.Helper()
	d := servertest.Start(t, servertest.Options{Etc: map[string]string{
		"schemas/protobuf/filed.proto": `syntax = "proto3"; message F { int64 n = 1; }`,
	}})
	return &testServer{t: t, url: d.URL, data: d.Data, cat: d.Catalog, mgr: d.Rules}, d.Data
}

func schemaJSON(name, content string) string {
	b, _ := json.Marshal(map[string]string{"name": name, "content": content})
	return string(b)
}

func TestSchemasREST(t *testing.T) {
	s, _ := newSchemaServer(t)
	s.run([]step{
		{"empty list has the etc file", "GET", "/schemas/protobuf", "", 200, `["filed"]`},
		{"create", "POST", "/schemas/protobuf", schemaJSON("demo", demoProto), 201, "protobuf schema demo is created"},
		{"list", "GET", "/schemas/protobuf", "", 200, `["demo","filed"]`},
		{"describe", "GET", "/schemas/protobuf/demo", "", 200, `"name":"demo"`},
		{"describe has the content", "GET", "/schemas/protobuf/demo", "", 200, `message Out`},
		{"describe etc file", "GET", "/schemas/protobuf/filed", "", 200, `message F`},
		{"create twice", "POST", "/schemas/protobuf", schemaJSON("demo", demoProto), 409, "demo"},
		{"create over the etc file", "POST", "/schemas/protobuf", schemaJSON("filed", demoProto), 409, "filed.proto"},
		{"syntax error has its position", "POST", "/schemas/protobuf", schemaJSON("bad", "syntax = \"proto3\";\nmessage M { int64 = 1; }"), 400, "bad.proto:2:19"},
		{"unknown type in schema", "POST", "/schemas/protobuf", schemaJSON("bad", `syntax = "proto3"; message M { Nope n = 1; }`), 400, `bad.proto:1:32: field M.n: unknown type Nope`},
		{"import of another schema", "POST", "/schemas/protobuf", schemaJSON("imp", `syntax = "proto3"; import "filed.proto"; message W { F f = 1; }`), 201, ""},
		{"import of nothing", "POST", "/schemas/protobuf", schemaJSON("imp2", `syntax = "proto3"; import "nosuch.proto";`), 400, "nosuch.proto"},
		{"name with separator", "POST", "/schemas/protobuf", schemaJSON("a/b", demoProto), 400, "path separator"},
		{"name with dots", "POST", "/schemas/protobuf", schemaJSON("..x", demoProto), 400, `contains a path separator or \"..\"`},
		{"no content", "POST", "/schemas/protobuf", `{"name":"e"}`, 400, "content or file is required"},
		{"soFile", "POST", "/schemas/protobuf", `{"name":"e","content":"syntax = \"proto3\";","soFile":"file:///x.so"}`, 400, "native plugins"},
		{"custom type", "POST", "/schemas/custom", schemaJSON("c", demoProto), 400, "custom needs native plugins"},
		{"custom list is empty", "GET", "/schemas/custom", "", 200, `[]`},
		{"unknown type", "POST", "/schemas/avro", schemaJSON("c", demoProto), 400, `unknown schema type \"avro\"`},
		{"file outside uploads", "POST", "/schemas/protobuf", `{"name":"f","file":"file:///etc/passwd"}`, 400, "is not under"},
		{"file over http", "POST", "/schemas/protobuf", `{"name":"f","file":"http://127.0.0.1:1/x.proto"}`, 400, "only file:// URLs"},
		{"unknown field", "POST", "/schemas/protobuf", `{"name":"f","content":"x","nope":1}`, 400, "nope"},
		{"describe missing", "GET", "/schemas/protobuf/nosuch", "", 404, "nosuch"},
		{"update", "PUT", "/schemas/protobuf/demo", `{"name":"demo","version":"2","content":` + mustJSON(demoProto+"message Extra { int64 x = 1; }") + `}`, 200, "protobuf schema demo is updated"},
		{"update shows", "GET", "/schemas/protobuf/demo", "", 200, "message Extra"},
		{"older version refused", "PUT", "/schemas/protobuf/demo", `{"version":"1","content":` + mustJSON(demoProto) + `}`, 409, `version \"1\" is not newer than \"2\"`},
		{"update name mismatch", "PUT", "/schemas/protobuf/demo", schemaJSON("other", demoProto), 400, "does not match"},
		{"update bad text", "PUT", "/schemas/protobuf/demo", `{"version":"3","content":"message {"}`, 400, "demo.proto:1:"},
		{"update etc file", "PUT", "/schemas/protobuf/filed", schemaJSON("filed", demoProto), 400, "read-only"},

		{"stream without SCHEMAID", "POST", "/streams", ddl(`CREATE STREAM p1 () WITH (DATASOURCE="t", TYPE="memory", FORMAT="protobuf")`), 400, "needs a schema id (SCHEMAID of a stream"},
		{"stream with unknown schema", "POST", "/streams", ddl(`CREATE STREAM p1 () WITH (DATASOURCE="t", TYPE="memory", FORMAT="protobuf", SCHEMAID="nosuch.M")`), 400, "schema protobuf/nosuch: not found"},
		{"stream with unknown message", "POST", "/streams", ddl(`CREATE STREAM p1 () WITH (DATASOURCE="t", TYPE="memory", FORMAT="protobuf", SCHEMAID="demo.Nope")`), 400, `schema demo has no message \"Nope\"; its messages are Reading, Loc, Out, Extra`},
		{"stream with schema only", "POST", "/streams", ddl(`CREATE STREAM p1 () WITH (DATASOURCE="t", TYPE="memory", FORMAT="protobuf", SCHEMAID="demo")`), 400, `want \"schema.Message\"`},
		{"stream", "POST", "/streams", ddl(`CREATE STREAM p1 () WITH (DATASOURCE="t", TYPE="memory", FORMAT="protobuf", SCHEMAID="demo.Reading")`), 201, ""},
		{"stream on the etc file", "POST", "/streams", ddl(`CREATE STREAM p2 (n bigint) WITH (DATASOURCE="t", TYPE="memory", FORMAT="protobuf", SCHEMAID="filed.F")`), 201, ""},
		{"sink with unknown message", "POST", "/rules", `{"id":"bad","sql":"SELECT * FROM p1","actions":[{"log":{"format":"protobuf","schemaId":"demo.Nope"}}]}`, 422, `schema demo has no message \"Nope\"`},
		{"sink without schemaId", "POST", "/rules", `{"id":"bad","sql":"SELECT * FROM p1","actions":[{"log":{"format":"protobuf"}}]}`, 422, "needs a schema id (SCHEMAID of a stream"},
		{"delete used by a stream", "DELETE", "/schemas/protobuf/demo", "", 409, "stream p1"},
		{"delete etc file", "DELETE", "/schemas/protobuf/filed", "", 400, "remove the file"},
		{"drop the stream", "DELETE", "/streams/p1", "", 200, ""},
		{"delete", "DELETE", "/schemas/protobuf/demo", "", 200, "protobuf schema demo is deleted"},
		{"deleted", "GET", "/schemas/protobuf/demo", "", 404, ""},
		{"delete missing", "DELETE", "/schemas/protobuf/demo", "", 404, ""},
	})
}

func TestSchemaFromUploads(t *testing.T) {
	s, data := newSchemaServer(t)
	up := filepath.Join(data, "uploads")
	if err := os.MkdirAll(up, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(up, "u.proto"), []byte(demoProto), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(up, "link.proto")); err != nil {
		t.Fatal(err)
	}
	// A folder of data/uploads linked to a folder elsewhere holding a
	// valid schema file.
	elsewhere := t.TempDir()
	if err := os.WriteFile(filepath.Join(elsewhere, "w.proto"), []byte(demoProto), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(up, "dir")); err != nil {
		t.Fatal(err)
	}
	s.run([]step{
		{"create from an upload", "POST", "/schemas/protobuf", `{"name":"u","file":"file://` + filepath.Join(up, "u.proto") + `"}`, 201, ""},
		{"content read", "GET", "/schemas/protobuf/u", "", 200, "message Reading"},
		{"escape with ..", "POST", "/schemas/protobuf", `{"name":"v","file":"file://` + up + `/../sqliteKV.db"}`, 400, "is not under"},
		{"symlink", "POST", "/schemas/protobuf", `{"name":"v","file":"file://` + filepath.Join(up, "link.proto") + `"}`, 400, "outside the allowed folders"},
		{"folder symlink", "POST", "/schemas/protobuf", `{"name":"w","file":"file://` + filepath.Join(up, "dir", "w.proto") + `"}`, 400, "outside the allowed folders"},
		{"missing", "POST", "/schemas/protobuf", `{"name":"v","file":"file://` + filepath.Join(up, "none.proto") + `"}`, 400, "not a regular file"},
	})
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestProtobufEndToEnd feeds protobuf messages through an MQTT broker into
// a FORMAT="protobuf" stream, filters and projects them, and has an MQTT
// sink encode the results to protobuf; the test decodes them back.
func TestProtobufEndToEnd(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b, err := broker.Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	s, _ := newSchemaServer(t)
	s.must("POST", "/schemas/protobuf", schemaJSON("demo", demoProto), 201)
	s.must("PUT", "/metadata/sources/mqtt/confKeys/pb", `{"server":"`+b.URL()+`"}`, 200)
	s.must("POST", "/streams", ddl(`CREATE STREAM pb (deviceId string, temperature float, humidity bigint, loc STRUCT(lat float, lon float)) WITH (DATASOURCE="pb/in", TYPE="mqtt", CONF_KEY="pb", FORMAT="protobuf", SCHEMAID="demo.Reading")`), 201)
	s.must("POST", "/rules", `{"id":"r1","sql":"SELECT deviceId, temperature * 2 AS t2, humidity, loc->lat AS lat FROM pb WHERE temperature > 20",
		"actions":[{"mqtt":{"server":"`+b.URL()+`","topic":"pb/out","format":"protobuf","schemaId":"demo.Out","sendSingle":true}}]}`, 201)
	if code, body := s.do("DELETE", "/schemas/protobuf/demo", ""); code != 409 || !strings.Contains(body, "rule r1") {
		t.Fatalf("delete a schema rules use: %d %s", code, body)
	}

	reg := schema.New(s.cat, "")
	in, err := reg.ProtoMessage("demo.Reading")
	if err != nil {
		t.Fatal(err)
	}
	out, err := reg.ProtoMessage("demo.Out")
	if err != nil {
		t.Fatal(err)
	}
	cl := paho.NewClient(paho.NewClientOptions().AddBroker(b.URL()).SetClientID("pbtest"))
	if tok := cl.Connect(); tok.Wait() && tok.Error() != nil {
		t.Fatal(tok.Error())
	}
	defer cl.Disconnect(0)
	got := make(chan []byte, 16)
	if tok := cl.Subscribe("pb/out", 1, func(_ paho.Client, m paho.Message) { got <- m.Payload() }); tok.Wait() && tok.Error() != nil {
		t.Fatal(tok.Error())
	}
	publish := func(dev string, temp float64, hum int64, lat float64) {
		m := dynamicpb.NewMessage(in)
		f := in.Fields()
		m.Set(f.ByName("deviceId"), protoreflect.ValueOf(dev))
		m.Set(f.ByName("temperature"), protoreflect.ValueOf(temp))
		m.Set(f.ByName("humidity"), protoreflect.ValueOf(hum))
		loc := m.Mutable(f.ByName("loc")).Message()
		loc.Set(loc.Descriptor().Fields().ByName("lat"), protoreflect.ValueOf(lat))
		payload, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		// Retained, so the rule's subscription gets it whenever it starts.
		if tok := cl.Publish("pb/in", 1, true, payload); tok.Wait() && tok.Error() != nil {
			t.Fatal(tok.Error())
		}
	}
	publish("cold", 10.5, 1, 1.5)
	publish("hot", 30.25, 61, 52.5)

	var payload []byte
	select {
	case payload = <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("no protobuf message on pb/out")
	}
	m := dynamicpb.NewMessage(out)
	if err := proto.Unmarshal(payload, m); err != nil {
		t.Fatalf("sink payload %x is not a demo.Out: %v", payload, err)
	}
	f := out.Fields()
	if d, t2, h, lat := m.Get(f.ByName("deviceId")).String(), m.Get(f.ByName("t2")).Float(),
		m.Get(f.ByName("humidity")).Int(), m.Get(f.ByName("lat")).Float(); d != "hot" || t2 != 60.5 || h != 61 || lat != 52.5 {
		t.Fatalf("decoded sink message: deviceId %q t2 %v humidity %d lat %v", d, t2, h, lat)
	}
}
