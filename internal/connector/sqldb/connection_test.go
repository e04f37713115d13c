package sqldb

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/connector/conformancetest"
	"github.com/rekuiper/rekuiper/internal/connector/connection"
	"github.com/rekuiper/rekuiper/internal/connector/connectortest"
)

func TestConnectorsSharePool(t *testing.T) {
	d := sqliteDB(t)
	d.exec(t, `CREATE TABLE t (id BIGINT, v TEXT)`)
	reg := connection.NewRegistry(nil)
	deps := connector.Deps{Clock: clock.Wall{}, Connections: reg}
	r := connectortest.Registry(t, Register)
	ctx := context.Background()
	key, err := ConnectionKey(map[string]any{"dburl": d.url, "table": "ignored"})
	if err != nil {
		t.Fatal(err)
	}
	sink, err := r.NewSink(Type, map[string]any{"url": d.url, "table": "t"}, deps)
	if err != nil {
		t.Fatal(err)
	}
	txn, err := r.NewSink(Type, map[string]any{"url": d.url, "table": "t", "transactionalID": "x"}, deps)
	if err != nil {
		t.Fatal(err)
	}
	src, err := r.NewSource(Type, map[string]any{"url": d.url, "datasource": "t"}, deps)
	if err != nil {
		t.Fatal(err)
	}
	lk, err := r.NewLookup(Type, map[string]any{"url": d.url, "datasource": "t"}, deps)
	if err != nil {
		t.Fatal(err)
	}
	conns := []interface {
		Connect(context.Context) error
		Close(context.Context) error
	}{sink, src, lk, txn}
	for _, c := range conns {
		if err := c.Connect(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// The transactional sink has its own pool; the others share one.
	if st := reg.StatusOf(key); st.Users != 4 || st.Clients != 2 || st.State != connection.StateConnected {
		t.Fatalf("status %+v", st)
	}
	if err := sink.Close(ctx); err != nil {
		t.Fatal(err)
	}
	rows, err := lk.Lookup(ctx, map[string]any{"id": int64(1)})
	if err != nil || len(rows) != 0 {
		t.Fatalf("lookup after another user closed: %v %v", rows, err)
	}
	for _, c := range conns[1:] {
		if err := c.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if st := reg.StatusOf(key); st.Users != 0 || st.Clients != 0 {
		t.Fatalf("after close: %+v", st)
	}
}

func TestConnectionStatusOfBadDatabase(t *testing.T) {
	reg := connection.NewRegistry(nil)
	url := "sqlite://" + filepath.Join(t.TempDir(), "missing", "x.db")
	s, err := NewSink(map[string]any{"url": url, "table": "t", "batchSize": int64(1), "lingerInterval": "1s"}, connector.Deps{Clock: clock.Wall{}, Connections: reg})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Connect(ctx); err == nil {
		t.Fatal("connected to a database in a missing folder")
	}
	key, _ := ConnectionKey(map[string]any{"url": url})
	if st := reg.StatusOf(key); st.State != connection.StateDisconnected || st.LastError == "" || st.Users != 1 {
		t.Fatalf("status %+v", st)
	}
	s.(api.Sink).Close(ctx)
	if st := reg.StatusOf(key); st.Users != 0 {
		t.Fatalf("after close: %+v", st)
	}
}

// TestSinkStatusClosedPort checks that a sql sink reports the connect
// error of a database server that refuses connections, and connected once
// it reaches a database.
func TestSinkStatusClosedPort(t *testing.T) {
	ctx := context.Background()
	down, err := NewSink(map[string]any{"url": "postgres://u:p@" + conformancetest.ClosedPort(t) + "/db?sslmode=disable", "table": "t", "batchSize": int64(1)}, connector.Deps{Clock: clock.Wall{}})
	if err != nil {
		t.Fatal(err)
	}
	defer down.Close(ctx)
	conformancetest.CheckStatus(t, down, connection.StateConnecting, "")
	if err := down.Connect(ctx); err == nil {
		t.Fatal("connected to a closed port")
	}
	conformancetest.CheckStatus(t, down, connection.StateDisconnected, "connection refused")

	up, err := NewSink(map[string]any{"url": "sqlite://" + filepath.Join(t.TempDir(), "x.db"), "table": "t", "batchSize": int64(1)}, connector.Deps{Clock: clock.Wall{}})
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close(ctx)
	if err := up.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	conformancetest.CheckStatus(t, up, connection.StateConnected, "")
}
