// Package client is a typed client of kuiperd's REST API, shared by the
// kuiper CLI and tests.
package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// Client talks to one kuiperd. It is safe for concurrent use.
type Client struct {
	base  string
	http  *http.Client
	token string
}

// New returns a client of the daemon at baseURL ("http://127.0.0.1:9081").
// A nil httpClient uses one with a 5-minute timeout.
func New(baseURL string, httpClient *http.Client) *Client {
	if httpClient == nil {
		httpClient = &http.Client{Timeout: 5 * time.Minute}
	}
	return &Client{base: baseURL, http: httpClient}
}

// WithToken returns a copy of c that sends token (a JWT) in the
// Authorization header of every request, as eKuiper expects it: the token
// alone, without a scheme.
func (c *Client) WithToken(token string) *Client {
	cp := *c
	cp.token = token
	return &cp
}

// BaseURL returns the daemon's address.
func (c *Client) BaseURL() string { return c.base }

// APIError is a non-2xx answer of the daemon.
type APIError struct {
	Status int
	// Code and Message come from the {"error": code, "message": text} body;
	// Message is the raw body when it is not in that shape.
	Code    int
	Message string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%s (status %d)", e.Message, e.Status)
}

// ErrUnreachable: no connection to the daemon could be made.
var ErrUnreachable = errors.New("cannot reach kuiperd")

// Do sends a request with an optional body (a []byte or string is sent as
// is, anything else as JSON) and returns the 2xx response body. Non-2xx
// answers are *APIError; connection failures wrap ErrUnreachable with a
// message such as "cannot reach kuiperd at http://127.0.0.1:9081:
// connection refused".
func (c *Client) Do(ctx context.Context, method, path string, body any) (int, []byte, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	case string:
		rd = bytes.NewReader([]byte(b))
	default:
		js, err := json.Marshal(b)
		if err != nil {
			return 0, nil, fmt.Errorf("encode request: %w", err)
		}
		rd = bytes.NewReader(js)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, nil, fmt.Errorf("build request: %w", err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, c.unreachable(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, nil, fmt.Errorf("read response of %s %s: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode, data, apiError(resp.StatusCode, data)
	}
	return resp.StatusCode, data, nil
}

// apiError is the error of a non-2xx answer: the server's
// {"error":code,"message":…} when the body has that shape, else the body
// itself as the message.
func apiError(status int, body []byte) *APIError {
	ae := &APIError{Status: status, Message: string(bytes.TrimSpace(body))}
	var shaped struct {
		Error   int    `json:"error"`
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &shaped) == nil && shaped.Message != "" {
		ae.Code, ae.Message = shaped.Error, shaped.Message
	}
	return ae
}

func (c *Client) unreachable(err error) error {
	reason := err.Error()
	var opErr *net.OpError
	var uErr *url.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		reason = "connection refused"
	case errors.As(err, &opErr) && opErr.Err != nil:
		reason = opErr.Err.Error()
	case errors.As(err, &uErr) && uErr.Err != nil:
		reason = uErr.Err.Error()
	}
	return fmt.Errorf("%w at %s: %s", ErrUnreachable, c.base, reason)
}

// Text sends a request and returns the body as text.
func (c *Client) Text(ctx context.Context, method, path string, body any) (string, error) {
	_, b, err := c.Do(ctx, method, path, body)
	return string(b), err
}

// JSON sends a request and decodes the response into out.
func (c *Client) JSON(ctx context.Context, method, path string, body, out any) error {
	_, b, err := c.Do(ctx, method, path, body)
	if err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("decode response of %s %s: %w", method, path, err)
	}
	return nil
}

// Ping checks that the daemon answers.
func (c *Client) Ping(ctx context.Context) error {
	_, _, err := c.Do(ctx, http.MethodGet, "/ping", nil)
	return err
}

// Kind is "stream" or "table".
type Kind string

// Kinds of stream definitions.
const (
	Stream Kind = "stream"
	Table  Kind = "table"
)

func (k Kind) path() string { return "/" + string(k) + "s" }

// CreateStream creates a stream or table from its CREATE statement.
func (c *Client) CreateStream(ctx context.Context, k Kind, sql string) (string, error) {
	return c.Text(ctx, http.MethodPost, k.path(), map[string]string{"sql": sql})
}

// ReplaceStream replaces a stream or table definition.
func (c *Client) ReplaceStream(ctx context.Context, k Kind, name, sql string) (string, error) {
	return c.Text(ctx, http.MethodPut, k.path()+"/"+url.PathEscape(name), map[string]string{"sql": sql})
}

// ListStreams lists stream or table names.
func (c *Client) ListStreams(ctx context.Context, k Kind) ([]string, error) {
	var names []string
	err := c.JSON(ctx, http.MethodGet, k.path(), nil, &names)
	return names, err
}

// DescribeStream returns a stream or table's description as JSON.
func (c *Client) DescribeStream(ctx context.Context, k Kind, name string) (json.RawMessage, error) {
	var raw json.RawMessage
	err := c.JSON(ctx, http.MethodGet, k.path()+"/"+url.PathEscape(name), nil, &raw)
	return raw, err
}

// DropStream drops a stream or table; force drops it even when rules read it.
func (c *Client) DropStream(ctx context.Context, k Kind, name string, force bool) (string, error) {
	p := k.path() + "/" + url.PathEscape(name)
	if force {
		p += "?force=true"
	}
	return c.Text(ctx, http.MethodDelete, p, nil)
}

// RuleBrief is one entry of the rule list.
type RuleBrief struct {
	ID      string   `json:"id"`
	Name    string   `json:"name"`
	Status  string   `json:"status"`
	Version string   `json:"version"`
	Tags    []string `json:"tags"`
}

// CreateRule creates a rule from its JSON.
func (c *Client) CreateRule(ctx context.Context, ruleJSON []byte) (string, error) {
	return c.Text(ctx, http.MethodPost, "/rules", ruleJSON)
}

// UpdateRule creates or replaces a rule.
func (c *Client) UpdateRule(ctx context.Context, id string, ruleJSON []byte) (string, error) {
	return c.Text(ctx, http.MethodPut, "/rules/"+url.PathEscape(id), ruleJSON)
}

// ListRules lists rules with their status.
func (c *Client) ListRules(ctx context.Context) ([]RuleBrief, error) {
	var out []RuleBrief
	err := c.JSON(ctx, http.MethodGet, "/rules", nil, &out)
	return out, err
}

// GetRule returns a rule's JSON (secrets masked, triggered = wanted state).
func (c *Client) GetRule(ctx context.Context, id string) (json.RawMessage, error) {
	var raw json.RawMessage
	err := c.JSON(ctx, http.MethodGet, "/rules/"+url.PathEscape(id), nil, &raw)
	return raw, err
}

// DeleteRule stops and deletes a rule.
func (c *Client) DeleteRule(ctx context.Context, id string) (string, error) {
	return c.Text(ctx, http.MethodDelete, "/rules/"+url.PathEscape(id), nil)
}

// RuleAction starts, stops or restarts a rule (action "start", "stop",
// "restart").
func (c *Client) RuleAction(ctx context.Context, id, action string) (string, error) {
	return c.Text(ctx, http.MethodPost, "/rules/"+url.PathEscape(id)+"/"+action, nil)
}

// RuleStatus returns the status document of a rule as text (indented JSON).
func (c *Client) RuleStatus(ctx context.Context, id string) (string, error) {
	return c.Text(ctx, http.MethodGet, "/rules/"+url.PathEscape(id)+"/status", nil)
}

// RuleTopo returns the topology of a running rule.
func (c *Client) RuleTopo(ctx context.Context, id string) (json.RawMessage, error) {
	var raw json.RawMessage
	err := c.JSON(ctx, http.MethodGet, "/rules/"+url.PathEscape(id)+"/topo", nil, &raw)
	return raw, err
}

// ValidateRule validates a rule without creating it.
func (c *Client) ValidateRule(ctx context.Context, ruleJSON []byte) (string, error) {
	return c.Text(ctx, http.MethodPost, "/rules/validate", ruleJSON)
}

// ExportRuleset returns the ruleset export document.
func (c *Client) ExportRuleset(ctx context.Context) ([]byte, error) {
	_, b, err := c.Do(ctx, http.MethodPost, "/ruleset/export", nil)
	return b, err
}

// ImportRuleset imports a ruleset document.
func (c *Client) ImportRuleset(ctx context.Context, content []byte) (string, error) {
	return c.Text(ctx, http.MethodPost, "/ruleset/import", map[string]string{"content": string(content)})
}

// ExportData returns the full data export, or the export of the given rules
// and their dependencies when ruleIDs is not nil.
func (c *Client) ExportData(ctx context.Context, ruleIDs []string) ([]byte, error) {
	if ruleIDs == nil {
		_, b, err := c.Do(ctx, http.MethodGet, "/data/export", nil)
		return b, err
	}
	_, b, err := c.Do(ctx, http.MethodPost, "/data/export", ruleIDs)
	return b, err
}

// ImportData imports a data export; partial keeps what is not in it.
func (c *Client) ImportData(ctx context.Context, content []byte, partial bool) ([]byte, error) {
	p := "/data/import"
	if partial {
		p += "?partial=1"
	}
	_, b, err := c.Do(ctx, http.MethodPost, p, map[string]string{"content": string(content)})
	return b, err
}

// Events reads the server-sent events of a GET on path (e.g.
// "/memory/events?topic=t") until ctx ends or the daemon closes the
// stream, and calls fn with each event's name ("" for plain data) and
// data. The client's timeout does not apply: the stream may last.
func (c *Client) Events(ctx context.Context, path string, fn func(event, data string)) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Accept", "text/event-stream")
	if c.token != "" {
		req.Header.Set("Authorization", c.token)
	}
	hc := &http.Client{Transport: c.http.Transport, CheckRedirect: c.http.CheckRedirect}
	resp, err := hc.Do(req)
	if err != nil {
		return c.unreachable(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return apiError(resp.StatusCode, data)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var event string
	var data []string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if len(data) > 0 {
				fn(event, strings.Join(data, "\n"))
			}
			event, data = "", nil
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "event:"):
			event = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	return sc.Err()
}
