package mqtt

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/connector/mqtt/mqtttest"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// TestMosquitto runs the integration cases that share one mosquitto.
func TestMosquitto(t *testing.T) {
	m := mqtttest.StartMosquitto(t)
	plain := m.URL("plain")

	t.Run("qos both directions", func(t *testing.T) {
		for _, v := range []string{"3.1.1", "5", "3.1"} {
			for _, qos := range []int{0, 1, 2} {
				t.Run(fmt.Sprintf("v%s/qos%d", v, qos), func(t *testing.T) {
					p := newTestPool(t)
					topic := uniqueTopic(t)
					src := mustSource(t, p, map[string]any{"server": plain, "datasource": topic, "qos": qos, "protocolVersion": v})
					waitConnected(t, src.Status)
					snk := mustSink(t, p, map[string]any{"server": plain, "topic": topic, "qos": qos, "protocolVersion": v})
					waitConnected(t, snk.Status)
					// src read as connected: the broker acknowledged its
					// subscription, so the first message reaches it.
					for i := range 20 {
						write(t, snk, fmt.Sprint(i))
					}
					flush(t, snk)
					for i := 0; i < 20; {
						msg := read(t, src, 10*time.Second)
						if string(msg.Payload) != fmt.Sprint(i) || msg.Meta["qos"] != int64(qos) {
							t.Fatalf("message %d: %q meta %v", i, msg.Payload, msg.Meta)
						}
						if (qos > 0) != (msg.Ack != nil) {
							t.Fatalf("qos %d: Ack set = %v", qos, msg.Ack != nil)
						}
						if qos > 0 && msg.Meta["messageId"] == int64(0) {
							t.Fatalf("qos %d: messageId 0", qos)
						}
						if msg.Ack != nil {
							msg.Ack()
						}
						i++
					}
				})
			}
		}
	})

	t.Run("tls", func(t *testing.T) {
		certs := m.Certs
		cases := []struct {
			name    string
			props   map[string]any
			wantErr string
		}{
			{"custom root CA", map[string]any{"server": m.URL("tls"), "rootCARaw": certs.CAPEM}, ""},
			{"root CA file and tls1.3", map[string]any{"server": m.URL("tls"), "rootCaPath": certs.CAFile, "tlsMinVersion": "tls1.3"}, ""},
			{"wrong CA refused", map[string]any{"server": m.URL("tls"), "rootCARaw": certs.OtherCA}, "certificate"},
			{"system roots refuse test CA", map[string]any{"server": m.URL("tls")}, "certificate"},
			{"wrong server name refused", map[string]any{"server": m.URL("wrongname"), "rootCARaw": certs.CAPEM}, "x509"},
			{"wrong server name via localhost refused", map[string]any{"server": strings.Replace(m.URL("wrongname"), "127.0.0.1", "localhost", 1), "rootCARaw": certs.CAPEM}, "wrong.example"},
			{"wrong name with insecureSkipVerify", map[string]any{"server": m.URL("wrongname"), "rootCARaw": certs.CAPEM, "insecureSkipVerify": true}, ""},
			{"serverName matches certificate", map[string]any{"server": m.URL("wrongname"), "rootCARaw": certs.CAPEM, "serverName": "wrong.example"}, ""},
			{"mtls without client certificate refused", map[string]any{"server": m.URL("mtls"), "rootCARaw": certs.CAPEM, "tlsMinVersion": "tls1.2"}, "tls"},
			{"mtls with a server-only certificate refused", map[string]any{"server": m.URL("mtls"), "rootCARaw": certs.CAPEM,
				"certificationRaw": certs.WrongName.CertPEM, "privateKeyRaw": certs.WrongName.KeyPEM}, "tls"},
		}
		for _, f := range mqtttest.KeyFormats() {
			pair := certs.Clients[f]
			cases = append(cases,
				struct {
					name    string
					props   map[string]any
					wantErr string
				}{"mtls files " + f, map[string]any{"server": m.URL("mtls"), "rootCaPath": certs.CAFile, "certificationPath": pair.CertFile, "privateKeyPath": pair.KeyFile}, ""},
				struct {
					name    string
					props   map[string]any
					wantErr string
				}{"mtls inline " + f, map[string]any{"server": m.URL("mtls"), "rootCARaw": certs.CAPEM, "certificationRaw": pair.CertPEM, "privateKeyRaw": pair.KeyPEM}, ""},
			)
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				p := newTestPool(t)
				topic := uniqueTopic(t)
				props := mergeProps(c.props, map[string]any{"datasource": topic, "qos": 1})
				src, err := newSource(t, p, props)
				if c.wantErr != "" {
					if err == nil {
						t.Fatalf("connect succeeded, want error containing %q", c.wantErr)
					}
					if !strings.Contains(err.Error(), c.wantErr) {
						t.Fatalf("error %q does not contain %q", err, c.wantErr)
					}
					return
				}
				if err != nil {
					t.Fatalf("connect: %v", err)
				}
				waitConnected(t, src.Status)
				snk := mustSink(t, p, map[string]any{"server": plain, "topic": topic, "qos": 1})
				write(t, snk, "secure")
				flush(t, snk)
				if msg := read(t, src, 10*time.Second); string(msg.Payload) != "secure" {
					t.Fatalf("got %q", msg.Payload)
				}
			})
		}
	})

	for _, v := range []string{"3.1.1", "5"} {
		t.Run("push delivery v"+v, func(t *testing.T) { testPush(t, m, v) })
	}

	t.Run("shared subscription splits messages", func(t *testing.T) {
		topic := uniqueTopic(t)
		p1, p2 := newTestPool(t), newTestPool(t)
		a := mustSource(t, p1, map[string]any{"server": plain, "datasource": "$share/grp/" + topic, "qos": 1, "clientid": "share-a"})
		b := mustSource(t, p2, map[string]any{"server": plain, "datasource": "$share/grp/" + topic, "qos": 1, "clientid": "share-b"})
		waitConnected(t, a.Status)
		waitConnected(t, b.Status)
		snk := mustSink(t, newTestPool(t), map[string]any{"server": plain, "topic": topic, "qos": 1})
		const n = 200
		for i := range n {
			write(t, snk, fmt.Sprint(i))
		}
		flush(t, snk)
		got := map[string]int{}
		counts := [2]int{}
		deadline := time.Now().Add(10 * time.Second)
		for len(got) < n && time.Now().Before(deadline) {
			for i, s := range []*Source{a, b} {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
				msg, err := s.Read(ctx)
				cancel()
				if err == nil {
					got[string(msg.Payload)]++
					counts[i]++
					msg.Ack()
				}
			}
		}
		if len(got) != n {
			t.Fatalf("received %d distinct of %d", len(got), n)
		}
		if counts[0] == 0 || counts[1] == 0 || counts[0]+counts[1] != n {
			t.Fatalf("split %v, want both > 0 and sum %d (each message once)", counts, n)
		}
	})

	t.Run("sink topic template", func(t *testing.T) {
		p := newTestPool(t)
		base := uniqueTopic(t)
		src := mustSource(t, p, map[string]any{"server": plain, "datasource": base + "/+", "qos": 1})
		waitConnected(t, src.Status)
		snk := mustSink(t, p, map[string]any{"server": plain, "topic": base + "/{{.deviceId}}", "qos": 1})
		write(t, snk, "a", map[string]any{"deviceId": "dev1"})
		write(t, snk, "b", map[string]any{"deviceId": "dev2"})
		flush(t, snk)
		for _, want := range []string{base + "/dev1", base + "/dev2"} {
			if msg := read(t, src, 10*time.Second); msg.Meta["topic"] != want {
				t.Fatalf("topic %v, want %s", msg.Meta["topic"], want)
			}
		}
		err := snk.Write(context.Background(), &api.SinkMessage{Payload: []byte("x"), Rows: []map[string]any{{"deviceId": "a"}, {"deviceId": "b"}}})
		if err == nil || errors.Is(err, api.ErrRetryable) || !strings.Contains(err.Error(), "sendSingle") {
			t.Fatalf("multi-row template write: %v", err)
		}
	})

	t.Run("v5 user properties and retained", func(t *testing.T) {
		p := newTestPool(t)
		topic := uniqueTopic(t)
		snk := mustSink(t, p, map[string]any{"server": plain, "topic": topic, "qos": 1, "protocolVersion": "5",
			"retained": true, "properties": map[string]any{"site": "north", "n": 3}})
		write(t, snk, "r")
		flush(t, snk)
		src := mustSource(t, p, map[string]any{"server": plain, "datasource": topic, "qos": 1, "protocolVersion": "5"})
		msg := read(t, src, 10*time.Second)
		up, _ := msg.Meta["userProperties"].(map[string]any)
		if up["site"] != "north" || up["n"] != "3" || msg.Meta["retained"] != true {
			t.Fatalf("meta %v", msg.Meta)
		}
	})

	t.Run("decompression", func(t *testing.T) {
		p := newTestPool(t)
		topic := uniqueTopic(t)
		src := mustSource(t, p, map[string]any{"server": plain, "datasource": topic, "qos": 0, "decompression": "gzip"})
		waitConnected(t, src.Status)
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		_, _ = zw.Write([]byte(`{"a":1}`))
		_ = zw.Close()
		snk := mustSink(t, p, map[string]any{"server": plain, "topic": topic})
		write(t, snk, "not gzip")
		write(t, snk, buf.String())
		if msg := read(t, src, 10*time.Second); string(msg.Payload) != `{"a":1}` {
			t.Fatalf("payload %q", msg.Payload)
		}
		// The bad payload came first on the one connection: it is counted.
		if n, last, at := src.Dropped(); n != 1 || !strings.Contains(last, "cannot decompress (gzip)") || at.IsZero() {
			t.Fatalf("dropped %d, last %q at %v", n, last, at)
		}
	})

	t.Run("shared connection", func(t *testing.T) {
		p := newTestPool(t)
		topic := uniqueTopic(t)
		a := mustSource(t, p, map[string]any{"server": plain, "datasource": topic, "qos": 1})
		b := mustSource(t, p, map[string]any{"server": plain, "datasource": topic + ",other", "qos": 1})
		waitConnected(t, a.Status)
		conns := p.Connections()
		if len(conns) != 1 || conns[0].Refs != 2 || conns[0].Role != "source" {
			t.Fatalf("connections %+v, want one source connection with 2 refs", conns)
		}
		snk := mustSink(t, p, map[string]any{"server": plain, "topic": topic, "qos": 1})
		write(t, snk, "both")
		flush(t, snk)
		for _, s := range []*Source{a, b} {
			msg := read(t, s, 10*time.Second)
			if string(msg.Payload) != "both" {
				t.Fatalf("got %q", msg.Payload)
			}
			msg.Ack()
		}
		if err := a.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		write(t, snk, "b only")
		flush(t, snk)
		if msg := read(t, b, 10*time.Second); string(msg.Payload) != "b only" {
			t.Fatalf("got %q", msg.Payload)
		}
	})

	t.Run("named connection", func(t *testing.T) {
		p := newTestPool(t)
		if err := p.Define("local", map[string]any{"server": plain, "protocolVersion": "5"}); err != nil {
			t.Fatal(err)
		}
		topic := uniqueTopic(t)
		src := mustSource(t, p, map[string]any{"connectionSelector": "local", "datasource": topic, "qos": 1})
		snk := mustSink(t, p, map[string]any{"connectionSelector": "local", "topic": topic, "qos": 1})
		waitConnected(t, src.Status)
		write(t, snk, "named")
		flush(t, snk)
		if msg := read(t, src, 10*time.Second); string(msg.Payload) != "named" {
			t.Fatalf("got %q", msg.Payload)
		}
		if err := p.Define("bad", map[string]any{"server": "ftp://x"}); err == nil {
			t.Fatal("bad named connection accepted")
		}
	})

	// Cases that restart the broker run last.
	for _, v := range []string{"3.1.1", "5"} {
		t.Run("persistent session v"+v, func(t *testing.T) {
			testPersistentSession(t, m, v)
		})
		t.Run("restart mid-stream v"+v, func(t *testing.T) {
			testRestartMidStream(t, m, v, false)
		})
		t.Run("restart mid-stream push v"+v, func(t *testing.T) {
			testRestartMidStream(t, m, v, true)
		})
	}
}

// testPersistentSession checks that QoS 1 messages published while the
// source is away (and across a broker restart) are delivered when it comes
// back, and that an unacknowledged message is redelivered.
func testPersistentSession(t *testing.T, m *mqtttest.Mosquitto, v string) {
	plain := m.URL("plain")
	topic := uniqueTopic(t)
	clientID := "persist-" + strings.ReplaceAll(v, ".", "")
	props := map[string]any{"server": plain, "datasource": topic, "qos": 1, "protocolVersion": v,
		"clientid": clientID, "enableClientSession": true}
	open := func() (*Source, *Pool) {
		p := newTestPool(t)
		s := mustSource(t, p, props)
		waitConnected(t, s.Status)
		return s, p
	}
	src, p := open()
	snk := mustSink(t, newTestPool(t), map[string]any{"server": plain, "topic": topic, "qos": 1})
	write(t, snk, "unacked")
	flush(t, snk)
	if msg := read(t, src, 10*time.Second); string(msg.Payload) != "unacked" {
		t.Fatalf("got %q", msg.Payload)
	}
	// Not acknowledged: closing leaves it with the broker.
	_ = src.Close(context.Background())
	_ = p.Close()

	const n = 30
	for i := range n {
		write(t, snk, fmt.Sprint("offline-", i))
	}
	flush(t, snk)
	m.Restart()

	src, _ = open()
	seen := collect(src, n+1, 15*time.Second)
	if seen["unacked"] == 0 {
		t.Fatalf("unacknowledged message not redelivered; got %d messages", len(seen))
	}
	for i := range n {
		if seen[fmt.Sprint("offline-", i)] == 0 {
			t.Fatalf("offline message %d lost; got %d of %d", i, len(seen)-1, n)
		}
	}
	// Everything was acknowledged: a new session sees nothing new up to a
	// marker published after it connected (the broker resends what it
	// still holds first). An ack racing the disconnect may come back as a
	// redelivery (at least once); anything else fails.
	_ = src.Close(context.Background())
	src, _ = open()
	write(t, snk, "marker")
	flush(t, snk)
	for {
		m := read(t, src, 10*time.Second)
		if m.Ack != nil {
			m.Ack()
		}
		if string(m.Payload) == "marker" {
			break
		}
		if seen[string(m.Payload)] == 0 {
			t.Fatalf("unexpected message %q on %v", m.Payload, m.Meta["topic"])
		}
		t.Logf("redelivered after its ack raced the disconnect: %q", m.Payload)
	}
}

// testRestartMidStream publishes continuously while the broker restarts;
// with a persistent session no acknowledged QoS 1 message is lost.
func testRestartMidStream(t *testing.T, m *mqtttest.Mosquitto, v string, push bool) {
	plain := m.URL("plain")
	topic := uniqueTopic(t)
	p := newTestPool(t)
	props := map[string]any{"server": plain, "datasource": topic, "qos": 1, "protocolVersion": v,
		"clientid": fmt.Sprintf("midstream-%s-%v", strings.ReplaceAll(v, ".", ""), push), "enableClientSession": true}
	var (
		src *Source
		rec *pushRecorder
	)
	if push {
		rec = &pushRecorder{}
		src = mustPushSource(t, p, props, rec.push)
	} else {
		src = mustSource(t, p, props)
	}
	snk := mustSink(t, p, map[string]any{"server": plain, "topic": topic, "qos": 1, "protocolVersion": v,
		"clientid": "midstream-pub-" + strings.ReplaceAll(v, ".", ""), "enableClientSession": true})
	waitConnected(t, src.Status)
	waitConnected(t, snk.Status)
	const n = 300
	// The broker restarts once a third of the messages are written, while
	// the rest are being written.
	started, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		<-started
		m.Restart()
	}()
	for i := range n {
		write(t, snk, fmt.Sprint(i))
		if i == n/3 {
			close(started)
		}
		if i%20 == 0 {
			time.Sleep(5 * time.Millisecond) // paces the publisher; not a wait
		}
	}
	flush(t, snk)
	<-done
	var seen map[string]int
	if push {
		seen = rec.distinct(n, 20*time.Second)
	} else {
		seen = collect(src, n, 20*time.Second)
	}
	if len(seen) != n {
		var missing []int
		for i := range n {
			if seen[fmt.Sprint(i)] == 0 {
				missing = append(missing, i)
			}
		}
		t.Fatalf("received %d of %d; missing %v", len(seen), n, missing)
	}
	if _, _, ld, _ := src.Status(); ld.IsZero() {
		t.Fatal("restart not observed by the source")
	}
}

// pushRecorder is a push function that records what it was handed.
type pushRecorder struct {
	mu       sync.Mutex
	payloads []string
	maxBatch int
	refuse   bool
}

func (r *pushRecorder) push(msgs []*api.Message) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.maxBatch = max(r.maxBatch, len(msgs))
	for _, m := range msgs {
		r.payloads = append(r.payloads, string(m.Payload))
		if !r.refuse && m.Ack != nil {
			m.Ack()
		}
	}
	return !r.refuse
}

// distinct waits until n distinct payloads were pushed or timeout, and
// returns how often each arrived.
func (r *pushRecorder) distinct(n int, timeout time.Duration) map[string]int {
	var seen map[string]int
	testwait.Poll(timeout, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		seen = map[string]int{}
		for _, p := range r.payloads {
			seen[p]++
		}
		return len(seen) >= n
	})
	return seen
}

func (r *pushRecorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.payloads)
}

// testPush checks push delivery: messages in order, batched when a read
// pace lets them gather (v3 transport), and refused ones left
// unacknowledged for the persistent session to redeliver.
func testPush(t *testing.T, m *mqtttest.Mosquitto, v string) {
	plain := m.URL("plain")
	topic := uniqueTopic(t)
	props := map[string]any{"server": plain, "datasource": topic, "qos": 1, "protocolVersion": v,
		"clientid": "push-" + strings.ReplaceAll(v, ".", ""), "enableClientSession": true, "readPace": "20ms"}
	p := newTestPool(t)
	rec := &pushRecorder{}
	src := mustPushSource(t, p, props, rec.push)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := src.Read(ctx); err == nil {
		t.Fatal("Read on a push source succeeded")
	}

	snk := mustSink(t, newTestPool(t), map[string]any{"server": plain, "topic": topic, "qos": 1})
	const n = 300
	for i := range n {
		write(t, snk, fmt.Sprint(i))
	}
	flush(t, snk)
	testwait.Poll(testwait.Limit, func() bool { return rec.count() >= n })
	rec.mu.Lock()
	for i, got := range rec.payloads {
		if got != fmt.Sprint(i) {
			t.Fatalf("message %d is %q (of %d)", i, got, len(rec.payloads))
		}
	}
	if len(rec.payloads) != n {
		t.Fatalf("%d of %d messages pushed", len(rec.payloads), n)
	}
	// paho (v5) hands messages over one by one; the package's own v3
	// transport hands over what one read brought.
	if v != "5" && rec.maxBatch < 2 {
		t.Fatalf("largest batch %d: paced reads did not gather messages", rec.maxBatch)
	}
	rec.refuse = true
	rec.mu.Unlock()

	for i := range 5 {
		write(t, snk, fmt.Sprint("refused-", i))
	}
	flush(t, snk)
	testwait.Poll(testwait.Limit, func() bool { return rec.count() >= n+5 })
	if got := rec.count(); got != n+5 {
		t.Fatalf("%d refused messages pushed, want 5", got-n)
	}
	// Refused messages were not acknowledged: the session redelivers them.
	_ = src.Close(context.Background())
	_ = p.Close()
	delete(props, "readPace")
	again := mustSource(t, newTestPool(t), props)
	seen := collect(again, 5, 15*time.Second)
	for i := range 5 {
		if seen[fmt.Sprint("refused-", i)] == 0 {
			t.Fatalf("refused message %d not redelivered; got %v", i, seen)
		}
	}
}
