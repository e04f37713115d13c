package redis

import (
	"context"
	"errors"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/value"
)

// SubSpec is the redisSub source's property spec.
func SubSpec() connector.Spec {
	return connector.Spec{Props: append(connProps(),
		connector.Prop{Name: "channels", Type: connector.TypeList, Target: true, Doc: "channels to SUBSCRIBE to"},
		connector.Prop{Name: "patterns", Type: connector.TypeList, Doc: "patterns to PSUBSCRIBE to"},
		connector.Prop{Name: "bufferLength", Type: connector.TypeInt, Default: 1024, Max: connector.MaxBufferLength, Doc: "messages buffered before the subscription waits"},
	), Ping: true}
}

// Sub reads messages published on channels and patterns: Payload is the
// message, meta holds channel and pattern. Redis pub/sub keeps nothing for
// a disconnected subscriber: messages published while the connection is
// down are lost. go-redis owns the receiving goroutine; it reconnects and
// resubscribes by itself, and Close stops it. The subscription has its own
// server connection from the client shared as Sink does. Read is called
// from one goroutine.
type Sub struct {
	channels []string
	patterns []string
	buffer   int

	conn client
	ps   *goredis.PubSub
	ch   <-chan *goredis.Message
}

var _ api.Source = (*Sub)(nil)

// NewSub builds a redisSub source from validated props.
func NewSub(props map[string]any, deps connector.Deps) (api.Source, error) {
	opts, err := clientOptions(props)
	if err != nil {
		return nil, err
	}
	s := &Sub{conn: client{reg: deps.Connections, opts: opts}, buffer: int(connector.Get[int64](props, "bufferLength"))}
	if s.channels, err = names(props, "channels"); err != nil {
		return nil, err
	}
	if s.patterns, err = names(props, "patterns"); err != nil {
		return nil, err
	}
	if len(s.channels)+len(s.patterns) == 0 {
		return nil, errors.New("property \"channels\" or \"patterns\" is required")
	}
	if s.buffer < 1 {
		return nil, fmt.Errorf("property \"bufferLength\": %d is less than 1", s.buffer)
	}
	return s, nil
}

func names(props map[string]any, name string) ([]string, error) {
	var out []string
	for _, e := range connector.Get[[]any](props, name) {
		s, ok := e.(string)
		if !ok || s == "" {
			return nil, fmt.Errorf("property %q: %s is not a name", name, value.Describe(value.Normalize(e)))
		}
		out = append(out, s)
	}
	return out, nil
}

// Connect subscribes and waits until the server confirmed every
// subscription, so nothing published after Connect returns is missed.
func (s *Sub) Connect(ctx context.Context) error {
	s.closeSub()
	cl, tr, err := s.conn.connect(ctx)
	if err != nil {
		return err
	}
	ps := cl.Subscribe(ctx)
	fail := func(err error) error {
		ps.Close()
		return tr.Report(classify(fmt.Errorf("subscribe on redis %s: %w", s.conn.opts.Addr, err)))
	}
	if len(s.channels) > 0 {
		if err := ps.Subscribe(ctx, s.channels...); err != nil {
			return fail(err)
		}
	}
	if len(s.patterns) > 0 {
		if err := ps.PSubscribe(ctx, s.patterns...); err != nil {
			return fail(err)
		}
	}
	for range len(s.channels) + len(s.patterns) {
		m, err := ps.Receive(ctx)
		if err != nil {
			return fail(err)
		}
		if _, ok := m.(*goredis.Subscription); !ok {
			return fail(fmt.Errorf("unexpected %T before the subscription confirmation", m))
		}
	}
	s.ps = ps
	s.ch = ps.Channel(goredis.WithChannelSize(s.buffer), goredis.WithChannelHealthCheckInterval(5*time.Second))
	return nil
}

// Read returns the next message.
func (s *Sub) Read(ctx context.Context) (*api.Message, error) {
	if s.ch == nil {
		return nil, errors.New("redisSub source not connected")
	}
	select {
	case m, ok := <-s.ch:
		if !ok {
			return nil, errors.New("redis subscription closed")
		}
		meta := map[string]any{"channel": m.Channel}
		if m.Pattern != "" {
			meta["pattern"] = m.Pattern
		}
		return &api.Message{Payload: []byte(m.Payload), Meta: meta}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *Sub) closeSub() {
	if s.ps != nil {
		s.ps.Close()
	}
	s.ps, s.ch = nil, nil
}

// Close unsubscribes and releases the client (the last connector using it
// closes it).
func (s *Sub) Close(context.Context) error {
	s.closeSub()
	return s.conn.release()
}
