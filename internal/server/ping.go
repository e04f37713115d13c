package server

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/connector/membus"
)

// pingTimeout bounds a connection check.
const pingTimeout = 10 * time.Second

// connState is implemented by connectors that connect in the background
// (MQTT): Connect succeeds at once and the state tells the outcome.
type connState interface {
	Status() (state string, lastConnected, lastDisconnected time.Time, lastErr string)
}

type closer interface {
	Close(ctx context.Context) error
}

// Error codes of eKuiper's ping answers: 1000 for an error raised without
// a code, 1003 for an I/O error (an MQTT broker that cannot be reached).
const (
	codeUndefined = 1000
	codeIO        = 1003
)

// pingConnector builds a connector of the type from the body's connection
// properties, connects it and closes it again: 200 when it connected, 400
// naming the problem otherwise. What a stream or an action reads or writes
// (a topic, a table) may be left out (Spec.PingProps). Failures answer as
// eKuiper's do, code and text, where eKuiper's clients compare them: a
// type without a server to reach (Spec.Ping false), or one rekuiper does
// not have, answers "<kind> <type> doesn't support ping connection"; an
// MQTT broker or a Kafka broker that cannot be dialled answers eKuiper's
// dial error.
func (s *Server) pingConnector(kind connector.Kind) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		typ := strings.ToLower(r.PathValue("type"))
		var props map[string]any
		if err := decodeStrict(r, &props); err != nil {
			return err
		}
		spec, err := s.opts.Connectors.Spec(kind, typ)
		if err != nil || !spec.Ping {
			name := kind.String()
			if kind == connector.KindLookup {
				name = "lookup source"
			}
			return ekuiperError(codeUndefined, "%s %s doesn't support ping connection", name, r.PathValue("type"))
		}
		props = spec.PingProps(normalizeProps(props))
		ctx, cancel := context.WithTimeout(r.Context(), pingTimeout)
		defer cancel()
		if err := dialBrokers(ctx, typ, props); err != nil {
			return err
		}
		deps := connector.Deps{Logger: s.log, Clock: s.opts.Clock, Memory: membus.New(), DataDir: s.opts.Config.Paths.Data}
		var (
			c       closer
			connect func(context.Context) error
		)
		switch kind {
		case connector.KindSource:
			src, err := s.opts.Connectors.NewSource(typ, props, deps)
			if err != nil {
				return badRequest("%s source: %v", typ, err)
			}
			c, connect = src, src.Connect
		case connector.KindSink:
			snk, err := s.opts.Connectors.NewSink(typ, props, deps)
			if err != nil {
				return badRequest("%s sink: %v", typ, err)
			}
			c, connect = snk, snk.Connect
		default:
			lk, err := s.opts.Connectors.NewLookup(typ, props, deps)
			if err != nil {
				return badRequest("%s lookup: %v", typ, err)
			}
			c, connect = lk, lk.Connect
		}
		defer c.Close(context.Background()) //nolint:errcheck // a probe
		if err := connect(ctx); err != nil {
			return ekuiperError(codeUndefined, "connect %s: %v", typ, err)
		}
		if cs, ok := c.(connState); ok {
			if err := waitConnected(ctx, cs); err != nil {
				return ekuiperError(codeUndefined, "connect %s: %v", typ, err)
			}
		}
		w.WriteHeader(http.StatusOK)
		return nil
	}
}

// dialBrokers opens and closes a TCP connection to each broker an MQTT or
// Kafka ping names, so that a broker that cannot be reached answers with
// the dial error in eKuiper's words (those of the Paho and kafka-go
// clients it uses). Other types, and brokers that answer, are left to the
// connector's own check. ctx bounds all the dials.
func dialBrokers(ctx context.Context, typ string, props map[string]any) error {
	switch typ {
	case "mqtt":
		server, _ := props["server"].(string)
		addr := mqttDialAddr(server)
		if addr == "" {
			return nil
		}
		if err := dialOnce(ctx, addr); err != nil {
			return ekuiperError(codeIO, "found error when connecting for %s: network Error : %v", server, err)
		}
	case "kafka":
		brokers, _ := props["brokers"].(string)
		for _, b := range strings.Split(brokers, ",") {
			b = strings.TrimSpace(b)
			if b == "" {
				continue
			}
			// A broker without a port (or one that is not host:port at
			// all) is a host on Kafka's default port, as kafka-go reads it.
			addr := b
			if _, _, err := net.SplitHostPort(b); err != nil {
				addr = net.JoinHostPort(b, "9092")
			}
			if err := dialOnce(ctx, addr); err != nil {
				return ekuiperError(codeUndefined, "failed to dial: failed to open connection to %s: %v", addr, err)
			}
		}
	}
	return nil
}

func dialOnce(ctx context.Context, addr string) error {
	// Broker addresses are not subject to basic.enablePrivateNet (as the
	// connectors themselves are not): brokers usually are on private networks.
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	return conn.Close()
}

// mqttDialAddr is the host:port an MQTT server URL connects to, or "" when
// the URL is not one the connector accepts (it then names the problem).
func mqttDialAddr(server string) string {
	u, err := url.Parse(server)
	if err != nil || u.Hostname() == "" {
		return ""
	}
	port := u.Port()
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "tcp", "mqtt":
			port = "1883"
		case "ssl", "tls", "mqtts", "tcps":
			port = "8883"
		default:
			return ""
		}
	}
	return net.JoinHostPort(u.Hostname(), port)
}

func waitConnected(ctx context.Context, cs connState) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		state, _, _, lastErr := cs.Status()
		if state == "connected" {
			return nil
		}
		if lastErr != "" { // the first attempt failed: no need to wait for more
			return errors.New(lastErr)
		}
		select {
		case <-ctx.Done():
			if lastErr == "" {
				lastErr = "not connected within " + pingTimeout.String()
			}
			return errors.New(lastErr)
		case <-tick.C:
		}
	}
}
