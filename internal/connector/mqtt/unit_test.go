package mqtt

import (
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/connector/mqtt/mqtttest"
)

func TestTopicMatches(t *testing.T) {
	cases := []struct {
		filter, topic string
		want          bool
	}{
		{"a/b", "a/b", true},
		{"a/b", "a/c", false},
		{"a/+", "a/b", true},
		{"a/+", "a/b/c", false},
		{"a/+", "a", false},
		{"a/#", "a", true},
		{"a/#", "a/b/c", true},
		{"#", "x/y", true},
		{"+/b", "a/b", true},
		{"+", "a/b", false},
		{"#", "$SYS/x", false},
		{"+/x", "$SYS/x", false},
		{"$SYS/#", "$SYS/x", true},
		{"a/+/c", "a/b/c", true},
		{"a/b", "a/b/c", false},
	}
	for _, c := range cases {
		t.Run(c.filter+"~"+c.topic, func(t *testing.T) {
			if got := topicMatches(c.filter, c.topic); got != c.want {
				t.Fatalf("topicMatches(%q, %q) = %v, want %v", c.filter, c.topic, got, c.want)
			}
		})
	}
}

func TestParseFilters(t *testing.T) {
	cases := []struct {
		in      string
		want    []string
		wantErr string
	}{
		{in: "a, b/+ ,c/#", want: []string{"a", "b/+", "c/#"}},
		{in: "$share/g/a/+", want: []string{"$share/g/a/+"}},
		{in: "a/#/b", wantErr: "# must be the last level"},
		{in: "a/b+", wantErr: "whole level"},
		{in: "$share/g", wantErr: "$share/<group>/<filter>"},
		{in: " , ", wantErr: "no topic"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := parseFilters(c.in, 1)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			for _, f := range c.want {
				if got[f] != 1 {
					t.Fatalf("filter %q missing or wrong qos in %v", f, got)
				}
			}
		})
	}
	if got := stripShare("$share/grp/a/b"); got != "a/b" {
		t.Fatalf("stripShare = %q", got)
	}
}

func TestTLSKeyFormatsAndErrors(t *testing.T) {
	certs := mqtttest.NewCerts(t)
	base := func() map[string]any {
		return map[string]any{"server": "ssl://127.0.0.1:8883", "rootCARaw": certs.CAPEM}
	}
	for _, f := range mqtttest.KeyFormats() {
		pair := certs.Clients[f]
		t.Run("inline/"+f, func(t *testing.T) {
			p := base()
			p["certificationRaw"], p["privateKeyRaw"] = pair.CertPEM, pair.KeyPEM
			if _, err := parseConnProps(t, p); err != nil {
				t.Fatal(err)
			}
		})
		t.Run("files/"+f, func(t *testing.T) {
			p := base()
			p["certificationPath"], p["privateKeyPath"] = pair.CertFile, pair.KeyFile
			c, err := parseConnProps(t, p)
			if err != nil {
				t.Fatal(err)
			}
			if len(c.tlsConf.Certificates) != 1 || c.tlsConf.RootCAs == nil {
				t.Fatal("client certificate or root CA not loaded")
			}
		})
	}
	t.Run("eKuiper spelling certficationRaw", func(t *testing.T) {
		p := base()
		p["certficationRaw"], p["privateKeyRaw"] = certs.Clients[mqtttest.KeyECSEC1].CertPEM, certs.Clients[mqtttest.KeyECSEC1].KeyPEM
		if _, err := parseConnProps(t, p); err != nil {
			t.Fatal(err)
		}
	})
	badFile := filepath.Join(t.TempDir(), "garbage.key")
	if err := os.WriteFile(badFile, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	errCases := []struct {
		name    string
		set     map[string]any
		wantErr []string
	}{
		{"mismatched key", map[string]any{"certificationRaw": certs.Clients[mqtttest.KeyECSEC1].CertPEM, "privateKeyRaw": certs.Clients[mqtttest.KeyECPKCS8].KeyPEM},
			[]string{"privateKeyRaw", "does not match"}},
		{"encrypted key", map[string]any{"certificationRaw": certs.Clients[mqtttest.KeyRSAPKCS1].CertPEM, "privateKeyRaw": certs.EncryptedKeyPEM},
			[]string{"privateKeyRaw", "encrypted"}},
		{"unreadable key file", map[string]any{"certificationPath": certs.Clients[mqtttest.KeyECSEC1].CertFile, "privateKeyPath": "/nonexistent/key.pem"},
			[]string{"privateKeyPath", "no such file"}},
		{"garbage key", map[string]any{"certificationPath": certs.Clients[mqtttest.KeyECSEC1].CertFile, "privateKeyPath": badFile},
			[]string{"privateKeyPath", "no PEM private key"}},
		{"key without cert", map[string]any{"privateKeyRaw": certs.Clients[mqtttest.KeyECSEC1].KeyPEM},
			[]string{"no client certificate"}},
		{"bad root CA", map[string]any{"rootCARaw": "junk"}, []string{"rootCARaw", "no PEM certificate"}},
		{"tls props on tcp", map[string]any{"server": "tcp://127.0.0.1:1883"}, []string{"not a TLS URL"}},
	}
	for _, c := range errCases {
		t.Run(c.name, func(t *testing.T) {
			p := base()
			for k, v := range c.set {
				p[k] = v
			}
			_, err := parseConnProps(t, p)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q does not mention %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "BEGIN") {
				t.Fatalf("error leaks PEM material: %q", err)
			}
		})
	}
}

func parseConnProps(t *testing.T, props map[string]any) (connConfig, error) {
	t.Helper()
	v, err := SourceSpec().Validate(mergeProps(map[string]any{"datasource": "x"}, props))
	if err != nil {
		t.Fatalf("validate: %v", err)
	}
	return parseConn(v)
}

func mergeProps(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

func TestSpecMasksSecretsAndValidates(t *testing.T) {
	for name, spec := range map[string]connector.Spec{"source": SourceSpec(), "sink": SinkSpec()} {
		t.Run(name, func(t *testing.T) {
			m := spec.Mask(map[string]any{"password": "pw", "privateKeyRaw": "KEY", "username": "u"})
			if m["password"] != connector.MaskedValue || m["privateKeyRaw"] != connector.MaskedValue || m["username"] != "u" {
				t.Fatalf("mask = %v", m)
			}
		})
	}
	if _, err := SourceSpec().Validate(map[string]any{"datasource": "a", "qos": 3}); err == nil {
		t.Fatal("qos 3 accepted")
	}
	if _, err := SourceSpec().Validate(map[string]any{"datasource": "a", "protocolVersion": "6"}); err == nil {
		t.Fatal("protocolVersion 6 accepted")
	}
	v, err := SourceSpec().Validate(map[string]any{"datasource": "a"})
	if err != nil {
		t.Fatal(err)
	}
	if v["qos"] != int64(1) || v["protocolVersion"] != "3.1.1" || v["server"] != defaultServer {
		t.Fatalf("defaults = %#v", v)
	}
	c, err := parseConn(v)
	if err != nil || c.version != 4 {
		t.Fatalf("parseConn: %v, version %d", err, c.version)
	}
	p := NewPool(nil, nil)
	if _, err := NewSource(p, mergeProps(v, map[string]any{"enableClientSession": true}), connector.Deps{}); err == nil ||
		!strings.Contains(err.Error(), "clientid") {
		t.Fatalf("persistent session without clientid: %v", err)
	}
	sv, err := SinkSpec().Validate(map[string]any{"topic": "t", "properties": map[string]any{"a": "b"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewSink(p, sv, connector.Deps{}); err == nil || !strings.Contains(err.Error(), "protocolVersion 5") {
		t.Fatalf("user properties on v3: %v", err)
	}
	if _, err := NewSource(p, mergeProps(v, map[string]any{"connectionSelector": "nope"}), connector.Deps{}); err == nil ||
		!strings.Contains(err.Error(), "unknown connection") {
		t.Fatalf("unknown connectionSelector: %v", err)
	}
}

func TestBackoffGrowsWithJitterAndCaps(t *testing.T) {
	p := NewPool(nil, nil)
	p.minBackoff, p.maxBackoff = 100*time.Millisecond, 2*time.Second
	for n := 1; n <= 10; n++ {
		full := p.minBackoff << (n - 1)
		if full > p.maxBackoff {
			full = p.maxBackoff
		}
		for range 50 {
			d := p.backoff(n)
			if d < full/2 || d > full {
				t.Fatalf("backoff(%d) = %s, want in [%s, %s]", n, d, full/2, full)
			}
		}
	}
}

// TestMetadataShared: QoS 0 messages on the same topic share one metadata
// map; a different topic, a message id or user properties get their own,
// with the right values.
func TestMetadataShared(t *testing.T) {
	s := newSubscription(map[string]byte{"a/#": 0}, "", 1, clock.Wall{}, slog.New(slog.DiscardHandler))
	same := func(x, y map[string]any) bool { return reflect.ValueOf(x).Pointer() == reflect.ValueOf(y).Pointer() }
	m1 := s.metadata(inbound{topic: "a/1"})
	m2 := s.metadata(inbound{topic: "a/1"})
	if !same(m1, m2) {
		t.Error("consecutive QoS 0 messages on one topic do not share metadata")
	}
	m3 := s.metadata(inbound{topic: "a/2"})
	if same(m1, m3) || m3["topic"] != "a/2" {
		t.Errorf("other topic: shared %v, meta %v", same(m1, m3), m3)
	}
	m4 := s.metadata(inbound{topic: "a/2", qos: 1, id: 7})
	m5 := s.metadata(inbound{topic: "a/2", qos: 1, id: 8})
	if same(m4, m5) || m4["messageId"] != int64(7) || m5["messageId"] != int64(8) || m5["qos"] != int64(1) {
		t.Errorf("message ids: %v %v", m4, m5)
	}
	m6 := s.metadata(inbound{topic: "a/2", retained: true})
	if same(m3, m6) || m6["retained"] != true {
		t.Errorf("retained: %v", m6)
	}
}

func TestReadPaceDefaultsAndSinks(t *testing.T) {
	p := NewPool(nil, clock.Wall{})
	defer p.Close()
	parse := func(props map[string]any) connConfig {
		t.Helper()
		v, err := SourceSpec().Validate(props)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := p.resolve(v)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	if got := parse(map[string]any{"datasource": "a"}).readPace; got != defaultReadPace {
		t.Fatalf("default readPace %s, want %s", got, defaultReadPace)
	}
	cfg := parse(map[string]any{"datasource": "a", "readPace": "1ms"})
	if cfg.readPace != time.Millisecond {
		t.Fatalf("readPace %s, want 1ms", cfg.readPace)
	}
	if got := parse(map[string]any{"datasource": "a", "readPace": 0}).readPace; got != 0 {
		t.Fatalf("readPace 0 gave %s", got)
	}
	if v, err := SourceSpec().Validate(map[string]any{"datasource": "a", "readPace": "2s"}); err == nil {
		if _, err := p.resolve(v); err == nil || !strings.Contains(err.Error(), "readPace") {
			t.Fatalf("readPace 2s: error %v, want one naming readPace", err)
		}
	}
	// Connections are built, not started: sinks never pace their reads.
	if c := newConn(p, cfg, "sink", "k1"); c.cfg.readPace != 0 {
		t.Fatalf("sink connection paces reads by %s", c.cfg.readPace)
	}
	if c := newConn(p, cfg, "source", "k2"); c.cfg.readPace != time.Millisecond {
		t.Fatalf("source connection readPace %s", c.cfg.readPace)
	}
}
