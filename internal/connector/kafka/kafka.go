// Package kafka provides the kafka source and sink on franz-go.
//
// The source is api.Rewindable: its offset is the next offset of every
// partition it read. With a groupID it joins a consumer group and commits
// to the group the offsets of the records it returned, every 5 s and on
// Close; under a rule's checkpoints it is told so (api.OffsetCommitter)
// and commits instead the offsets of each checkpoint the engine committed.
//
// The sink, given a transactionalID, writes inside Kafka transactions that
// follow the rule's checkpoints, so that a read_committed consumer sees each
// result exactly once. It implements connector.Transactional, the hooks
// the checkpoint coordinator calls (PreCommit, Commit, Abort).
//
// Protocol at qos 2: the engine calls Write for the rows before a barrier,
// then PreCommit(id) when the barrier reaches the sink (the sink adds a
// record of id to its checkpoint topic and flushes the open transaction; a
// failure fails the checkpoint), and Commit(id) once checkpoint id is
// durable (the sink commits the transaction; the next Write begins a new
// one). Rows written between PreCommit and Commit belong to the next
// checkpoint and are held back until Commit. Abort discards everything
// written since the last Commit. A crash before Commit leaves an open
// transaction that the next producer with the same transactionalID aborts
// when it starts (fencing).
//
// Restore: the engine restores the last checkpoint whose transactions
// committed, the newer of its store's committed marker and the sink's
// LastCommitted, which Connect read from the checkpoint topic (records
// keyed by the transactionalID, in the same transactions as the results). A crash after
// the Kafka commit of checkpoint N but before the store marked N committed
// thus restores N, not N-1, and N's results are not committed twice. The
// engine numbers checkpoints after LastCommitted even when it starts
// without state; see README.md for several transactional sinks.
package kafka

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/connector/connection"
)

// Type is the connector type name.
const Type = "kafka"

// Register adds the kafka source and sink to r.
func Register(r *connector.Registry) error {
	if err := r.RegisterSource(Type, SourceSpec(), NewSource); err != nil {
		return err
	}
	if err := r.RegisterSink(Type, SinkSpec(), NewSink); err != nil {
		return err
	}
	return r.RegisterConnectionKey(Type, ConnectionKey)
}

// commonProps are the connection properties of source and sink.
func commonProps() []connector.Prop {
	return []connector.Prop{
		{Name: "brokers", Type: connector.TypeString, Required: true, Doc: "comma-separated host:port list"},
		{Name: "connectTimeout", Type: connector.TypeDuration, Default: "10s", Doc: "how long Connect waits for the brokers"},
		{Name: "saslAuthType", Type: connector.TypeString, Default: "none", Enum: []any{"none", "plain", "scram"}},
		{Name: "saslScramMechanism", Type: connector.TypeString, Default: "sha512", Enum: []any{"sha256", "sha512"}, Doc: "hash of scram authentication"},
		{Name: "saslUserName", Type: connector.TypeString},
		{Name: "password", Type: connector.TypeString, Secret: true},
		{Name: "certificationPath", Type: connector.TypeString, Doc: "client certificate (PEM) for TLS"},
		{Name: "privateKeyPath", Type: connector.TypeString, Doc: "client key (PEM) for TLS"},
		{Name: "rootCaPath", Type: connector.TypeString, Doc: "CA bundle (PEM) to verify the brokers"},
		{Name: "insecureSkipVerify", Type: connector.TypeBool, Default: false, Doc: "use TLS without verifying the brokers"},
		{Name: "tls", Type: connector.TypeBool, Default: false, Doc: "use TLS (implied by any certificate property or insecureSkipVerify)"},
	}
}

// clientOpts turns validated common properties into franz-go options.
func clientOpts(props map[string]any) ([]kgo.Opt, error) {
	var brokers []string
	for b := range strings.SplitSeq(connector.Get[string](props, "brokers"), ",") {
		b = strings.TrimSpace(b)
		if b == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(b); err != nil {
			return nil, fmt.Errorf("property \"brokers\": %q is not host:port", b)
		}
		brokers = append(brokers, b)
	}
	if len(brokers) == 0 {
		return nil, errors.New("property \"brokers\" is empty")
	}
	opts := []kgo.Opt{kgo.SeedBrokers(brokers...)}
	user, pass := connector.Get[string](props, "saslUserName"), connector.Get[string](props, "password")
	switch connector.Get[string](props, "saslAuthType") {
	case "plain":
		if user == "" {
			return nil, errors.New("saslAuthType plain needs saslUserName")
		}
		opts = append(opts, kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism()))
	case "scram":
		if user == "" {
			return nil, errors.New("saslAuthType scram needs saslUserName")
		}
		a := scram.Auth{User: user, Pass: pass}
		if connector.Get[string](props, "saslScramMechanism") == "sha256" {
			opts = append(opts, kgo.SASL(a.AsSha256Mechanism()))
		} else {
			opts = append(opts, kgo.SASL(a.AsSha512Mechanism()))
		}
	}
	tc, err := tlsConfig(props)
	if err != nil {
		return nil, err
	}
	if tc != nil {
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	return opts, nil
}

// ConnectionKey is the connection.KeyFunc of named kafka connections.
// Kafka clients are not shared (each source and sink has options of its
// own, and a transactional producer must be alone on its client), but they
// report under the key of their cluster and credentials.
func ConnectionKey(props map[string]any) (string, error) {
	var names []string
	for _, p := range commonProps() {
		names = append(names, p.Name)
	}
	v, err := connector.Spec{Props: commonProps()}.Validate(connection.Pick(props, names...))
	if err != nil {
		return "", err
	}
	return clusterKey(v), nil
}

// clusterKey is the connection key of validated common properties.
func clusterKey(props map[string]any) string {
	var brokers []string
	for b := range strings.SplitSeq(connector.Get[string](props, "brokers"), ",") {
		if b = strings.TrimSpace(b); b != "" {
			brokers = append(brokers, b)
		}
	}
	parts := []string{strings.Join(brokers, ",")}
	for _, n := range []string{"saslAuthType", "saslScramMechanism", "saslUserName", "password", "certificationPath", "privateKeyPath", "rootCaPath"} {
		parts = append(parts, connector.Get[string](props, n))
	}
	parts = append(parts, fmt.Sprint(connector.Get[bool](props, "insecureSkipVerify"), connector.Get[bool](props, "tls")))
	return connection.Digest("kafka", parts...)
}

// brokerHook reports every broker connection the client opens, so that
// reconnects done by franz-go itself show in the status.
type brokerHook struct {
	tr   *connection.Tracker
	link *connection.Link // nil: none
}

var _ kgo.HookBrokerConnect = brokerHook{}

func (h brokerHook) OnBrokerConnect(meta kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err != nil {
		err = fmt.Errorf("connect to kafka broker %s: %w", net.JoinHostPort(meta.Host, strconv.Itoa(int(meta.Port))), err)
		h.tr.Failed(err)
		h.link.Failed(err)
		return
	}
	h.tr.Connected()
	h.link.Connected()
}

// tlsConfig returns nil when TLS is off.
func tlsConfig(props map[string]any) (*tls.Config, error) {
	cert, key := connector.Get[string](props, "certificationPath"), connector.Get[string](props, "privateKeyPath")
	ca := connector.Get[string](props, "rootCaPath")
	insecure := connector.Get[bool](props, "insecureSkipVerify")
	if cert == "" && key == "" && ca == "" && !insecure && !connector.Get[bool](props, "tls") {
		return nil, nil
	}
	c := &tls.Config{InsecureSkipVerify: insecure, MinVersion: tls.VersionTLS12} //nolint:gosec // user's choice
	if (cert == "") != (key == "") {
		return nil, errors.New("certificationPath and privateKeyPath must be given together")
	}
	if cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("load client certificate: %w", err)
		}
		c.Certificates = []tls.Certificate{pair}
	}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("read rootCaPath: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("rootCaPath %s holds no PEM certificate", ca)
		}
		c.RootCAs = pool
	}
	return c, nil
}

// classify marks transient produce failures retryable: broker errors that
// Kafka itself marks retriable, network errors, timeouts and a cancelled
// ctx (nothing was acknowledged, so the sink cache keeps the message).
func classify(err error) error {
	if err == nil {
		return nil
	}
	var ke *kerr.Error
	var ne net.Error
	switch {
	case errors.As(err, &ke) && !ke.Retriable:
		return err
	case errors.Is(err, kgo.ErrClientClosed):
		return err
	}
	if errors.As(err, &ke) || errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, context.Canceled) || errors.Is(err, kgo.ErrRecordTimeout) ||
		errors.Is(err, kgo.ErrRecordRetries) || errors.Is(err, kgo.ErrAborting) ||
		errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, net.ErrClosed) {
		return api.Retryable(err)
	}
	var se *kgo.ErrFirstReadEOF
	if errors.As(err, &se) {
		return api.Retryable(err)
	}
	return err
}
