package redis

import (
	"context"
	"maps"
	"testing"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/connector/conformancetest"
	"github.com/rekuiper/rekuiper/internal/connector/connection"
	"github.com/rekuiper/rekuiper/internal/connector/connectortest"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

type conn interface {
	Connect(context.Context) error
	Close(context.Context) error
}

func newWith(t *testing.T, reg *connection.Registry, kind connector.Kind, name string, props map[string]any) conn {
	t.Helper()
	r := connectortest.Registry(t, Register)
	deps := connector.Deps{Connections: reg}
	var (
		c   any
		err error
	)
	switch kind {
	case connector.KindSink:
		c, err = r.NewSink(name, props, deps)
	case connector.KindLookup:
		c, err = r.NewLookup(name, props, deps)
	default:
		c, err = r.NewSource(name, props, deps)
	}
	if err != nil {
		t.Fatal(err)
	}
	return c.(conn)
}

func TestConnectorsShareOneClient(t *testing.T) {
	s := startRedis(t)
	reg := connection.NewRegistry(nil)
	ctx := context.Background()
	key, err := ConnectionKey(map[string]any{"ADDR": s.Addr(), "channel": "ignored"})
	if err != nil {
		t.Fatal(err)
	}
	sink := newWith(t, reg, connector.KindSink, Type, map[string]any{"addr": s.Addr(), "key": "k"})
	pub := newWith(t, reg, connector.KindSink, PubType, map[string]any{"address": s.Addr(), "channel": "c"})
	sub := newWith(t, reg, connector.KindSource, SubType, map[string]any{"addr": s.Addr(), "channels": []any{"c"}})
	lk := newWith(t, reg, connector.KindLookup, Type, map[string]any{"addr": s.Addr()})
	other := newWith(t, reg, connector.KindLookup, Type, map[string]any{"addr": s.Addr(), "datasource": "3"})
	for _, c := range []conn{sink, pub, sub, lk, other} {
		if err := c.Connect(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if st := reg.StatusOf(key); st.Users != 4 || st.Clients != 1 || st.State != connection.StateConnected || st.LastConnected.IsZero() {
		t.Fatalf("status %+v", st)
	}
	db3, _ := ConnectionKey(map[string]any{"addr": s.Addr(), "db": 3})
	if st := reg.StatusOf(db3); st.Users != 1 || st.Clients != 1 {
		t.Fatalf("database 3 is another connection: %+v", st)
	}

	if err := sink.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := pub.(api.Sink).Write(ctx, conformancetest.Message(1)); err != nil {
		t.Fatalf("closing one user closed the shared client: %v", err)
	}
	if st := reg.StatusOf(key); st.Users != 3 || st.Clients != 1 {
		t.Fatalf("after one close: %+v", st)
	}
	for _, c := range []conn{pub, sub, lk, other} {
		if err := c.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if st := reg.StatusOf(key); st.Users != 0 || st.Clients != 0 || st.State != connection.StateDisconnected {
		t.Fatalf("after the last close: %+v", st)
	}
}

func TestStatusFollowsTheServer(t *testing.T) {
	s := startRedis(t)
	reg := connection.NewRegistry(nil)
	ctx := context.Background()
	key, _ := ConnectionKey(map[string]any{"addr": s.Addr(), "timeout": "500ms"})
	sink := newWith(t, reg, connector.KindSink, Type, map[string]any{"addr": s.Addr(), "key": "k", "timeout": "500ms"})
	defer sink.Close(ctx)
	if err := sink.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	conformancetest.CheckStatus(t, sink, connection.StateConnected, "")
	s.Stop()
	if err := sink.(api.Sink).Write(ctx, conformancetest.Message(1)); !isRetryable(err) {
		t.Fatalf("write with the server down: %v", err)
	}
	conformancetest.CheckStatus(t, sink, connection.StateDisconnected, "write to redis")
	st := reg.StatusOf(key)
	if st.State != connection.StateDisconnected || st.LastError == "" || st.Users != 1 {
		t.Fatalf("server down: %+v", st)
	}
	s.Restart(t)
	// go-redis may hold back dials for a moment after failed ones.
	var err error
	if !testwait.Poll(testwait.Limit, func() bool {
		err = sink.(api.Sink).Write(ctx, conformancetest.Message(2))
		return err == nil
	}) {
		t.Fatalf("write after the restart: %v", err)
	}
	if st := reg.StatusOf(key); st.State != connection.StateConnected || st.LastError != "" {
		t.Fatalf("server back: %+v", st)
	}
	conformancetest.CheckStatus(t, sink, connection.StateConnected, "")
}

// TestSinkStatusClosedPort checks that the redis and redisPub sinks report
// the connect error of a server that refuses connections.
func TestSinkStatusClosedPort(t *testing.T) {
	addr := conformancetest.ClosedPort(t)
	for typ, target := range map[string]map[string]any{Type: {"key": "k"}, PubType: {"channel": "c"}} {
		t.Run(typ, func(t *testing.T) {
			props := map[string]any{"addr": addr, "timeout": "500ms"}
			maps.Copy(props, target)
			sink := newWith(t, connection.NewRegistry(nil), connector.KindSink, typ, props)
			defer sink.Close(context.Background())
			conformancetest.CheckStatus(t, sink, connection.StateConnecting, "")
			if err := sink.Connect(context.Background()); err == nil {
				t.Fatal("connect to a closed port succeeded")
			}
			conformancetest.CheckStatus(t, sink, connection.StateDisconnected, "connection refused")
		})
	}
}

func TestConnectionKeyRejectsBadProps(t *testing.T) {
	for _, props := range []map[string]any{{}, {"addr": "nohost"}, {"addr": "h:1", "db": "x"}} {
		if _, err := ConnectionKey(props); err == nil {
			t.Fatalf("%v accepted", props)
		}
	}
}
