// Package redis provides the redis sink and lookup source, the redisPub
// sink and the redisSub source on go-redis.
package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/connector/connection"
	"github.com/rekuiper/rekuiper/internal/value"
)

// Connector type names.
const (
	Type    = "redis"
	PubType = "redisPub"
	SubType = "redisSub"
)

// Register adds the redis sink and lookup source, the redisPub sink and the
// redisSub source to r.
func Register(r *connector.Registry) error {
	if err := r.RegisterSink(Type, SinkSpec(), NewSink); err != nil {
		return err
	}
	if err := r.RegisterLookup(Type, LookupSpec(), NewLookup); err != nil {
		return err
	}
	if err := r.RegisterSink(PubType, PubSpec(), NewPub); err != nil {
		return err
	}
	if err := r.RegisterSource(SubType, SubSpec(), NewSub); err != nil {
		return err
	}
	for _, typ := range []string{Type, PubType, SubType} {
		if err := r.RegisterConnectionKey(typ, ConnectionKey); err != nil {
			return err
		}
	}
	return nil
}

// connProps are the connection properties. eKuiper calls the address addr
// for redis and address for redisPub/redisSub; both names work everywhere.
func connProps() []connector.Prop {
	return []connector.Prop{
		{Name: "addr", Type: connector.TypeString, Doc: "host:port of the server"},
		{Name: "address", Type: connector.TypeString, Doc: "alias of addr"},
		{Name: "username", Type: connector.TypeString},
		{Name: "password", Type: connector.TypeString, Secret: true},
		{Name: "db", Type: connector.TypeInt, Default: 0, Doc: "database index"},
		{Name: "timeout", Type: connector.TypeDuration, Default: 5 * time.Second, Doc: "dial, read and write timeout"},
	}
}

// clientOptions builds go-redis options from validated properties.
func clientOptions(props map[string]any) (*goredis.Options, error) {
	addr := connector.Get[string](props, "addr")
	if addr == "" {
		addr = connector.Get[string](props, "address")
	}
	if addr == "" {
		return nil, errors.New("property \"addr\" is required")
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, fmt.Errorf("property \"addr\": %q is not host:port", addr)
	}
	db := connector.Get[int64](props, "db")
	if db < 0 || db > 1<<16 {
		return nil, fmt.Errorf("property \"db\": %d is out of range", db)
	}
	to := connector.Get[time.Duration](props, "timeout")
	return &goredis.Options{
		Addr:         addr,
		Username:     connector.Get[string](props, "username"),
		Password:     connector.Get[string](props, "password"),
		DB:           int(db),
		DialTimeout:  to,
		ReadTimeout:  to,
		WriteTimeout: to,
		MaxRetries:   -1, // the sink cache retries; a Write must not hang
	}, nil
}

// ConnectionKey is the connection.KeyFunc of named redis connections: the
// key of the client that connectors with these connection properties
// share.
func ConnectionKey(props map[string]any) (string, error) {
	var names []string
	for _, p := range connProps() {
		names = append(names, p.Name)
	}
	v, err := connector.Spec{Props: connProps()}.Validate(connection.Pick(props, names...))
	if err != nil {
		return "", err
	}
	opts, err := clientOptions(v)
	if err != nil {
		return "", err
	}
	return optionsKey(opts), nil
}

func optionsKey(o *goredis.Options) string {
	return connection.Digest("redis", o.Addr, o.Username, o.Password, strconv.Itoa(o.DB), o.DialTimeout.String())
}

// client is one connector's hold on the client that every redis connector
// with the same options shares (through Deps.Connections; without it the
// client is the connector's own). Its owner serialises the calls.
type client struct {
	reg  *connection.Registry
	opts *goredis.Options
	use  *connection.Use
	// link, set for sinks, is this connector's connection status.
	link *connection.Link
}

// connect drops the previous hold, takes the shared client and pings the
// server. After a failed ping the hold is kept (the connector still counts
// as a user of the connection) until the next connect or release.
func (c *client) connect(ctx context.Context) (*goredis.Client, *connection.Tracker, error) {
	c.release()
	c.use = c.reg.Join(optionsKey(c.opts))
	cl, tr, err := connection.Shared(c.use, func(tr *connection.Tracker) (*goredis.Client, error) {
		cl := goredis.NewClient(c.opts)
		cl.AddHook(dialHook{tr})
		return cl, nil
	}, (*goredis.Client).Close)
	if err != nil {
		c.link.Failed(err)
		return nil, nil, err
	}
	if err := cl.Ping(ctx).Err(); err != nil {
		err = classify(fmt.Errorf("connect to redis %s: %w", c.opts.Addr, err))
		tr.Failed(err)
		c.link.Failed(err)
		return nil, nil, err
	}
	tr.Connected()
	c.link.Connected()
	return cl, tr, nil
}

// report records the outcome of a write on the shared client's tracker
// and on the connector's link, and returns err.
func (c *client) report(tr *connection.Tracker, err error) error {
	c.link.Report(err)
	return tr.Report(err)
}

// status is the connector's connection status (stream.ConnStatus).
func (c *client) status() (string, time.Time, time.Time, string) {
	return c.link.Status()
}

// release drops the hold; the last holder closes the client.
func (c *client) release() error {
	err := c.use.Leave()
	c.use = nil
	return err
}

// dialHook reports every new connection of a client, so that reconnects
// done by go-redis itself (pool refills, pub/sub resubscription) show in
// the status.
type dialHook struct{ tr *connection.Tracker }

func (h dialHook) DialHook(next goredis.DialHook) goredis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := next(ctx, network, addr)
		switch {
		case err == nil:
			h.tr.Connected()
		case ctx.Err() == nil:
			h.tr.Failed(fmt.Errorf("dial redis %s: %w", addr, err))
		}
		return c, err
	}
}

func (dialHook) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook { return next }

func (dialHook) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return next
}

// classify wraps transient failures with api.Retryable: network errors,
// timeouts, a closed connection and the server replies LOADING, BUSY,
// TRYAGAIN, MASTERDOWN, READONLY and CLUSTERDOWN. Other server replies
// (wrong type, auth, syntax) are permanent.
func classify(err error) error {
	if err == nil || errors.Is(err, api.ErrRetryable) {
		return err
	}
	var re goredis.Error
	if errors.As(err, &re) {
		for _, p := range []string{"LOADING", "BUSY", "TRYAGAIN", "MASTERDOWN", "READONLY", "CLUSTERDOWN"} {
			if goredis.HasErrorPrefix(re, p) {
				return api.Retryable(err)
			}
		}
		return err
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		errors.Is(err, goredis.ErrClosed) || errors.Is(err, net.ErrClosed) {
		return api.Retryable(err)
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return api.Retryable(err)
	}
	return err
}

func logger(deps connector.Deps) *slog.Logger {
	if deps.Logger != nil {
		return deps.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// rowJSON encodes one row.
func rowJSON(row map[string]any) ([]byte, error) {
	b, err := json.Marshal(row)
	if err != nil {
		return nil, fmt.Errorf("encode row: %w", err)
	}
	return b, nil
}

// decodeRow decodes a stored JSON object into a runtime row.
func decodeRow(s string) (map[string]any, error) {
	var m map[string]any
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		return nil, fmt.Errorf("decode %q: %w", s, err)
	}
	out, _ := value.Normalize(m).(map[string]any)
	return out, nil
}
