package mqtt

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"
)

// inbound is one message received from the broker.
type inbound struct {
	topic    string
	payload  []byte
	qos      byte
	id       uint16
	retained bool
	user     map[string]any // v5 user properties
	ack      func()         // nil for QoS 0
	// arena is the body arena payload lies in (3.1.1 reader), nil when
	// the payload was allocated for it alone.
	arena *bodyArena
}

// outbound is one message to publish.
type outbound struct {
	topic    string
	qos      byte
	retained bool
	payload  []byte
	user     map[string]string
	// hold asks a QoS 0 publish to stay in the connection's buffer until
	// release (or more writes) sends it: the writer has more to come.
	hold bool
}

// pending is a publish in flight.
type pending interface {
	// Done is closed when the publish completed or failed.
	Done() <-chan struct{}
	// Error is the outcome once Done is closed.
	Error() error
}

// transport is one network connection (one connect attempt) to a broker:
// the package's own client for 3.1 and 3.1.1 (transport_v3.go, wire.go) or
// paho.golang for 5. A transport is used once: after it is lost, the conn
// loop builds a new one.
type transport interface {
	connect(ctx context.Context) error
	subscribe(ctx context.Context, filters map[string]byte) error
	unsubscribe(ctx context.Context, filters []string) error
	publish(o outbound) pending
	// release writes the publishes held so far (outbound.hold), on the
	// caller's goroutine when the connection is not writing already.
	release() error
	// lost receives the cause once when an established connection ends
	// other than by close.
	lost() <-chan error
	// dead is closed once close was called; publishes still pending on a
	// dead transport will never complete.
	dead() <-chan struct{}
	close()
}

// errPermanent marks connect failures that retrying will not fix: bad
// certificates, refused credentials, unsupported protocol.
var errPermanent = errors.New("permanent")

type permanentErr struct{ err error }

func (p permanentErr) Error() string   { return p.err.Error() }
func (p permanentErr) Unwrap() []error { return []error{p.err, errPermanent} }

// classify wraps err as permanent when it is a TLS verification, TLS
// alert or CONNACK refusal error.
func classify(err error) error {
	if err == nil || errors.Is(err, errPermanent) {
		return err
	}
	var (
		ua  x509.UnknownAuthorityError
		he  x509.HostnameError
		ci  x509.CertificateInvalidError
		cve *tls.CertificateVerificationError
		ae  tls.AlertError
		rhe tls.RecordHeaderError
	)
	switch {
	case errors.As(err, &ua), errors.As(err, &he), errors.As(err, &ci), errors.As(err, &cve),
		errors.As(err, &ae), errors.As(err, &rhe):
		return permanentErr{err}
	}
	// Some errors reach here flattened to text.
	msg := err.Error()
	if strings.Contains(msg, "tls: ") || strings.Contains(msg, "x509: ") {
		return permanentErr{err}
	}
	return err
}

// connackRefused is a v5 CONNACK with a failure reason code.
type connackRefused struct {
	code   byte
	reason string
}

func (c connackRefused) Error() string {
	s := fmt.Sprintf("connection refused by broker: reason code 0x%02x", c.code)
	if c.reason != "" {
		s += " (" + c.reason + ")"
	}
	return s
}

// v5Permanent reports CONNACK reason codes that retrying will not fix.
func v5Permanent(code byte) bool {
	switch code {
	case 0x84, 0x85, 0x86, 0x87, 0x8C: // protocol version, client id, credentials, not authorized, auth method
		return true
	}
	return false
}

// dial opens the network connection, with the TLS handshake when the
// server URL asks for TLS.
func dial(ctx context.Context, cfg connConfig, timeout time.Duration) (net.Conn, error) {
	d := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	if !cfg.tlsOn {
		c, err := d.DialContext(ctx, "tcp", cfg.server.Host)
		if err != nil {
			return nil, fmt.Errorf("dial %s: %w", cfg.server.Host, err)
		}
		return c, nil
	}
	conf := cfg.tlsConf.Clone()
	// Note whether the server asks for a client certificate: only then can
	// it refuse us after a TLS 1.3 handshake completed.
	requested := false
	var cert *tls.Certificate
	if len(conf.Certificates) > 0 {
		cert = &conf.Certificates[0]
	}
	conf.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		requested = true
		if cert == nil {
			return &tls.Certificate{}, nil
		}
		return cert, nil
	}
	td := &tls.Dialer{NetDialer: d, Config: conf}
	c, err := td.DialContext(ctx, "tcp", cfg.server.Host)
	if err != nil {
		return nil, fmt.Errorf("tls dial %s: %w", cfg.server.Host, err)
	}
	tc := c.(*tls.Conn)
	if requested && tc.ConnectionState().Version == tls.VersionTLS13 {
		if err := probeClientCertVerdict(tc); err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("tls dial %s: %w", cfg.server.Host, err)
		}
	}
	return c, nil
}

// probeClientCertVerdict waits briefly for the server's verdict on the
// client certificate. In TLS 1.3 the client finishes the handshake before
// the server checks its certificate, and a refusal arrives as an alert on
// the first read; without this probe it races with writing CONNECT and may
// surface as a plain "connection reset". An MQTT server sends nothing
// before CONNECT, so the read can only time out or return the alert.
func probeClientCertVerdict(c *tls.Conn) error {
	_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	defer func() { _ = c.SetReadDeadline(time.Time{}) }()
	var b [1]byte
	_, err := c.Read(b[:])
	var ne net.Error
	if err == nil {
		return errors.New("broker sent data before CONNECT")
	}
	if errors.As(err, &ne) && ne.Timeout() {
		return nil
	}
	return err
}

// waitChan waits for done or ctx.
func waitChan(ctx context.Context, done <-chan struct{}) error {
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// result is a pending whose outcome is set by a goroutine.
type result struct {
	done chan struct{}
	err  error
}

func (r *result) Done() <-chan struct{} { return r.done }
func (r *result) Error() error          { return r.err }

func failed(err error) pending {
	r := &result{done: make(chan struct{}), err: err}
	close(r.done)
	return r
}
