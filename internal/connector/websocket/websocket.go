// Package websocket provides the websocket source and sink on
// github.com/coder/websocket. Each works in one of two modes:
//
//   - client (addr set): it dials scheme://addr/path and reads or writes
//     text messages on that one connection;
//   - server (addr empty): it serves path on the daemon's shared HTTP
//     server (Deps.HTTP); the source reads from every connected client, the
//     sink broadcasts to every connected client.
package websocket

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	ws "github.com/coder/websocket"

	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/guard"
	"github.com/rekuiper/rekuiper/internal/value"
)

// Type is the connector type name.
const Type = "websocket"

// readLimit bounds one received message.
const readLimit = 16 << 20

// Register adds the websocket source and sink to r.
func Register(r *connector.Registry) error {
	if err := r.RegisterSource(Type, SourceSpec(), NewSource); err != nil {
		return err
	}
	return r.RegisterSink(Type, SinkSpec(), NewSink)
}

func commonProps() []connector.Prop {
	return []connector.Prop{
		{Name: "addr", Type: connector.TypeString, Doc: "host:port of a remote server (client mode); empty serves path on the daemon's HTTP server"},
		{Name: "scheme", Type: connector.TypeString, Default: "ws", Enum: []any{"ws", "wss"}, Doc: "client mode"},
		{Name: "insecureSkipVerify", Type: connector.TypeBool, Default: false, Doc: "client mode with wss: do not verify the server certificate"},
		{Name: "requestHeader", Type: connector.TypeMap, Doc: "client mode: headers of the opening handshake"},
		{Name: "timeout", Type: connector.TypeDuration, Default: "5s", Doc: "dial and write timeout"},
	}
}

// endpoint is the validated mode and address of a source or sink.
type endpoint struct {
	url     string // client mode; empty in server mode
	path    string
	header  http.Header
	insec   bool
	timeout time.Duration
	guard   *guard.Guard // client mode: the network guard
}

func parseEndpoint(props map[string]any, path string) (endpoint, error) {
	e := endpoint{
		path:    path,
		insec:   connector.Get[bool](props, "insecureSkipVerify"),
		timeout: connector.Get[time.Duration](props, "timeout"),
		header:  http.Header{},
	}
	if e.path == "" {
		return e, errors.New("property \"path\" (or the stream's DATASOURCE) is required")
	}
	if !strings.HasPrefix(e.path, "/") {
		e.path = "/" + e.path
	}
	for k, v := range connector.Get[map[string]any](props, "requestHeader") {
		e.header.Set(k, value.ToString(v))
	}
	addr := connector.Get[string](props, "addr")
	if addr == "" {
		return e, nil
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return e, fmt.Errorf("property \"addr\": %q is not host:port", addr)
	}
	u := url.URL{Scheme: connector.Get[string](props, "scheme"), Host: addr, Path: e.path}
	e.url = u.String()
	return e, nil
}

// dial opens a client connection.
func (e endpoint) dial(ctx context.Context) (*ws.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	tr := e.guard.Transport()
	if e.insec {
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // user's choice
	}
	defer tr.CloseIdleConnections()
	opts := &ws.DialOptions{HTTPHeader: e.header, HTTPClient: &http.Client{Transport: tr}}
	c, resp, err := ws.Dial(ctx, e.url, opts)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", e.url, err)
	}
	c.SetReadLimit(readLimit)
	return c, nil
}
