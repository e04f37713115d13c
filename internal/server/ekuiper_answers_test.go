package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/rekuiper/rekuiper/internal/procs"
	"github.com/rekuiper/rekuiper/internal/server/servertest"
)

// rawDo sends a request and returns the status and the body exactly as
// sent, trailing newline included.
func (s *testServer) rawDo(method, path, body string) (int, string) {
	s.t.Helper()
	resp, b := servertest.Request(s.t, method, s.url+path, body, map[string]string{"Content-Type": "application/json"})
	return resp.StatusCode, b
}

// ekuiperBody is an error body as eKuiper writes it.
func ekuiperBody(code int, msg string) string {
	m, _ := json.Marshal(msg)
	return fmt.Sprintf(`{"error":%d,"message":%s}`, code, m) + "\n"
}

// The connection pings that fail answer eKuiper's code and text, byte for
// byte, as eKuiper's clients compare them.
func TestConnectionPingAnswersAsEKuiper(t *testing.T) {
	down, err := procs.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	d := strconv.Itoa(down)
	s := newEngineServer(t)
	cases := []struct {
		name, path, body string
		code             int
		msg              string
	}{
		{"nothing to reach", "/metadata/sources/connection/memory", `{}`, 1000, "source memory doesn't support ping connection"},
		{"nothing to reach, sink", "/metadata/sinks/connection/file", `{}`, 1000, "sink file doesn't support ping connection"},
		{"nothing to reach, lookup", "/metadata/lookups/connection/memory", `{}`, 1000, "lookup source memory doesn't support ping connection"},
		{"a type rekuiper lacks", "/metadata/sources/connection/neuron", `{"url":"tcp://127.0.0.1:7081"}`, 1000, "source neuron doesn't support ping connection"},
		{"a sink type rekuiper lacks", "/metadata/sinks/connection/influx2", `{}`, 1000, "sink influx2 doesn't support ping connection"},
		{"a lookup type rekuiper lacks", "/metadata/lookups/connection/nope", `{}`, 1000, "lookup source nope doesn't support ping connection"},
		{"mqtt broker down", "/metadata/sources/connection/mqtt", `{"server":"tcp://127.0.0.1:` + d + `"}`, 1003,
			"found error when connecting for tcp://127.0.0.1:" + d + ": network Error : dial tcp 127.0.0.1:" + d + ": connect: connection refused"},
		{"mqtt sink broker down", "/metadata/sinks/connection/mqtt", `{"server":"tcp://127.0.0.1:` + d + `"}`, 1003,
			"found error when connecting for tcp://127.0.0.1:" + d + ": network Error : dial tcp 127.0.0.1:" + d + ": connect: connection refused"},
		{"kafka broker down", "/metadata/sinks/connection/kafka", `{"brokers":"127.0.0.1:` + d + `","topic":"t"}`, 1000,
			"failed to dial: failed to open connection to 127.0.0.1:" + d + ": dial tcp 127.0.0.1:" + d + ": connect: connection refused"},
		// A broker that is not host:port is a host on the default port,
		// as kafka-go reads it; such a host cannot be looked up.
		{"kafka broker not host:port", "/metadata/sources/connection/kafka", `{"brokers":"tcp://127.0.0.1:` + d + `","topic":"t"}`, 1000,
			"failed to dial: failed to open connection to [tcp://127.0.0.1:" + d + "]:9092: dial tcp: lookup tcp://127.0.0.1:" + d + ": no such host"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, body := s.rawDo("POST", c.path, c.body)
			if want := ekuiperBody(c.code, c.msg); code != http.StatusBadRequest || body != want {
				t.Fatalf("POST %s: got %d %q, want 400 %q", c.path, code, body, want)
			}
		})
	}
}

// A failed import answers code 1000 with the per-section errors in
// eKuiper's section order; a document that is not JSON answers eKuiper's
// text.
func TestImportFailureAnswersAsEKuiper(t *testing.T) {
	s := newEngineServer(t)
	doc := `{"content":"{\"streams\": {\"demo\": \"CREATE STwREAM demo () WITH (DATASOURCE=\\\"users\\\", TYPE=\\\"memory\\\", FORMAT=\\\"JSON\\\")\"}}"}`
	for _, path := range []string{"/data/import?partial=1", "/data/import"} {
		code, body := s.rawDo("POST", path, doc)
		if code != http.StatusBadRequest || !strings.HasSuffix(body, "}\n") {
			t.Fatalf("POST %s: got %d %q", path, code, body)
		}
		var out struct {
			Error   int    `json:"error"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal([]byte(body), &out); err != nil || out.Error != 1000 {
			t.Fatalf("POST %s: %v %q", path, err, body)
		}
		dec := json.NewDecoder(bytes.NewReader([]byte(out.Message)))
		var keys []string
		if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
			t.Fatalf("message %q: %v %v", out.Message, tok, err)
		}
		failed := map[string]map[string]string{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]string
			if err := dec.Decode(&m); err != nil {
				t.Fatal(err)
			}
			keys = append(keys, k.(string))
			failed[k.(string)] = m
		}
		want := []string{"streams", "tables", "rules", "nativePlugins", "portablePlugins", "sourceConfig", "sinkConfig", "connectionConfig", "Service", "Schema", "uploads", "scripts"}
		if strings.Join(keys, ",") != strings.Join(want, ",") {
			t.Errorf("POST %s: sections %v, want %v", path, keys, want)
		}
		if e := failed["streams"]["demo"]; !strings.Contains(e, "STwREAM") || strings.Contains(e, "bad request") {
			t.Errorf("POST %s: stream demo error %q", path, e)
		}
	}
	code, body := s.rawDo("POST", "/data/import", `{"content":"{\"streams\": {\"demo\": \"CREATE"}`)
	if want := ekuiperBody(1000, "configuration unmarshal with error unexpected end of JSON input"); code != http.StatusBadRequest || body != want {
		t.Fatalf("truncated document: got %d %q, want 400 %q", code, body, want)
	}
}
