package redis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/connector/connection"
	"github.com/rekuiper/rekuiper/internal/value"
)

// SinkSpec is the redis sink's property spec.
func SinkSpec() connector.Spec {
	return connector.Spec{Props: append(connProps(),
		connector.Prop{Name: "key", Type: connector.TypeString, Doc: "static key"},
		connector.Prop{Name: "field", Type: connector.TypeString, Doc: "field of the row whose value is the key"},
		connector.Prop{Name: "keyField", Type: connector.TypeString, Doc: "alias of field"},
		connector.Prop{Name: "dataType", Type: connector.TypeString, Default: "string", Enum: []any{"string", "list"}},
		connector.Prop{Name: "expiration", Type: connector.TypeDuration, Default: 0, Doc: "key time to live; 0 keeps keys forever (numbers are milliseconds)"},
		connector.Prop{Name: "rowkindField", Type: connector.TypeString, Doc: "field holding insert, update or delete (default insert)"},
	), WritesRows: true, Ping: true}
}

// Sink stores each row as JSON under its key: dataType string SETs the key
// (delete DELs it), dataType list LPUSHes onto the list (delete RPOPs the
// oldest element), as eKuiper does. All rows of one message go in one
// MULTI/EXEC transaction. Network failures and timeouts are retryable.
// Sinks, sources and lookups with the same connection settings share one
// client (see client). Methods may be called from different goroutines.
type Sink struct {
	key       string
	field     string
	list      bool
	expire    time.Duration
	kindField string

	mu   sync.Mutex
	conn client
	cl   *goredis.Client
	tr   *connection.Tracker
}

var _ api.Sink = (*Sink)(nil)

// NewSink builds a redis sink from validated props.
func NewSink(props map[string]any, deps connector.Deps) (api.Sink, error) {
	opts, err := clientOptions(props)
	if err != nil {
		return nil, err
	}
	s := &Sink{
		conn:      client{reg: deps.Connections, opts: opts, link: connection.NewLink(deps.Clock)},
		key:       connector.Get[string](props, "key"),
		field:     connector.Get[string](props, "field"),
		list:      connector.Get[string](props, "dataType") == "list",
		expire:    connector.Get[time.Duration](props, "expiration"),
		kindField: connector.Get[string](props, "rowkindField"),
	}
	if s.field == "" {
		s.field = connector.Get[string](props, "keyField")
	}
	if (s.key == "") == (s.field == "") {
		return nil, errors.New("set exactly one of the properties \"key\" and \"field\"")
	}
	return s, nil
}

// Connect takes the shared client and pings the server.
func (s *Sink) Connect(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cl, s.tr = nil, nil
	cl, tr, err := s.conn.connect(ctx)
	if err != nil {
		return err
	}
	s.cl, s.tr = cl, tr
	return nil
}

// Write stores the rows of msg. A message without rows stores its payload
// (needs a static key).
func (s *Sink) Write(ctx context.Context, msg *api.SinkMessage) error {
	s.mu.Lock()
	cl, tr := s.cl, s.tr
	s.mu.Unlock()
	if cl == nil {
		return api.Retryable(errors.New("redis sink not connected"))
	}
	type op struct {
		key, kind string
		val       []byte
	}
	var ops []op
	if len(msg.Rows) == 0 {
		if s.key == "" {
			return errors.New("message without rows needs a static key")
		}
		ops = append(ops, op{key: s.key, kind: "insert", val: msg.Payload})
	}
	for _, r := range msg.Rows {
		o := op{key: s.key, kind: "insert"}
		if s.field != "" {
			k, ok := r[s.field]
			if !ok || k == nil {
				return fmt.Errorf("row has no key field %s", s.field)
			}
			o.key = value.ToString(k)
		}
		if s.kindField != "" {
			if k, ok := r[s.kindField]; ok && k != nil {
				o.kind = strings.ToLower(value.ToString(k))
			}
		}
		switch o.kind {
		case "insert", "update", "delete":
		default:
			return fmt.Errorf("unknown row kind %q (want insert, update or delete)", o.kind)
		}
		if len(msg.Rows) == 1 && len(msg.Payload) > 0 && s.kindField == "" {
			o.val = msg.Payload
		} else {
			b, err := rowJSON(r)
			if err != nil {
				return err
			}
			o.val = b
		}
		ops = append(ops, o)
	}
	_, err := cl.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		for _, o := range ops {
			switch {
			case o.kind == "delete" && s.list:
				p.RPop(ctx, o.key)
			case o.kind == "delete":
				p.Del(ctx, o.key)
			case s.list:
				p.LPush(ctx, o.key, o.val)
				if s.expire > 0 {
					p.Expire(ctx, o.key, s.expire)
				}
			default:
				p.Set(ctx, o.key, o.val, s.expire)
			}
		}
		return nil
	})
	if errors.Is(err, goredis.Nil) {
		err = nil // RPOP of an empty list
	}
	if err != nil {
		return s.conn.report(tr, classify(fmt.Errorf("write to redis: %w", err)))
	}
	return s.conn.report(tr, nil)
}

// Status reports the connection status (stream.ConnStatus).
func (s *Sink) Status() (state string, lastConnected, lastDisconnected time.Time, lastErr string) {
	return s.conn.status()
}

// Close releases the client (the last connector using it closes it).
func (s *Sink) Close(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cl, s.tr = nil, nil
	return s.conn.release()
}

// PubSpec is the redisPub sink's property spec.
func PubSpec() connector.Spec {
	return connector.Spec{Props: append(connProps(),
		connector.Prop{Name: "channel", Type: connector.TypeString, Required: true, Target: true},
	), Ping: true}
}

// Pub publishes each payload on a channel. Network failures and timeouts
// are retryable. It shares its client as Sink does.
type Pub struct {
	channel string

	mu   sync.Mutex
	conn client
	cl   *goredis.Client
	tr   *connection.Tracker
}

var _ api.Sink = (*Pub)(nil)

// NewPub builds a redisPub sink from validated props.
func NewPub(props map[string]any, deps connector.Deps) (api.Sink, error) {
	opts, err := clientOptions(props)
	if err != nil {
		return nil, err
	}
	ch := connector.Get[string](props, "channel")
	if ch == "" {
		return nil, errors.New("property \"channel\" is empty")
	}
	return &Pub{conn: client{reg: deps.Connections, opts: opts, link: connection.NewLink(deps.Clock)}, channel: ch}, nil
}

// Connect takes the shared client and pings the server.
func (p *Pub) Connect(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cl, p.tr = nil, nil
	cl, tr, err := p.conn.connect(ctx)
	if err != nil {
		return err
	}
	p.cl, p.tr = cl, tr
	return nil
}

// Write publishes msg.Payload.
func (p *Pub) Write(ctx context.Context, msg *api.SinkMessage) error {
	p.mu.Lock()
	cl, tr := p.cl, p.tr
	p.mu.Unlock()
	if cl == nil {
		return api.Retryable(errors.New("redisPub sink not connected"))
	}
	if err := cl.Publish(ctx, p.channel, msg.Payload).Err(); err != nil {
		return p.conn.report(tr, classify(fmt.Errorf("publish to redis channel %s: %w", p.channel, err)))
	}
	return p.conn.report(tr, nil)
}

// Status reports the connection status (stream.ConnStatus).
func (p *Pub) Status() (state string, lastConnected, lastDisconnected time.Time, lastErr string) {
	return p.conn.status()
}

// Close releases the client (the last connector using it closes it).
func (p *Pub) Close(context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cl, p.tr = nil, nil
	return p.conn.release()
}
