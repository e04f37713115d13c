package config

import (
	"fmt"
	"net/url"
	"strings"
)

// Collector is where openTelemetry.remoteEndpoint sends spans over
// OTLP/HTTP.
type Collector struct {
	Host string // host:port
	// Path is the URL path; empty is the OTLP default, /v1/traces.
	Path string
	// Insecure is plain HTTP; false is HTTPS.
	Insecure bool
}

// Collector reads remoteEndpoint: host:port is a collector over plain
// HTTP at /v1/traces (eKuiper's form); an http:// or https:// URL names
// the scheme and, when it has one, the path.
func (o OpenTelemetry) Collector() (Collector, error) {
	e := o.RemoteEndpoint
	bad := func(why string) error {
		return fmt.Errorf("openTelemetry.remoteEndpoint %q: %s", e, why)
	}
	if e == "" {
		return Collector{}, bad("empty; set host:port or the URL of an OTLP/HTTP collector")
	}
	if !strings.Contains(e, "://") {
		u, err := url.Parse("http://" + e)
		if err != nil || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.User != nil {
			return Collector{}, bad("want host:port or an http:// or https:// URL")
		}
		return Collector{Host: u.Host, Insecure: true}, nil
	}
	u, err := url.Parse(e)
	switch {
	case err != nil:
		return Collector{}, bad("not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return Collector{}, bad("scheme " + u.Scheme + ": want http or https")
	case u.Host == "":
		return Collector{}, bad("no host")
	case u.RawQuery != "" || u.User != nil:
		return Collector{}, bad("a query or user info is not supported")
	}
	c := Collector{Host: u.Host, Insecure: u.Scheme == "http"}
	if u.Path != "/" {
		c.Path = u.Path
	}
	return c, nil
}

// MaxLocalTraceCapacity bounds openTelemetry.localTraceCapacity: the
// traces are kept in memory.
const MaxLocalTraceCapacity = 100_000

func (o OpenTelemetry) validate() []error {
	var errs []error
	if o.LocalTraceCapacity <= 0 || o.LocalTraceCapacity > MaxLocalTraceCapacity {
		errs = append(errs, fmt.Errorf("openTelemetry.localTraceCapacity %d: must be from 1 to %d", o.LocalTraceCapacity, MaxLocalTraceCapacity))
	}
	if o.EnableRemoteCollector {
		if _, err := o.Collector(); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}
