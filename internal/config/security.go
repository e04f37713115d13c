package config

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// validateSecurity checks the settings that decide who can reach the
// daemon: TLS file pairs, CORS origins and the pprof address.
func (c *Config) validateSecurity() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	for _, f := range []struct {
		key string
		tls TLSFiles
	}{{"basic.restTls", c.Basic.RestTLS}, {"source.httpServerTls", c.Source.HTTPServerTLS}} {
		if (f.tls.Certfile == "") != (f.tls.Keyfile == "") {
			bad("%s: certfile and keyfile must be set together (certfile %q, keyfile %q)", f.key, f.tls.Certfile, f.tls.Keyfile)
		}
	}
	for _, o := range c.Basic.CORS {
		if err := checkOrigin(o); err != nil {
			bad("basic.cors %q: %v", o, err)
		}
	}
	if c.Basic.Pprof && !IsLoopback(c.Basic.PprofIP) {
		bad("basic.pprofIp %q: pprof serves only on a loopback address (127.0.0.1, ::1 or localhost)", c.Basic.PprofIP)
	}
	return errs
}

// checkOrigin accepts a browser origin as browsers send it in the Origin
// header: http or https, a host, an optional port, nothing else.
func checkOrigin(o string) error {
	u, err := url.Parse(o)
	if err != nil {
		return err
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("want http://host[:port] or https://host[:port]")
	case u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "":
		return fmt.Errorf("want scheme://host[:port] without user, path, query or fragment")
	}
	return nil
}

// IsLoopback reports whether host (an IP address or "localhost") only
// reaches this machine. An empty host means every interface.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ExposureWarnings lists the listeners that anyone on the network can use
// without credentials: the REST API on a non-loopback address without
// authentication (or, with it, without TLS), and the metrics and push
// endpoint listeners on a non-loopback address (they have no
// authentication).
func (c *Config) ExposureWarnings() []string {
	var warns []string
	rest := net.JoinHostPort(c.Basic.RestIP, strconv.Itoa(c.Basic.RestPort))
	if !IsLoopback(c.Basic.RestIP) && !c.Basic.Authentication {
		warns = append(warns, fmt.Sprintf("the REST API listens on %s, not a loopback address, and basic.authentication is off: anyone who can reach it can manage this daemon", rest))
	} else if !IsLoopback(c.Basic.RestIP) && c.Basic.RestTLS.Certfile == "" {
		warns = append(warns, fmt.Sprintf("the REST API listens on %s, not a loopback address, without basic.restTls: tokens and data cross the network unencrypted", rest))
	}
	if c.Basic.Prometheus && c.Basic.PrometheusPort != c.Basic.RestPort && !IsLoopback(c.Basic.RestIP) {
		warns = append(warns, fmt.Sprintf("Prometheus metrics are served without authentication on %s", net.JoinHostPort(c.Basic.RestIP, strconv.Itoa(c.Basic.PrometheusPort))))
	}
	if !IsLoopback(c.Source.HTTPServerIP) {
		warns = append(warns, fmt.Sprintf("push endpoints (httppush, websocket) accept data without authentication on %s when a stream uses them", net.JoinHostPort(c.Source.HTTPServerIP, strconv.Itoa(c.Source.HTTPServerPort))))
	}
	return warns
}
