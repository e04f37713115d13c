package mqtt

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/connector/mqtt/mqtttest"
)

// TestDerivedSession checks when a source takes the persistent session
// derived from Deps.SessionID, and that explicit settings win.
func TestDerivedSession(t *testing.T) {
	build := func(t *testing.T, props map[string]any, sessionID string) connConfig {
		t.Helper()
		v, err := SourceSpec().Validate(mergeProps(map[string]any{"datasource": "a/b"}, props))
		if err != nil {
			t.Fatal(err)
		}
		s, err := NewSource(NewPool(nil, nil), v, connector.Deps{SessionID: sessionID})
		if err != nil {
			t.Fatal(err)
		}
		return s.cfg
	}
	t.Run("qos 1 with a session id", func(t *testing.T) {
		c := build(t, nil, "node\x00rule\x00s")
		if !c.session || !strings.HasPrefix(c.clientID, derivedClientIDPrefix) || len(c.clientID) != 23 {
			t.Fatalf("session %v, clientid %q", c.session, c.clientID)
		}
		if again := build(t, nil, "node\x00rule\x00s"); again.clientID != c.clientID {
			t.Fatalf("client id not stable: %q then %q", c.clientID, again.clientID)
		}
		for _, other := range []struct {
			props map[string]any
			id    string
		}{
			{nil, "node\x00rule2\x00s"},
			{nil, "node2\x00rule\x00s"},
			{map[string]any{"datasource": "a/c"}, "node\x00rule\x00s"},
		} {
			if c2 := build(t, other.props, other.id); c2.clientID == c.clientID {
				t.Fatalf("%q %v: same client id %q", other.id, other.props, c2.clientID)
			}
		}
	})
	t.Run("no session id", func(t *testing.T) {
		if c := build(t, nil, ""); c.session || c.clientID != "" {
			t.Fatalf("session %v, clientid %q", c.session, c.clientID)
		}
	})
	t.Run("qos 0", func(t *testing.T) {
		if c := build(t, map[string]any{"qos": 0}, "n\x00r\x00s"); c.session || c.clientID != "" {
			t.Fatalf("session %v, clientid %q", c.session, c.clientID)
		}
	})
	t.Run("explicit clientid wins", func(t *testing.T) {
		if c := build(t, map[string]any{"clientid": "mine"}, "n\x00r\x00s"); c.session || c.clientID != "mine" {
			t.Fatalf("session %v, clientid %q", c.session, c.clientID)
		}
	})
	t.Run("explicit enableClientSession false wins", func(t *testing.T) {
		if c := build(t, map[string]any{"enableClientSession": false}, "n\x00r\x00s"); c.session || c.clientID != "" {
			t.Fatalf("session %v, clientid %q", c.session, c.clientID)
		}
	})
	t.Run("sessionExpiryIntervalSeconds applies", func(t *testing.T) {
		if c := build(t, map[string]any{"sessionExpiryIntervalSeconds": 60}, "n\x00r\x00s"); !c.session || c.expiry != 60 {
			t.Fatalf("session %v, expiry %d", c.session, c.expiry)
		}
	})
}

// TestDerivedSessionKeepsOfflineMessages checks, against mosquitto, that a
// QoS 1 source given only a session id (no clientid, no
// enableClientSession) receives what was published while it was away.
func TestDerivedSessionKeepsOfflineMessages(t *testing.T) {
	m := mqtttest.StartMosquitto(t)
	for _, v := range []string{"3.1.1", "5"} {
		t.Run("v"+v, func(t *testing.T) {
			topic := uniqueTopic(t)
			props := map[string]any{"server": m.URL("plain"), "datasource": topic, "qos": 1, "protocolVersion": v}
			sessionID := "node\x00rule-" + v + "\x00stream"
			src, p := openDerived(t, props, sessionID)
			_ = src.Close(context.Background())
			_ = p.Close()

			snk := mustSink(t, newTestPool(t), map[string]any{"server": m.URL("plain"), "topic": topic, "qos": 1})
			const n = 20
			for i := range n {
				write(t, snk, fmt.Sprint("offline-", i))
			}
			flush(t, snk)

			src, _ = openDerived(t, props, sessionID)
			seen := collect(src, n, 15*time.Second)
			for i := range n {
				if seen[fmt.Sprint("offline-", i)] == 0 {
					t.Fatalf("offline message %d lost; got %d of %d", i, len(seen), n)
				}
			}
		})
	}
}

// TestEndSessionStopsQueueing checks, against mosquitto, that EndSession
// removes a derived persistent session: what was queued for it is dropped
// and what is published afterwards is not queued, so a client that comes
// back under the same id gets nothing. Without EndSession the same steps
// deliver everything (TestDerivedSessionKeepsOfflineMessages).
func TestEndSessionStopsQueueing(t *testing.T) {
	m := mqtttest.StartMosquitto(t)
	for _, v := range []string{"3.1.1", "5"} {
		t.Run("v"+v, func(t *testing.T) {
			topic := uniqueTopic(t)
			props := map[string]any{"server": m.URL("plain"), "datasource": topic, "qos": 1, "protocolVersion": v}
			sessionID := "node\x00deleted-" + v + "\x00stream"
			src, _ := openDerived(t, props, sessionID)
			_ = src.Close(context.Background())

			snk := mustSink(t, newTestPool(t), map[string]any{"server": m.URL("plain"), "topic": topic, "qos": 1})
			write(t, snk, "queued-before-end")
			flush(t, snk)

			if err := derivedSource(t, newTestPool(t), props, sessionID).EndSession(context.Background()); err != nil {
				t.Fatal(err)
			}
			write(t, snk, "published-after-end")
			flush(t, snk)

			end, _ := openDerived(t, props, sessionID)
			readNone(t, end, time.Second)
		})
	}
	t.Run("nothing to end", func(t *testing.T) {
		for _, extra := range []map[string]any{{"qos": 0}, {"clientid": "mine", "enableClientSession": true}} {
			valid, err := SourceSpec().Validate(mergeProps(map[string]any{"server": "tcp://127.0.0.1:1", "datasource": "a"}, extra))
			if err != nil {
				t.Fatal(err)
			}
			s, err := NewSource(newTestPool(t), valid, connector.Deps{SessionID: "n\x00r\x00s"})
			if err != nil {
				t.Fatal(err)
			}
			// The server is unreachable: a connection attempt would fail.
			if err := s.EndSession(context.Background()); err != nil {
				t.Fatalf("%v: %v", extra, err)
			}
		}
	})
}

// derivedSource builds a source with props given sessionID (a derived
// persistent session at qos >= 1), without connecting it.
func derivedSource(t *testing.T, p *Pool, props map[string]any, sessionID string) *Source {
	t.Helper()
	valid, err := SourceSpec().Validate(props)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSource(p, valid, connector.Deps{SessionID: sessionID})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// openDerived connects a derivedSource on a pool of its own and waits
// until it is connected.
func openDerived(t *testing.T, props map[string]any, sessionID string) (*Source, *Pool) {
	t.Helper()
	p := newTestPool(t)
	s := derivedSource(t, p, props, sessionID)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	waitConnected(t, s.Status)
	return s, p
}
