package mqtt

import (
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/rekuiper/rekuiper/internal/connector"
)

// Type is the connector type name of the source and the sink.
const Type = "mqtt"

// Defaults of the connection behaviour.
const (
	defaultServer         = "tcp://127.0.0.1:1883"
	defaultKeepAlive      = 30 * time.Second
	defaultConnectTimeout = 10 * time.Second
	defaultSessionExpiry  = 86400 // seconds, v5 with enableClientSession
	defaultMaxInflight    = 256
	defaultBufferLength   = 1024
	// defaultReadPace trades at most a millisecond of latency for reading
	// bursts in one go: every read costs a sleep and a wake-up of the
	// reader, whatever it brings (docs/benchmarks.md, "filter40k").
	defaultReadPace = time.Millisecond
)

// connProps are the properties that define a connection; sources and sinks
// share them, and so do named connections.
func connProps() []connector.Prop {
	return []connector.Prop{
		{Name: "server", Type: connector.TypeString, Default: defaultServer, Doc: "broker URL: tcp://, mqtt://, ssl://, tls:// or mqtts://host:port"},
		{Name: "protocolVersion", Type: connector.TypeString, Default: "3.1.1", Enum: []any{"3.1", "3.1.1", "4", "5"}, Doc: "MQTT version; 4 means 3.1.1"},
		{Name: "clientid", Type: connector.TypeString, Doc: "client identifier; random when empty"},
		{Name: "username", Type: connector.TypeString},
		{Name: "password", Type: connector.TypeString, Secret: true},
		{Name: "enableClientSession", Type: connector.TypeBool, Doc: "persistent session: clean session off, needs a fixed clientid; unset, a source read by a rule at qos >= 1 gets one with a derived clientid"},
		{Name: "sessionExpiryIntervalSeconds", Type: connector.TypeInt, Doc: "v5 session expiry with enableClientSession (default 86400)"},
		{Name: "certificationPath", Type: connector.TypeString, Doc: "client certificate PEM file (mTLS)"},
		{Name: "privateKeyPath", Type: connector.TypeString, Doc: "client key PEM file: SEC1, PKCS#1 or PKCS#8"},
		{Name: "rootCaPath", Type: connector.TypeString, Doc: "CA bundle PEM file; system roots when empty"},
		{Name: "certficationRaw", Type: connector.TypeString, Doc: "inline client certificate PEM (eKuiper's spelling)"},
		{Name: "certificationRaw", Type: connector.TypeString, Doc: "inline client certificate PEM"},
		{Name: "privateKeyRaw", Type: connector.TypeString, Secret: true, Doc: "inline client key PEM"},
		{Name: "rootCARaw", Type: connector.TypeString, Doc: "inline CA bundle PEM"},
		{Name: "insecureSkipVerify", Type: connector.TypeBool, Default: false},
		{Name: "tlsMinVersion", Type: connector.TypeString, Default: "tls1.2", Enum: []any{"tls1.0", "tls1.1", "tls1.2", "tls1.3"}},
		{Name: "serverName", Type: connector.TypeString, Doc: "TLS server name (SNI and verification); host of server when empty"},
		{Name: "readPace", Type: connector.TypeDuration, Default: defaultReadPace, Doc: "sources: least time between two reads from the broker; packets arriving in between are read and handed to the rules together, saving CPU under load for at most this much added latency (0 reads at once; sinks never pace)"},
		{Name: "connectionSelector", Type: connector.TypeString, Doc: "name of a connection defined on the Pool; its properties replace these"},
	}
}

// connConfig is a validated connection definition.
type connConfig struct {
	server   *url.URL
	version  byte // 3, 4 or 5
	clientID string
	username string
	password string
	session  bool
	expiry   uint32
	tlsOn    bool
	tls      tlsSettings
	tlsConf  *tls.Config
	readPace time.Duration
	// sessionSet records that enableClientSession was given (true or
	// false), so the derived persistent session does not override it.
	sessionSet bool
	// derived marks the persistent session given by withDerivedSession,
	// which EndSession removes from the broker when its rule is deleted.
	derived bool
}

// parseConn builds a connConfig from validated props. It reads key and
// certificate files, so TLS mistakes surface when the rule is created.
func parseConn(props map[string]any) (connConfig, error) {
	c := connConfig{
		clientID: connector.Get[string](props, "clientid"),
		username: connector.Get[string](props, "username"),
		password: connector.Get[string](props, "password"),
		session:  connector.Get[bool](props, "enableClientSession"),
		readPace: connector.Get[time.Duration](props, "readPace"),
	}
	if v, ok := props["enableClientSession"]; ok && v != nil {
		c.sessionSet = true
	}
	if c.readPace < 0 || c.readPace > time.Second {
		return c, fmt.Errorf("property readPace: %s is outside 0 to 1s", c.readPace)
	}
	server := connector.Get[string](props, "server")
	if server == "" {
		server = defaultServer
	}
	u, err := url.Parse(server)
	if err != nil || u.Host == "" {
		return c, fmt.Errorf("property server: invalid broker URL %q", server)
	}
	switch strings.ToLower(u.Scheme) {
	case "tcp", "mqtt":
	case "ssl", "tls", "mqtts", "tcps":
		c.tlsOn = true
	default:
		return c, fmt.Errorf("property server: unsupported scheme %q (use tcp, mqtt, ssl, tls or mqtts)", u.Scheme)
	}
	if u.Port() == "" {
		port := "1883"
		if c.tlsOn {
			port = "8883"
		}
		u.Host = u.Host + ":" + port
	}
	c.server = u
	switch connector.Get[string](props, "protocolVersion") {
	case "3.1":
		c.version = 3
	case "5":
		c.version = 5
	default:
		c.version = 4
	}
	if c.session && c.clientID == "" {
		return c, fmt.Errorf("property enableClientSession needs a fixed clientid")
	}
	// The expiry applies only to persistent sessions (given or derived).
	c.expiry = defaultSessionExpiry
	if v, ok := props["sessionExpiryIntervalSeconds"].(int64); ok {
		if v < 0 || v > 0xFFFFFFFF {
			return c, fmt.Errorf("property sessionExpiryIntervalSeconds: %d out of range", v)
		}
		c.expiry = uint32(v)
	}
	c.tls = tlsSettingsFrom(props)
	if c.tlsOn {
		if c.tlsConf, err = c.tls.build(u.Hostname()); err != nil {
			return c, err
		}
	} else if c.tls.clientCertGiven() || c.tls.rootCAGiven() {
		return c, fmt.Errorf("property server: TLS properties are set but %q is not a TLS URL (use ssl:// or mqtts://)", server)
	}
	return c, nil
}

// derivedClientIDPrefix starts the client id of a derived persistent session.
const derivedClientIDPrefix = "rekuiper-"

// withDerivedSession gives a source read by one rule at qos >= 1 a
// persistent session when the user chose neither a clientid nor
// enableClientSession: the client id is derived from sessionID (node, rule
// and stream, see connector.Deps.SessionID) and the topic filters, so it is
// the same after a restart and changes when the subscription changes. It
// is 23 characters, the length every MQTT 3.1.1 broker must accept.
func (c connConfig) withDerivedSession(sessionID string, filters map[string]byte) connConfig {
	if sessionID == "" || c.clientID != "" || c.sessionSet {
		return c
	}
	h := sha256.New()
	h.Write([]byte(sessionID))
	for _, f := range sortedKeys(filters) {
		h.Write([]byte{0})
		h.Write([]byte(f))
	}
	c.clientID = derivedClientIDPrefix + hex.EncodeToString(h.Sum(nil))[:23-len(derivedClientIDPrefix)]
	c.session = true
	c.derived = true
	return c
}

// key identifies connections that may be shared: same broker, identity,
// session and TLS material. role keeps sources and sinks apart, so a sink
// waiting for PUBACKs is never stuck behind a source's backpressure.
func (c connConfig) key(role string) string {
	h := sha256.New()
	parts := []string{role, c.server.String(), fmt.Sprint(c.version), c.clientID, c.username, c.password,
		fmt.Sprint(c.session, c.expiry, c.tlsOn, c.readPace), c.tls.fingerprint()}
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// describe is a log-safe description of the connection (no secrets).
func (c connConfig) describe() string {
	s := c.server.Redacted()
	if c.clientID != "" {
		s += " clientid=" + c.clientID
	}
	return s
}

// namedProps picks the connection properties out of props.
func namedProps(props map[string]any) map[string]any {
	out := map[string]any{}
	for _, p := range connProps() {
		if v, ok := props[p.Name]; ok && p.Name != "connectionSelector" {
			out[p.Name] = v
		}
	}
	return out
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
