package server_test

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/rekuiper/rekuiper/internal/broker"
	"github.com/rekuiper/rekuiper/internal/connector/redis/redistest"
)

func TestMetadata(t *testing.T) {
	s := newEngineServer(t)
	s.run([]step{
		{"sources", "GET", "/metadata/sources", "", 200, `{"about":{"trial":false,"installed":true,"description":{"en":"the built-in mqtt source","zh":"the built-in mqtt source"}},"name":"mqtt","type":"internal"}`},
		{"simulator listed", "GET", "/metadata/sources", "", 200, `"name":"simulator"`},
		{"sinks", "GET", "/metadata/sinks", "", 200, `"name":"file"`},
		{"lookups", "GET", "/metadata/lookups", "", 200, `"name":"memory"`},
		{"source properties", "GET", "/metadata/sources/simulator", "", 200, `"properties":{"default":[{"name":"data","default":null,"type":"list_object","control":"list","connection_related":false,"optional":false`},
		{"sink properties", "GET", "/metadata/sinks/file", "", 200, `{"name":"hasHeader","default":false,"type":"bool","control":"radio"`},
		{"enum is a select", "GET", "/metadata/sinks/file", "", 200, `"control":"select","connection_related":false,"optional":true,"values":["lines","json","csv"]`},
		{"unknown type", "GET", "/metadata/sources/nope", "", 404, "unknown connector type"},
		{"functions", "GET", "/metadata/functions", "", 200, `{"aggregate":true,"aliases":[],"maxArgs":1,"minArgs":1,"name":"avg","type":"aggregate"}`},
		{"formats", "GET", "/metadata/formats", "", 200, `{"name":"delimited","schema":false}`},
	})
	// Every property of every connector type is described: the metadata
	// is generated, so it lists what the spec has.
	var list []struct{ Name string }
	_, body := s.do("GET", "/metadata/sinks", "")
	if err := json.Unmarshal([]byte(body), &list); err != nil || len(list) == 0 {
		t.Fatalf("sinks: %v %s", err, body)
	}
	for _, sk := range list {
		if code, b := s.do("GET", "/metadata/sinks/"+sk.Name, ""); code != 200 {
			t.Errorf("sink %s: %d %s", sk.Name, code, b)
		}
	}
}

func TestConnectionPing(t *testing.T) {
	rs := redistest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b, err := broker.Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	down := strconv.Itoa(redistest.FreePort(t))
	s := newEngineServer(t)
	s.run([]step{
		{"redis sink up", "POST", "/metadata/sinks/connection/redis", `{"addr":"` + rs.Addr() + `","key":"k"}`, 200, ""},
		{"redis sink down", "POST", "/metadata/sinks/connection/redis", `{"addr":"127.0.0.1:` + down + `","key":"k","timeout":"300ms"}`, 400, "127.0.0.1:" + down},
		{"redis lookup up", "POST", "/metadata/lookups/connection/redis", `{"addr":"` + rs.Addr() + `"}`, 200, ""},
		{"mqtt source up", "POST", "/metadata/sources/connection/mqtt", `{"server":"` + b.URL() + `","datasource":"t"}`, 200, ""},
		{"mqtt source down", "POST", "/metadata/sources/connection/mqtt", `{"server":"tcp://127.0.0.1:` + down + `","datasource":"t"}`, 400, down},
		{"mqtt sink up", "POST", "/metadata/sinks/connection/mqtt", `{"server":"` + b.URL() + `","topic":"t"}`, 200, ""},
		// A ping carries connection properties only: what a stream or an
		// action reads or writes is not needed.
		{"mqtt source without datasource", "POST", "/metadata/sources/connection/mqtt", `{"server":"` + b.URL() + `"}`, 200, ""},
		{"mqtt source down without datasource", "POST", "/metadata/sources/connection/mqtt", `{"server":"tcp://127.0.0.1:` + down + `"}`, 400, down},
		{"mqtt sink without topic", "POST", "/metadata/sinks/connection/mqtt", `{"server":"` + b.URL() + `"}`, 200, ""},
		{"redisPub sink without channel", "POST", "/metadata/sinks/connection/redisPub", `{"addr":"` + rs.Addr() + `"}`, 200, ""},
		{"redisSub source without channels", "POST", "/metadata/sources/connection/redisSub", `{"addr":"` + rs.Addr() + `"}`, 200, ""},
		{"redisSub source down", "POST", "/metadata/sources/connection/redisSub", `{"addr":"127.0.0.1:` + down + `","timeout":"300ms"}`, 400, "127.0.0.1:" + down},
		{"connection property still checked", "POST", "/metadata/sinks/connection/mqtt", `{"server":"` + b.URL() + `","qos":7}`, 400, "qos"},
		// Connectors without a server to reach have nothing to check.
		{"memory source", "POST", "/metadata/sources/connection/memory", `{}`, 400, "source memory doesn't support ping connection"},
		{"simulator source", "POST", "/metadata/sources/connection/simulator", `{}`, 400, "source simulator doesn't support ping connection"},
		{"httppull source", "POST", "/metadata/sources/connection/httppull", `{"url":"http://127.0.0.1:` + down + `"}`, 400, "source httppull doesn't support ping connection"},
		{"file sink", "POST", "/metadata/sinks/connection/file", `{}`, 400, "sink file doesn't support ping connection"},
		{"rest sink", "POST", "/metadata/sinks/connection/rest", `{"url":"http://127.0.0.1:` + down + `"}`, 400, "sink rest doesn't support ping connection"},
		{"memory lookup", "POST", "/metadata/lookups/connection/memory", `{}`, 400, "lookup source memory doesn't support ping connection"},
		{"bad property", "POST", "/metadata/sinks/connection/redis", `{"addr":"x","timeout":"soon"}`, 400, "timeout"},
		{"unknown type", "POST", "/metadata/sources/connection/nope", `{}`, 400, "source nope doesn't support ping connection"},
		{"bad body", "POST", "/metadata/sources/connection/mqtt", `[1]`, 400, "decode body"},
	})
}
