// Package httpclient holds what the HTTP connectors (httppull source, rest
// sink) share: the client, request bodies by eKuiper bodyType, and response
// checks by responseType.
package httpclient

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/rekuiper/rekuiper/internal/guard"
	"github.com/rekuiper/rekuiper/internal/value"
)

// BodyTypes are the accepted values of the bodyType property.
func BodyTypes() []any {
	return []any{"none", "text", "json", "html", "xml", "javascript", "form", "binary"}
}

// Methods are the accepted values of the method property.
func Methods() []any { return []any{"GET", "POST", "PUT", "DELETE"} }

// ResponseTypes are the accepted values of the responseType property.
func ResponseTypes() []any { return []any{"code", "body"} }

// ErrNoCode is returned for responseType body when the response body is not
// a JSON object with a numeric code field.
var ErrNoCode = errors.New("response body has no code field")

// MaxResponse bounds how much of a response body is read.
const MaxResponse = 64 << 20

// NewClient returns a client with the given overall request timeout (0 =
// none) and TLS verification setting, dialing through g (the network
// guard: with basic.enablePrivateNet false it refuses non-public
// addresses when it connects; nil allows every address). Callers own it
// and should call CloseIdleConnections when done.
func NewClient(g *guard.Guard, timeout time.Duration, insecureSkipVerify bool) *http.Client {
	tr := g.Transport()
	tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: insecureSkipVerify} //nolint:gosec // user opt-in
	return &http.Client{Transport: tr, Timeout: timeout}
}

// contentType maps a bodyType to its Content-Type.
func contentType(bodyType string) string {
	switch bodyType {
	case "text":
		return "text/plain"
	case "json":
		return "application/json"
	case "html":
		return "text/html"
	case "xml":
		return "application/xml"
	case "javascript":
		return "application/javascript"
	case "form":
		return "application/x-www-form-urlencoded"
	case "binary":
		return "application/octet-stream"
	}
	return ""
}

// NewRequest builds a request carrying body as bodyType ("none" sends no
// body; "form" turns a JSON object into url-encoded fields). headers are
// set after Content-Type, so they may override it.
func NewRequest(ctx context.Context, method, u, bodyType string, body []byte, headers map[string]any) (*http.Request, error) {
	var r io.Reader
	if bodyType != "none" && body != nil {
		if bodyType == "form" {
			b, err := formBody(body)
			if err != nil {
				return nil, err
			}
			body = b
		}
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, r)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	if ct := contentType(bodyType); ct != "" && r != nil {
		req.Header.Set("Content-Type", ct)
	}
	for k, v := range headers {
		req.Header.Set(k, value.ToString(v))
	}
	return req, nil
}

func formBody(body []byte) ([]byte, error) {
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		// Not a JSON object: send it as already encoded.
		return body, nil //nolint:nilerr // raw form bodies are allowed
	}
	vals := url.Values{}
	for k, v := range m {
		vals.Set(k, value.ToString(value.Normalize(v)))
	}
	return []byte(vals.Encode()), nil
}

// StatusError is a response that failed the responseType check.
type StatusError struct {
	Code int // HTTP status, or the body's "code" field for responseType body
	Body string
}

func (e *StatusError) Error() string {
	b := e.Body
	if len(b) > 256 {
		b = b[:256] + "..."
	}
	return fmt.Sprintf("http status %d: %s", e.Code, strings.TrimSpace(b))
}

// Transient reports whether the status is worth retrying (5xx, 408, 429).
func (e *StatusError) Transient() bool {
	return e.Code >= 500 || e.Code == http.StatusRequestTimeout || e.Code == http.StatusTooManyRequests
}

// Do sends req with c and returns the response body. It returns a
// *StatusError when the response fails the responseType check: "code"
// requires a 2xx status; "body" additionally requires a JSON body whose
// "code" field is in 200..299. Transport errors are returned as is.
func Do(c *http.Client, req *http.Request, responseType string) (int, []byte, error) {
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponse))
	if err != nil {
		return resp.StatusCode, nil, fmt.Errorf("read response: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, body, &StatusError{Code: resp.StatusCode, Body: string(body)}
	}
	if responseType == "body" {
		var r struct {
			Code *json.Number `json:"code"`
		}
		if err := json.Unmarshal(body, &r); err != nil || r.Code == nil {
			return resp.StatusCode, body, ErrNoCode
		}
		code, err := r.Code.Int64()
		if err != nil || code < 200 || code > 299 {
			return resp.StatusCode, body, &StatusError{Code: int(code), Body: string(body)}
		}
	}
	return resp.StatusCode, body, nil
}

// JoinURL appends a datasource path to a base URL.
func JoinURL(base, datasource string) string {
	if datasource == "" || datasource == "/" {
		return base
	}
	return strings.TrimRight(base, "/") + "/" + strings.TrimLeft(datasource, "/")
}
