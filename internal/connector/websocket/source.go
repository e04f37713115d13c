package websocket

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"

	ws "github.com/coder/websocket"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/panics"
)

// SourceSpec is the websocket source's property spec. The stream's
// DATASOURCE is the path.
func SourceSpec() connector.Spec {
	return connector.Spec{Props: append(commonProps(),
		connector.Prop{Name: "datasource", Type: connector.TypeString, Required: true, Doc: "path, e.g. /api/ws"},
		connector.Prop{Name: "bufferLength", Type: connector.TypeInt, Default: 1024, Max: connector.MaxBufferLength, Doc: "messages queued before the connections wait"},
	)}
}

// Source reads messages as Payload, with meta "remoteAddr" in server mode.
// One goroutine per connection (the dialled one, or each accepted client)
// reads into a queue; it is owned by the source and stops in Close. In
// client mode a lost connection makes Read fail, and the engine's
// reconnect dials again. In server mode Read never fails for a client's
// sake; a client that disconnects just stops sending.
type Source struct {
	ep     endpoint
	mux    connector.HTTPMux
	buf    int
	logger *slog.Logger

	mu      sync.Mutex
	queue   chan *api.Message
	lost    chan error    // client mode: the connection's reader ended
	done    chan struct{} // closed by Close
	conns   map[*ws.Conn]struct{}
	wg      sync.WaitGroup
	serving bool

	// read reads one message; nil is (*ws.Conn).Read. Tests replace it to
	// inject failures into the read loop.
	read func(*ws.Conn, context.Context) (ws.MessageType, []byte, error)
}

var _ api.Source = (*Source)(nil)

// NewSource builds a websocket source from validated props.
func NewSource(props map[string]any, deps connector.Deps) (api.Source, error) {
	ep, err := parseEndpoint(props, connector.Get[string](props, "datasource"))
	ep.guard = deps.Guard
	if err != nil {
		return nil, err
	}
	s := &Source{ep: ep, mux: deps.HTTP, buf: int(connector.Get[int64](props, "bufferLength")), logger: deps.Logger}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	if s.buf < 1 {
		return nil, fmt.Errorf("property \"bufferLength\": %d is less than 1", s.buf)
	}
	if ep.url == "" && s.mux == nil {
		return nil, errors.New("server mode (empty addr) needs the daemon's HTTP server")
	}
	return s, nil
}

// Connect dials (client mode) or registers the endpoint (server mode).
func (s *Source) Connect(ctx context.Context) error {
	s.Close(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = make(chan *api.Message, s.buf)
	s.lost = make(chan error, 1)
	s.done = make(chan struct{})
	s.conns = map[*ws.Conn]struct{}{}
	if s.ep.url == "" {
		if err := s.mux.Handle(s.ep.path, http.HandlerFunc(s.accept)); err != nil {
			return fmt.Errorf("serve websocket source: %w", err)
		}
		s.serving = true
		return nil
	}
	c, err := s.ep.dial(ctx)
	if err != nil {
		return err
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	go s.readLoop(c, "", s.queue, s.lost, s.done)
	return nil
}

func (s *Source) accept(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	queue, done, serving := s.queue, s.done, s.serving
	s.mu.Unlock()
	if !serving {
		http.Error(w, "source closed", http.StatusServiceUnavailable)
		return
	}
	c, err := ws.Accept(w, r, &ws.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return // Accept answered the client
	}
	c.SetReadLimit(readLimit)
	s.mu.Lock()
	if !s.serving {
		s.mu.Unlock()
		c.CloseNow()
		return
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	s.readLoop(c, r.RemoteAddr, queue, nil, done)
}

// readLoop queues the messages of c until it fails or done closes.
func (s *Source) readLoop(c *ws.Conn, remote string, queue chan<- *api.Message, lost chan<- error, done <-chan struct{}) {
	defer s.wg.Done()
	// A panic here loses this connection (reported like a read error in
	// client mode), not the process.
	defer panics.Catch("websocket read", func(e *panics.Error) {
		s.logger.Error("websocket read panicked", "remote", remote, "err", e.Error(), "stack", string(e.Stack))
		if lost != nil {
			select {
			case lost <- e:
			default:
			}
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-done:
			cancel()
		case <-ctx.Done():
		}
	}()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.CloseNow()
	}()
	read := s.read
	if read == nil {
		read = (*ws.Conn).Read
	}
	for {
		_, b, err := read(c, ctx)
		if err != nil {
			if lost != nil {
				lost <- fmt.Errorf("read websocket %s: %w", s.ep.url, err)
			}
			return
		}
		m := &api.Message{Payload: b}
		if remote != "" {
			m.Meta = map[string]any{"remoteAddr": remote}
		}
		select {
		case queue <- m:
		case <-done:
			return
		}
	}
}

// Read returns the next queued message. In client mode it fails once the
// connection is lost and the queue is drained.
func (s *Source) Read(ctx context.Context) (*api.Message, error) {
	s.mu.Lock()
	queue, lost := s.queue, s.lost
	s.mu.Unlock()
	if queue == nil {
		return nil, errors.New("websocket source not connected")
	}
	select {
	case m := <-queue:
		return m, nil
	default:
	}
	select {
	case m := <-queue:
		return m, nil
	case err := <-lost:
		lost <- err // keep failing until reconnected
		select {
		case m := <-queue:
			return m, nil
		default:
			return nil, err
		}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close unregisters the endpoint, closes every connection and waits for
// their readers.
func (s *Source) Close(context.Context) error {
	s.mu.Lock()
	if s.serving {
		s.mux.Unhandle(s.ep.path)
		s.serving = false
	}
	if s.done != nil {
		close(s.done)
		s.done = nil
	}
	for c := range s.conns {
		c.CloseNow()
	}
	s.queue = nil
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}
