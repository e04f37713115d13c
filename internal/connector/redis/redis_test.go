package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/connector/conformancetest"
	"github.com/rekuiper/rekuiper/internal/connector/connectortest"
	"github.com/rekuiper/rekuiper/internal/connector/redis/redistest"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// server is the test's redis-server.
type server = redistest.Server

func startRedis(t *testing.T) *server { return redistest.Start(t) }

func freePort(t *testing.T) int { return redistest.FreePort(t) }

type publisher struct {
	*server
	channel string
}

func (p publisher) Produce(t *testing.T, payloads [][]byte) {
	t.Helper()
	cl := p.Client(t)
	for _, b := range payloads {
		if err := cl.Publish(context.Background(), p.channel, b).Err(); err != nil {
			t.Fatalf("publish: %v", err)
		}
	}
}

func invalid(base map[string]any, extra ...conformancetest.InvalidCase) []conformancetest.InvalidCase {
	with := func(k string, v any) map[string]any { return conformancetest.With(base, k, v) }
	return append([]conformancetest.InvalidCase{
		{Name: "no addr", Props: with("addr", nil), WantErr: `"addr" is required`},
		{Name: "bad addr", Props: with("addr", "localhost"), WantErr: "not host:port"},
		{Name: "bad db", Props: with("db", "x"), WantErr: `property "db"`},
		{Name: "unknown", Props: with("adress", "x"), WantErr: "unknown properties: adress"},
	}, extra...)
}

func TestSubConformance(t *testing.T) {
	s := startRedis(t)
	conformancetest.RunSourceSuite(t, conformancetest.SourceFactory{
		Spec: SubSpec(), New: NewSub,
		Props: func(*testing.T) map[string]any {
			return map[string]any{"addr": s.Addr(), "channels": []any{"conf"}}
		},
		UnreachableProps: map[string]any{"address": "127.0.0.1:" + strconv.Itoa(freePort(t)), "channels": []any{"x"}, "timeout": "500ms"},
		Invalid: invalid(map[string]any{"addr": "127.0.0.1:1", "channels": []any{"c"}},
			conformancetest.InvalidCase{Name: "no channels", Props: map[string]any{"addr": "127.0.0.1:1"}, WantErr: `"channels" or "patterns" is required`},
			conformancetest.InvalidCase{Name: "bad channel", Props: map[string]any{"addr": "127.0.0.1:1", "channels": []any{1}}, WantErr: "is not a name"}),
	}, publisher{s, "conf"})
}

// subscriber collects what is published on a channel.
type subscriber struct {
	*server
	channel string
	conformancetest.SeqRecorder
	ps   *goredis.PubSub
	cl   *goredis.Client
	done chan struct{}
}

func newSubscriber(t *testing.T, s *server, channel string) *subscriber {
	r := &subscriber{server: s, channel: channel}
	r.subscribe(t)
	t.Cleanup(r.close)
	return r
}

func (r *subscriber) subscribe(t *testing.T) {
	t.Helper()
	r.cl = goredis.NewClient(&goredis.Options{Addr: r.Addr()})
	r.ps = r.cl.Subscribe(context.Background(), r.channel)
	if _, err := r.ps.Receive(context.Background()); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	ch := r.ps.Channel()
	r.done = make(chan struct{})
	go func(done chan struct{}) {
		defer close(done)
		for m := range ch {
			seq, err := conformancetest.DecodeSeq(&api.Message{Payload: []byte(m.Payload)})
			if err != nil {
				continue
			}
			r.Add(seq)
		}
	}(r.done)
}

func (r *subscriber) close() {
	r.ps.Close()
	r.cl.Close()
	<-r.done
}

func (r *subscriber) Restart(t *testing.T) {
	r.close()
	r.server.Restart(t)
	r.subscribe(t)
}

func TestPubConformance(t *testing.T) {
	s := startRedis(t)
	r := newSubscriber(t, s, "out")
	conformancetest.RunSinkSuite(t, conformancetest.SinkFactory{
		Spec: PubSpec(), New: NewPub,
		Props: func(*testing.T) map[string]any {
			return map[string]any{"address": s.Addr(), "channel": "out"}
		},
		UnreachableProps: map[string]any{"addr": "127.0.0.1:" + strconv.Itoa(freePort(t)), "channel": "x", "timeout": "500ms"},
		Invalid: invalid(map[string]any{"addr": "127.0.0.1:1", "channel": "c"},
			conformancetest.InvalidCase{Name: "no channel", Props: map[string]any{"addr": "127.0.0.1:1"}, WantErr: `"channel" is required`}),
	}, r)
}

// listReader reads the list that the redis sink LPUSHes onto.
type listReader struct {
	*server
	key string
}

func (r listReader) Reset(t *testing.T) {
	if err := r.Client(t).Del(context.Background(), r.key).Err(); err != nil {
		t.Fatal(err)
	}
}

func (r listReader) Seqs(t *testing.T, want int, timeout time.Duration) []int64 {
	cl := r.Client(t)
	var out []int64
	testwait.Poll(timeout, func() bool {
		vs, _ := cl.LRange(context.Background(), r.key, 0, -1).Result()
		out = nil
		for i := len(vs) - 1; i >= 0; i-- {
			seq, err := conformancetest.DecodeSeq(&api.Message{Payload: []byte(vs[i])})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, seq)
		}
		return len(out) >= want
	})
	return out
}

func TestSinkConformance(t *testing.T) {
	s := startRedis(t)
	conformancetest.RunSinkSuite(t, conformancetest.SinkFactory{
		Spec: SinkSpec(), New: NewSink,
		Props: func(*testing.T) map[string]any {
			return map[string]any{"addr": s.Addr(), "key": "conf", "dataType": "list"}
		},
		UnreachableProps: map[string]any{"addr": "127.0.0.1:" + strconv.Itoa(freePort(t)), "key": "x", "timeout": "500ms"},
		Invalid: invalid(map[string]any{"addr": "127.0.0.1:1", "key": "k"},
			conformancetest.InvalidCase{Name: "key and field", Props: map[string]any{"addr": "127.0.0.1:1", "key": "k", "field": "f"}, WantErr: "exactly one"},
			conformancetest.InvalidCase{Name: "no key", Props: map[string]any{"addr": "127.0.0.1:1"}, WantErr: "exactly one"},
			conformancetest.InvalidCase{Name: "bad dataType", Props: map[string]any{"addr": "127.0.0.1:1", "key": "k", "dataType": "hash"}, WantErr: "not one of string, list"}),
	}, listReader{s, "conf"})
}

func build[T any](t *testing.T, kind connector.Kind, name string, props map[string]any) T {
	t.Helper()
	r := connectortest.Registry(t, Register)
	var (
		c   any
		err error
	)
	switch kind {
	case connector.KindSink:
		c, err = r.NewSink(name, props, connector.Deps{})
	case connector.KindLookup:
		c, err = r.NewLookup(name, props, connector.Deps{})
	default:
		c, err = r.NewSource(name, props, connector.Deps{})
	}
	if err != nil {
		t.Fatal(err)
	}
	conn := c.(interface {
		Connect(context.Context) error
		Close(context.Context) error
	})
	if err := conn.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return c.(T)
}

func TestSinkKeysKindsAndLookup(t *testing.T) {
	s := startRedis(t)
	ctx := context.Background()
	cl := s.Client(t)
	write := func(sk api.Sink, rows ...map[string]any) {
		t.Helper()
		if err := sk.Write(ctx, &api.SinkMessage{Rows: rows}); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("string by field with rowkind", func(t *testing.T) {
		sk := build[api.Sink](t, connector.KindSink, Type, map[string]any{"addr": s.Addr(), "field": "id", "rowkindField": "op", "expiration": "1h"})
		write(sk, map[string]any{"id": "d1", "v": int64(1)}, map[string]any{"id": "d2", "v": int64(2), "op": "insert"})
		write(sk, map[string]any{"id": "d1", "v": int64(10), "op": "update"})
		write(sk, map[string]any{"id": "d2", "op": "delete"})
		if got, _ := cl.Get(ctx, "d1").Result(); got != `{"id":"d1","op":"update","v":10}` {
			t.Fatalf("d1 = %s", got)
		}
		if n, _ := cl.Exists(ctx, "d2").Result(); n != 0 {
			t.Fatal("d2 not deleted")
		}
		if ttl, _ := cl.TTL(ctx, "d1").Result(); ttl <= 0 || ttl > time.Hour {
			t.Fatalf("ttl %v, want about 1h", ttl)
		}
		err := sk.Write(ctx, &api.SinkMessage{Rows: []map[string]any{{"id": "x", "op": "merge"}}})
		if err == nil {
			t.Fatal("unknown row kind accepted")
		}

		lk := build[connector.LookupSource](t, connector.KindLookup, Type, map[string]any{"addr": s.Addr()})
		rows, err := lk.Lookup(ctx, map[string]any{"id": "d1"})
		if err != nil || len(rows) != 1 || rows[0]["v"] != int64(10) {
			t.Fatalf("lookup d1: %v %v", rows, err)
		}
		if rows, err := lk.Lookup(ctx, map[string]any{"id": "nope"}); err != nil || len(rows) != 0 {
			t.Fatalf("lookup missing: %v %v", rows, err)
		}
	})
	t.Run("list with delete and lookup", func(t *testing.T) {
		sk := build[api.Sink](t, connector.KindSink, Type, map[string]any{"addr": s.Addr(), "field": "dev", "dataType": "list", "rowkindField": "op"})
		write(sk, map[string]any{"dev": "L", "n": int64(1)}, map[string]any{"dev": "L", "n": int64(2)}, map[string]any{"dev": "L", "n": int64(3)})
		write(sk, map[string]any{"dev": "L", "op": "delete"})
		lk := build[connector.LookupSource](t, connector.KindLookup, Type, map[string]any{"addr": s.Addr(), "dataType": "list"})
		rows, err := lk.Lookup(ctx, map[string]any{"dev": "L"})
		if err != nil {
			t.Fatal(err)
		}
		var ns []any
		for _, r := range rows {
			ns = append(ns, r["n"])
		}
		if fmt.Sprint(ns) != "[3 2]" {
			t.Fatalf("list after delete: %v", ns)
		}
	})
	t.Run("wrong type is permanent", func(t *testing.T) {
		sk := build[api.Sink](t, connector.KindSink, Type, map[string]any{"addr": s.Addr(), "key": "d1", "dataType": "list"})
		err := sk.Write(ctx, conformancetest.Message(1))
		if err == nil || isRetryable(err) {
			t.Fatalf("LPUSH onto a string: err %v, want a permanent error", err)
		}
	})
}

func isRetryable(err error) bool { return errors.Is(err, api.ErrRetryable) }

func TestSubPatterns(t *testing.T) {
	s := startRedis(t)
	src := build[api.Source](t, connector.KindSource, SubType, map[string]any{"addr": s.Addr(), "patterns": []any{"sensor.*"}, "channels": []any{"plain"}})
	p := s.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, ch := range []string{"other", "sensor.a", "plain"} {
		if err := p.Publish(ctx, ch, "m-"+ch).Err(); err != nil {
			t.Fatal(err)
		}
	}
	want := []struct{ payload, channel, pattern string }{{"m-sensor.a", "sensor.a", "sensor.*"}, {"m-plain", "plain", ""}}
	for _, w := range want {
		m, err := src.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if string(m.Payload) != w.payload || m.Meta["channel"] != w.channel || (w.pattern != "" && m.Meta["pattern"] != w.pattern) {
			t.Fatalf("got %s %v, want %+v", m.Payload, m.Meta, w)
		}
	}
}
