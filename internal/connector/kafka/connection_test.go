package kafka

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/connector/conformancetest"
	"github.com/rekuiper/rekuiper/internal/connector/connection"
	"github.com/rekuiper/rekuiper/internal/connector/connectortest"
)

func TestConnectionStatus(t *testing.T) {
	k := newCluster(t)
	topic := topicName(t)
	k.createTopic(t, topic, 2)
	reg := connection.NewRegistry(nil)
	deps := connector.Deps{Connections: reg}
	r := connectortest.Registry(t, Register)
	ctx := context.Background()
	key, err := ConnectionKey(map[string]any{"brokers": " " + k.addr() + " ", "topic": "ignored"})
	if err != nil {
		t.Fatal(err)
	}
	src, err := r.NewSource(Type, map[string]any{"brokers": k.addr(), "datasource": topic}, deps)
	if err != nil {
		t.Fatal(err)
	}
	sink, err := r.NewSink(Type, map[string]any{"brokers": k.addr(), "topic": topic}, deps)
	if err != nil {
		t.Fatal(err)
	}
	txn, err := r.NewSink(Type, map[string]any{"brokers": k.addr(), "topic": topic, "transactionalID": "t1"}, deps)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []interface{ Connect(context.Context) error }{src, sink, txn} {
		if err := c.Connect(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := sink.Write(ctx, conformancetest.Message(1)); err != nil {
		t.Fatal(err)
	}
	conformancetest.CheckStatus(t, sink, connection.StateConnected, "")
	conformancetest.CheckStatus(t, txn, connection.StateConnected, "")
	// Each keeps its own client (options differ, a transactional producer
	// must be alone), all under the cluster's key.
	if st := reg.StatusOf(key); st.Users != 3 || st.Clients != 3 || st.State != connection.StateConnected {
		t.Fatalf("status %+v", st)
	}
	if err := src.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := sink.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := txn.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if st := reg.StatusOf(key); st.Users != 0 || st.Clients != 0 || st.State != connection.StateDisconnected {
		t.Fatalf("after close: %+v", st)
	}
}

func TestConnectionStatusUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	reg := connection.NewRegistry(nil)
	r := connectortest.Registry(t, Register)
	ctx := context.Background()
	sink, err := r.NewSink(Type, map[string]any{"brokers": addr, "topic": "t", "connectTimeout": "300ms"}, connector.Deps{Connections: reg})
	if err != nil {
		t.Fatal(err)
	}
	conformancetest.CheckStatus(t, sink, connection.StateConnecting, "")
	if err := sink.Connect(ctx); err == nil {
		t.Fatal("connected to nothing")
	}
	key, _ := ConnectionKey(map[string]any{"brokers": addr})
	st := reg.StatusOf(key)
	_, port, _ := net.SplitHostPort(addr)
	if st.State != connection.StateDisconnected || st.Users != 1 || !strings.Contains(st.LastError, port) {
		t.Fatalf("unreachable: %+v", st)
	}
	conformancetest.CheckStatus(t, sink, connection.StateDisconnected, "connection refused")
	sink.(api.Sink).Close(ctx)
	if st := reg.StatusOf(key); st.Users != 0 || st.LastError == "" {
		t.Fatalf("after close: %+v", st)
	}
}

func TestConnectionKeyIgnoresOtherProps(t *testing.T) {
	a, _ := ConnectionKey(map[string]any{"brokers": "h:1,h:2", "groupID": "g", "topic": "x"})
	b, _ := ConnectionKey(map[string]any{"BROKERS": "h:1, h:2"})
	c, _ := ConnectionKey(map[string]any{"brokers": "h:1,h:2", "saslAuthType": "plain", "saslUserName": "u"})
	if a != b || a == c || !strings.HasPrefix(a, "kafka:") {
		t.Fatalf("keys %q %q %q", a, b, c)
	}
	if _, err := ConnectionKey(map[string]any{"topic": "x"}); err == nil {
		t.Fatal("no brokers accepted")
	}
}
