package cluster

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/connector/sqldb/pgtest"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

func TestAloneWithoutSharedStore(t *testing.T) {
	m := New(Config{ID: "n1", Address: "127.0.0.1:9081", Version: "v1"})
	m.Run(context.Background()) // returns at once: nothing to beat
	nodes, err := m.Nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 1 || nodes[0].ID != "n1" || !nodes[0].Self || !nodes[0].Healthy || nodes[0].Address != "127.0.0.1:9081" {
		t.Errorf("nodes %+v", nodes)
	}
}

// TestMembersOverPostgres: two nodes beat into one database; both see both
// healthy; a node that stops beating turns unhealthy after three beats.
func TestMembersOverPostgres(t *testing.T) {
	srv := pgtest.Start(t)
	url := srv.NewDatabase(t)
	ctx := context.Background()
	const beat = 100 * time.Millisecond
	var wg sync.WaitGroup
	members := map[string]*Membership{}
	stops := map[string]context.CancelFunc{}
	for _, id := range []string{"a", "b"} {
		s, err := catalog.OpenPostgres(ctx, url, catalog.PostgresOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		m := New(Config{ID: id, Address: id + ":9081", Version: "v1", Store: s, Heartbeat: beat})
		rctx, stop := context.WithCancel(ctx)
		wg.Go(func() { m.Run(rctx) })
		members[id], stops[id] = m, stop
	}
	t.Cleanup(func() {
		for _, stop := range stops {
			stop()
		}
		wg.Wait()
	})
	healthy := func(m *Membership) map[string]bool {
		nodes, err := m.Nodes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, n := range nodes {
			out[n.ID] = n.Healthy
			if n.Self != (n.ID == m.ID()) {
				t.Errorf("%s: self %v", n.ID, n.Self)
			}
		}
		return out
	}
	testwait.Until(t, "both healthy", func() bool { h := healthy(members["a"]); return h["a"] && h["b"] })
	stops["b"]()
	testwait.Until(t, "b unhealthy", func() bool { h := healthy(members["a"]); return h["a"] && !h["b"] })
	if h := healthy(members["b"]); len(h) != 2 {
		t.Errorf("b's view %v", h)
	}
}
