package websocket

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	ws "github.com/coder/websocket"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/connector/connection"
)

// SinkSpec is the websocket sink's property spec.
func SinkSpec() connector.Spec {
	return connector.Spec{Props: append(commonProps(),
		connector.Prop{Name: "path", Type: connector.TypeString, Required: true, Doc: "path, e.g. /api/ws"},
	)}
}

// Sink sends each payload as one text message.
//
// Client mode: a failed write closes the connection and is retryable; the
// next Write dials again (a failed dial is retryable too), so the sink
// cache keeps messages while the server is away. WebSocket has no
// acknowledgement: a message written just before the server vanishes may
// be lost although Write succeeded. Server mode: each payload
// goes to every client connected at that moment; a client whose write
// fails is dropped. With no client connected the message is dropped, as in
// eKuiper. The sink reads nothing: coder/websocket's CloseRead goroutine
// answers control frames and ends with the connection.
type Sink struct {
	ep  endpoint
	mux connector.HTTPMux
	// link is the connection status: in client mode the state of the
	// connection to the server, in server mode whether the endpoint is
	// served.
	link *connection.Link

	mu      sync.Mutex
	conn    *ws.Conn        // client mode
	gone    context.Context // done once conn is closed (by either side)
	clients map[*ws.Conn]context.CancelFunc
	serving bool
	closed  bool
}

var _ api.Sink = (*Sink)(nil)

// NewSink builds a websocket sink from validated props.
func NewSink(props map[string]any, deps connector.Deps) (api.Sink, error) {
	ep, err := parseEndpoint(props, connector.Get[string](props, "path"))
	ep.guard = deps.Guard
	if err != nil {
		return nil, err
	}
	if ep.url == "" && deps.HTTP == nil {
		return nil, errors.New("server mode (empty addr) needs the daemon's HTTP server")
	}
	return &Sink{ep: ep, mux: deps.HTTP, link: connection.NewLink(deps.Clock)}, nil
}

// Connect dials (client mode) or registers the endpoint (server mode).
func (s *Sink) Connect(ctx context.Context) error {
	s.Close(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = false
	s.clients = map[*ws.Conn]context.CancelFunc{}
	if s.ep.url == "" {
		if err := s.mux.Handle(s.ep.path, http.HandlerFunc(s.accept)); err != nil {
			return s.link.Connect(fmt.Errorf("serve websocket sink: %w", err))
		}
		s.serving = true
		s.link.Connected()
		return nil
	}
	c, err := s.ep.dial(ctx)
	if err != nil {
		return s.link.Connect(api.Retryable(err))
	}
	s.link.Connected()
	s.conn, s.gone = c, c.CloseRead(context.Background())
	return nil
}

// Status reports the connection status (stream.ConnStatus).
func (s *Sink) Status() (state string, lastConnected, lastDisconnected time.Time, lastErr string) {
	return s.link.Status()
}

// accept keeps a client until it disconnects or the sink closes.
func (s *Sink) accept(w http.ResponseWriter, r *http.Request) {
	c, err := ws.Accept(w, r, &ws.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	s.mu.Lock()
	if !s.serving {
		s.mu.Unlock()
		cancel()
		c.CloseNow()
		return
	}
	s.clients[c] = cancel
	s.mu.Unlock()
	<-c.CloseRead(ctx).Done()
	s.mu.Lock()
	delete(s.clients, c)
	s.mu.Unlock()
	cancel()
	c.CloseNow()
}

// Write sends msg.Payload.
func (s *Sink) Write(ctx context.Context, msg *api.SinkMessage) error {
	ctx, cancel := context.WithTimeout(ctx, s.ep.timeout)
	defer cancel()
	if s.ep.url == "" {
		return s.broadcast(ctx, msg.Payload)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return api.Retryable(errors.New("websocket sink closed"))
	}
	if s.conn != nil && s.gone.Err() != nil {
		// The server closed the connection: writing would seem to succeed
		// until the kernel notices.
		s.conn.CloseNow()
		s.conn = nil
	}
	if s.conn == nil {
		c, err := s.ep.dial(ctx)
		if err != nil {
			return s.link.Connect(api.Retryable(err))
		}
		s.conn, s.gone = c, c.CloseRead(context.Background())
	}
	if err := s.conn.Write(ctx, ws.MessageText, msg.Payload); err != nil {
		s.conn.CloseNow()
		s.conn = nil
		return s.link.Connect(api.Retryable(fmt.Errorf("write websocket %s: %w", s.ep.url, err)))
	}
	s.link.Connected()
	return nil
}

func (s *Sink) broadcast(ctx context.Context, payload []byte) error {
	s.mu.Lock()
	clients := make([]*ws.Conn, 0, len(s.clients))
	for c := range s.clients {
		clients = append(clients, c)
	}
	s.mu.Unlock()
	for _, c := range clients {
		if err := c.Write(ctx, ws.MessageText, payload); err != nil {
			s.mu.Lock()
			if cancel, ok := s.clients[c]; ok {
				cancel()
				delete(s.clients, c)
			}
			s.mu.Unlock()
		}
	}
	return nil
}

// Close unregisters the endpoint and closes every connection.
func (s *Sink) Close(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.serving {
		s.mux.Unhandle(s.ep.path)
		s.serving = false
	}
	for c, cancel := range s.clients {
		cancel()
		c.CloseNow()
	}
	clear(s.clients)
	if s.conn != nil {
		s.conn.CloseNow()
		s.conn = nil
	}
	return nil
}
