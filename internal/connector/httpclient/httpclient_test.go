package httpclient

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestDoResponseType(t *testing.T) {
	tests := []struct {
		name         string
		status       int
		body         string
		responseType string
		wantErr      bool
		wantCode     int // StatusError code when wantErr and a status error
	}{
		{"code 200", 200, "ok", "code", false, 0},
		{"code 404", 404, "missing", "code", true, 404},
		{"code 503", 503, "busy", "code", true, 503},
		{"body ok", 200, `{"code":200}`, "body", false, 0},
		{"body code 500", 200, `{"code":500,"msg":"x"}`, "body", true, 500},
		{"body no code", 200, `{"msg":"x"}`, "body", true, 0},
		{"body not json", 200, `oops`, "body", true, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			req, err := NewRequest(context.Background(), "GET", srv.URL, "none", nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, body, err := Do(srv.Client(), req, tc.responseType)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			var se *StatusError
			if tc.wantCode != 0 && (!errors.As(err, &se) || se.Code != tc.wantCode) {
				t.Fatalf("err = %v, want StatusError %d", err, tc.wantCode)
			}
			if string(body) != tc.body {
				t.Fatalf("body = %q", body)
			}
		})
	}
}

func TestNewRequestBody(t *testing.T) {
	tests := []struct {
		name, bodyType, body string
		wantCT, wantBody     string
	}{
		{"json", "json", `{"a":1}`, "application/json", `{"a":1}`},
		{"none", "none", `{"a":1}`, "", ""},
		{"form", "form", `{"a":1,"b":"x y"}`, "application/x-www-form-urlencoded", "a=1&b=x+y"},
		{"text", "text", "hello", "text/plain", "hello"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := NewRequest(context.Background(), "POST", "http://x", tc.bodyType, []byte(tc.body), map[string]any{"X-N": int64(3)})
			if err != nil {
				t.Fatal(err)
			}
			if got := req.Header.Get("Content-Type"); got != tc.wantCT {
				t.Errorf("content type = %q, want %q", got, tc.wantCT)
			}
			if got := req.Header.Get("X-N"); got != "3" {
				t.Errorf("header = %q", got)
			}
			var got []byte
			if req.Body != nil {
				got, _ = io.ReadAll(req.Body)
			}
			if string(got) != tc.wantBody {
				t.Errorf("body = %q, want %q", got, tc.wantBody)
			}
		})
	}
}

func TestJoinURL(t *testing.T) {
	tests := []struct{ base, ds, want string }{
		{"http://h:1", "", "http://h:1"},
		{"http://h:1/", "/api/x", "http://h:1/api/x"},
		{"http://h:1/v1", "data?a=1", "http://h:1/v1/data?a=1"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			if got := JoinURL(tc.base, tc.ds); got != tc.want {
				t.Fatalf("got %q", got)
			}
		})
	}
}
