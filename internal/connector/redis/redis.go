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
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/connector"
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
	return r.RegisterSource(SubType, SubSpec(), NewSub)
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
		{Name: "timeout", Type: connector.TypeDuration, Default: "5s", Doc: "dial, read and write timeout"},
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

// connect creates a client and pings the server.
func connect(ctx context.Context, opts *goredis.Options) (*goredis.Client, error) {
	cl := goredis.NewClient(opts)
	if err := cl.Ping(ctx).Err(); err != nil {
		cl.Close()
		return nil, classify(fmt.Errorf("connect to redis %s: %w", opts.Addr, err))
	}
	return cl, nil
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
