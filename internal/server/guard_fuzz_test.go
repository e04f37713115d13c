package server_test

import (
	"mime"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/auth"
	"github.com/rekuiper/rekuiper/internal/server"
)

// FuzzGuard sends arbitrary methods, paths, origins, content types, tokens
// and bodies to the API with authentication on and one CORS origin, and
// checks that the guard decides as documented: a foreign origin gets 403,
// a request without a valid token 401 (but / and /ping), a mutating body
// that is not JSON 415, and nothing gets a 5xx.
func FuzzGuard(f *testing.F) {
	etc := f.TempDir()
	key := keyPair(f, etc, "ops.pub")
	token, err := auth.SignWithKey(key, auth.SignOptions{Issuer: "ops.pub", Subject: "fuzz", Expires: time.Now().Add(24 * time.Hour)})
	if err != nil {
		f.Fatal(err)
	}
	h := apiHandler(f, etc, func(o *server.Options) {
		o.Config.Basic.Authentication = true
		o.Config.Basic.CORS = []string{"https://console.example"}
	})
	const listed, foreign = "https://console.example", "https://evil.example"
	for _, s := range []struct {
		method, path, origin, ct, body string
		withToken                      bool
	}{
		{"POST", "/streams", "", "application/json", streamBody, true},
		{"POST", "/data/import", foreign, "text/plain", `{"content":"{}"}`, true},
		{"GET", "/rules", listed, "", "", true},
		{"OPTIONS", "/rules", listed, "", "", false},
		{"DELETE", "/streams/s", "", "", "", false},
		{"GET", "/ping", foreign, "", "", false},
		{"PUT", "/rules/r1", "", "application/json; charset=utf-8", r1, true},
		{"POST", "/rules/r1/start", "null", "", "", true},
	} {
		f.Add(s.method, s.path, s.origin, s.ct, s.body, s.withToken)
	}
	f.Fuzz(func(t *testing.T, method, path, origin, ct, body string, withToken bool) {
		req, err := http.NewRequest(method, "http://127.0.0.1:9081"+path, strings.NewReader(body))
		if err != nil || req.URL.Path == "" || !strings.HasPrefix(req.URL.Path, "/") {
			return // not a request a client can send
		}
		req.Host = "127.0.0.1:9081"
		req.RequestURI = req.URL.RequestURI()
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		if withToken {
			req.Header.Set("Authorization", token)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		code := rec.Code
		if code >= 500 {
			t.Fatalf("%s %q: %d %s", method, path, code, rec.Body)
		}
		sameOrigin := origin == "http://127.0.0.1:9081" || origin == "https://127.0.0.1:9081"
		switch {
		case origin != "" && origin != listed && !sameOrigin:
			if code != http.StatusForbidden {
				t.Fatalf("origin %q: %d, want 403", origin, code)
			}
		case origin == listed && method == "OPTIONS":
			// a preflight may be answered before authentication
		case !withToken && req.URL.Path != "/" && req.URL.Path != "/ping":
			if code != http.StatusUnauthorized {
				t.Fatalf("%s %q without a token: %d, want 401", method, path, code)
			}
		case isMutating(method) && body != "" && !isJSON(ct):
			if code != http.StatusUnsupportedMediaType {
				t.Fatalf("%s %q with %q: %d, want 415", method, path, ct, code)
			}
		}
	})
}

func isMutating(m string) bool {
	return m == "POST" || m == "PUT" || m == "PATCH" || m == "DELETE"
}

func isJSON(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}
