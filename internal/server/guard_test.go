package server_test

import (
	"bytes"
	"crypto/rsa"
	"encoding/json"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/auth"
	"github.com/rekuiper/rekuiper/internal/auth/authtest"
	"github.com/rekuiper/rekuiper/internal/server"
	"github.com/rekuiper/rekuiper/internal/server/servertest"
)

// send makes a request with the given headers and returns the response
// (body read) and its body; error answers must have the one JSON shape.
func (s *testServer) send(method, path, body string, header map[string]string) (*http.Response, string) {
	s.t.Helper()
	resp, b := servertest.Request(s.t, method, s.url+path, body, header)
	s.checkErrorBody(method, path, resp, b)
	return resp, b
}

const streamBody = `{"sql":"CREATE STREAM s () WITH (TYPE=\"memory\", DATASOURCE=\"t\")"}`

func TestContentType(t *testing.T) {
	s := newServer(t, "")
	tests := []struct {
		name, method, path, body, ct string
		want                         int
	}{
		{"text/plain import", "POST", "/data/import", `{"content":"{}"}`, "text/plain", 415},
		{"form import", "POST", "/data/import", `{"content":"{}"}`, "application/x-www-form-urlencoded", 415},
		{"multipart stream", "POST", "/streams", streamBody, "multipart/form-data; boundary=x", 415},
		{"bad content type", "PUT", "/rules/r", `{}`, "application/json;;", 415},
		{"json", "POST", "/streams", streamBody, "application/json", 201},
		{"json with charset", "PUT", "/streams/s", streamBody, "application/json; charset=utf-8", 200},
		{"post without body", "POST", "/rules/none/start", "", "", 404},
		{"no content type from a page", "PUT", "/streams/s", streamBody, "", 415},
		{"no content type", "PUT", "/streams/s", streamBody, "", 200},
		{"delete without body", "DELETE", "/streams/s", "", "", 200},
		{"get with a body", "GET", "/streams", "x", "text/plain", 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := map[string]string{}
			if tt.ct != "" {
				h["Content-Type"] = tt.ct
			}
			if strings.HasSuffix(tt.name, "from a page") {
				h["Origin"] = s.url
			}
			resp, body := s.send(tt.method, tt.path, tt.body, h)
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.want, body)
			}
			if tt.want == 415 && !strings.Contains(body, "application/json") {
				t.Errorf("415 does not say what to send: %s", body)
			}
		})
	}
}

func TestOriginAndCORS(t *testing.T) {
	s := newServerWith(t, "", func(o *server.Options) {
		o.Config.Basic.CORS = []string{"https://console.example"}
	})
	host := strings.TrimPrefix(s.url, "http://")
	tests := []struct {
		name, method, path, body, origin string
		extra                            map[string]string
		want                             int
		wantACAO                         string
	}{
		{"foreign origin post", "POST", "/data/import", `{"content":"{}"}`, "https://evil.example", nil, 403, ""},
		{"foreign origin get", "GET", "/rules", "", "http://evil.example", nil, 403, ""},
		{"foreign origin with our port", "GET", "/rules", "", "http://evil.example:" + strings.Split(host, ":")[1], nil, 403, ""},
		{"null origin", "POST", "/streams", streamBody, "null", nil, 403, ""},
		{"same origin", "POST", "/streams", streamBody, "http://" + host, nil, 201, ""},
		{"same origin, https scheme", "GET", "/streams", "", "https://" + host, nil, 200, ""},
		{"listed origin", "GET", "/streams", "", "https://console.example", nil, 200, "https://console.example"},
		{"listed origin preflight", "OPTIONS", "/rules", "", "https://console.example", map[string]string{"Access-Control-Request-Method": "POST"}, 204, "https://console.example"},
		{"foreign preflight", "OPTIONS", "/rules", "", "https://evil.example", map[string]string{"Access-Control-Request-Method": "POST"}, 403, ""},
		{"no origin", "GET", "/streams", "", "", nil, 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := map[string]string{"Content-Type": "application/json"}
			if tt.origin != "" {
				h["Origin"] = tt.origin
			}
			for k, v := range tt.extra {
				h[k] = v
			}
			resp, body := s.send(tt.method, tt.path, tt.body, h)
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.want, body)
			}
			if got := resp.Header.Get("Access-Control-Allow-Origin"); got != tt.wantACAO {
				t.Errorf("Access-Control-Allow-Origin %q, want %q", got, tt.wantACAO)
			}
			if tt.method == "OPTIONS" && tt.want == 204 {
				if m := resp.Header.Get("Access-Control-Allow-Methods"); !strings.Contains(m, "DELETE") {
					t.Errorf("Access-Control-Allow-Methods %q", m)
				}
				if m := resp.Header.Get("Access-Control-Allow-Headers"); !strings.Contains(m, "Authorization") || !strings.Contains(m, "Content-Type") {
					t.Errorf("Access-Control-Allow-Headers %q", m)
				}
			}
			if tt.want == 403 && !strings.Contains(body, "basic.cors") {
				t.Errorf("403 does not say how to allow the origin: %s", body)
			}
		})
	}
	t.Run("no CORS by default", func(t *testing.T) {
		d := newServer(t, "")
		resp, _ := d.send("GET", "/streams", "", map[string]string{"Origin": "https://console.example"})
		if resp.StatusCode != 403 || resp.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("status %d ACAO %q", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
		}
	})
}

// keyPair writes a new RSA public key as <etc>/mgmt/<name> and returns the
// private key.
func keyPair(t testing.TB, etc, name string) *rsa.PrivateKey {
	t.Helper()
	k := authtest.NewKey(t)
	authtest.WritePublic(t, filepath.Join(etc, "mgmt"), name, k)
	return k
}

// syncBuffer is a log destination for concurrent handlers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func TestAuthenticationAndAudit(t *testing.T) {
	etc := t.TempDir()
	key := keyPair(t, etc, "ops.pub")
	var logs syncBuffer
	s := newServerWith(t, etc, func(o *server.Options) {
		o.Config.Basic.Authentication = true
		o.Config.Basic.EnableRestAuditLog = true
		o.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	tok, err := auth.SignWithKey(key, auth.SignOptions{Issuer: "ops.pub", Subject: "alice", Expires: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	expired, err := auth.SignWithKey(key, auth.SignOptions{Issuer: "ops.pub", Subject: "bob", Expires: time.Now().Add(-time.Minute), Now: time.Now().Add(-time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	const secret = "hunter2-in-the-body"
	body := `{"sql":"CREATE STREAM s () WITH (TYPE=\"memory\", DATASOURCE=\"` + secret + `\")"}`
	tests := []struct {
		name, method, path, body, token string
		want                            int
	}{
		{"no token", "GET", "/rules", "", "", 401},
		{"garbage", "GET", "/rules", "", "garbage", 401},
		{"expired", "GET", "/rules", "", expired, 401},
		{"ping open", "GET", "/ping", "", "", 200},
		{"root open", "GET", "/", "", "", 200},
		{"valid", "GET", "/rules", "", tok, 200},
		{"valid bearer", "POST", "/streams", body, "Bearer " + tok, 201},
		{"mutation refused", "DELETE", "/streams/s", "", "", 401},
		{"unknown route", "GET", "/nothing", "", "", 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := map[string]string{"Content-Type": "application/json"}
			if tt.token != "" {
				h["Authorization"] = tt.token
			}
			resp, b := s.send(tt.method, tt.path, tt.body, h)
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.want, b)
			}
			if got := resp.Header.Get("WWW-Authenticate"); (tt.want == 401) != (got != "") {
				t.Errorf("WWW-Authenticate %q on %d", got, resp.StatusCode)
			}
		})
	}

	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if m["msg"] == "rest audit" {
			lines = append(lines, m)
		}
	}
	want := []map[string]any{
		{"subject": "alice", "method": "POST", "route": "/streams", "status": float64(201)},
		{"subject": "-", "method": "DELETE", "route": "/streams/{name}", "status": float64(401)},
	}
	if len(lines) != len(want) {
		t.Fatalf("audit lines %v, want %d (mutating requests only)", lines, len(want))
	}
	for i, w := range want {
		for k, v := range w {
			if lines[i][k] != v {
				t.Errorf("audit line %d: %s = %v, want %v", i, k, lines[i][k], v)
			}
		}
		if _, ok := lines[i]["time"]; !ok {
			t.Errorf("audit line %d has no time: %v", i, lines[i])
		}
	}
	if strings.Contains(logs.String(), secret) || strings.Contains(logs.String(), tok) {
		t.Errorf("the log holds a request body or a token:\n%s", logs.String())
	}
}

func TestInfoWarnings(t *testing.T) {
	s := newServerWith(t, "", func(o *server.Options) { o.Warnings = []string{"exposed"} })
	_, body := s.send("GET", "/", "", nil)
	var info struct {
		Version  string   `json:"version"`
		Warnings []string `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(body), &info); err != nil {
		t.Fatal(err)
	}
	if len(info.Warnings) != 1 || info.Warnings[0] != "exposed" {
		t.Errorf("GET / %s", body)
	}
	_, body = newServer(t, "").send("GET", "/", "", nil)
	if strings.Contains(body, "warnings") {
		t.Errorf("GET / without warnings: %s", body)
	}
}
