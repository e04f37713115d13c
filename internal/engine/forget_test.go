package engine

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/rule"
)

// sessionSource is a source that keeps a session named after
// Deps.SessionID; it records the ids it was built with and ended.
type sessionSource struct {
	id  string
	log *sessionLog
}

type sessionLog struct {
	mu    sync.Mutex
	built []string
	ended []string
}

func (s *sessionSource) Connect(context.Context) error { return nil }
func (s *sessionSource) Close(context.Context) error   { return nil }
func (s *sessionSource) Read(ctx context.Context) (*api.Message, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (s *sessionSource) EndSession(context.Context) error {
	s.log.mu.Lock()
	defer s.log.mu.Unlock()
	s.log.ended = append(s.log.ended, s.id)
	return nil
}

// TestForgetEndsTheRulesSessions checks that Forget ends, for every stream
// a deleted qos >= 1 rule read, the session named by the same SessionID
// its running source had, and nothing for a qos 0 rule.
func TestForgetEndsTheRulesSessions(t *testing.T) {
	e := newTestEnv(t)
	log := &sessionLog{}
	if err := e.runner.cfg.Registry.RegisterSource("sessioned", connector.Spec{}, func(_ map[string]any, deps connector.Deps) (api.Source, error) {
		log.mu.Lock()
		defer log.mu.Unlock()
		log.built = append(log.built, deps.SessionID)
		return &sessionSource{id: deps.SessionID, log: log}, nil
	}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, n := range []string{"a", "b"} {
		e.putStream(t, n, `CREATE STREAM `+n+` () WITH (DATASOURCE="x", TYPE="sessioned")`)
	}
	for _, c := range []struct {
		qos  rule.QoS
		want int
	}{{0, 0}, {1, 2}} {
		log.mu.Lock()
		log.built, log.ended = nil, nil
		log.mu.Unlock()
		def, err := rule.ParseDef([]byte(`{"id":"r","sql":"SELECT * FROM a INNER JOIN b ON a.k = b.k GROUP BY TUMBLINGWINDOW(ss, 1)","actions":[{"counting":{}}]}`), rule.Options{Qos: c.qos})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.start(t, def).Stop(ctx); err != nil {
			t.Fatal(err)
		}
		log.mu.Lock()
		running := append([]string(nil), log.built...)
		log.mu.Unlock()
		if err := e.runner.Forget(ctx, def); err != nil {
			t.Fatal(err)
		}
		log.mu.Lock()
		ended := append([]string(nil), log.ended...)
		log.mu.Unlock()
		if len(ended) != c.want {
			t.Fatalf("qos %d: ended %q, want %d sessions", c.qos, ended, c.want)
		}
		for _, id := range ended {
			if id == "" || !slices.Contains(running, id) {
				t.Fatalf("qos %d: ended session %q, the running rule's sources had %q", c.qos, id, running)
			}
		}
	}
}
