package config

import (
	"fmt"
	"time"
)

// Limits is the `limits:` section, a rekuiper extension: what network
// clients may hold open in the daemon. docs/limits.md describes each.
type Limits struct {
	// MaxConnections caps the open connections of the REST, push endpoint
	// and Prometheus servers together; 0 means half the process's file
	// descriptor limit, at most 10,000. It is never more than the
	// descriptor limit less FileDescriptorReserve.
	MaxConnections int `yaml:"maxConnections" json:"maxConnections"`
	// MaxConnectionsPerAddress caps the connections from one remote IP.
	MaxConnectionsPerAddress int `yaml:"maxConnectionsPerAddress" json:"maxConnectionsPerAddress"`
	// FileDescriptorReserve is how many descriptors are kept out of the
	// connection budget for the catalog, rules' connections and files.
	FileDescriptorReserve int `yaml:"fileDescriptorReserve" json:"fileDescriptorReserve"`
	// MaxEventStreams caps the open event-stream answers (rule taps, rule
	// test results, memory events) together, MaxEventStreamsPerRule those
	// of one rule, test run or memory topic.
	MaxEventStreams        int `yaml:"maxEventStreams" json:"maxEventStreams"`
	MaxEventStreamsPerRule int `yaml:"maxEventStreamsPerRule" json:"maxEventStreamsPerRule"`
	// EventStreamIdleTimeout ends an event stream that sent no event for
	// that long; EventStreamLifetime ends any after that long (clients
	// such as the console's EventSource reconnect).
	EventStreamIdleTimeout Duration `yaml:"eventStreamIdleTimeout" json:"eventStreamIdleTimeout"`
	EventStreamLifetime    Duration `yaml:"eventStreamLifetime" json:"eventStreamLifetime"`
	// UnauthenticatedRate and UnauthenticatedBurst bound, per remote IP,
	// the requests without a valid token when basic.authentication is on
	// (requests a second, and at once).
	UnauthenticatedRate  float64 `yaml:"unauthenticatedRate" json:"unauthenticatedRate"`
	UnauthenticatedBurst int     `yaml:"unauthenticatedBurst" json:"unauthenticatedBurst"`
	// ReadHeaderTimeout bounds reading a request's headers, ReadTimeout a
	// whole request with its body, IdleTimeout a kept-alive connection
	// between requests, on every server.
	ReadHeaderTimeout Duration `yaml:"readHeaderTimeout" json:"readHeaderTimeout"`
	ReadTimeout       Duration `yaml:"readTimeout" json:"readTimeout"`
	IdleTimeout       Duration `yaml:"idleTimeout" json:"idleTimeout"`
}

// DefaultLimits are the limits of the shipped configuration.
func DefaultLimits() Limits {
	return Limits{
		MaxConnectionsPerAddress: 1000,
		FileDescriptorReserve:    512,
		MaxEventStreams:          512,
		MaxEventStreamsPerRule:   32,
		EventStreamIdleTimeout:   Duration(10 * time.Minute),
		EventStreamLifetime:      Duration(time.Hour),
		UnauthenticatedRate:      10,
		UnauthenticatedBurst:     50,
		ReadHeaderTimeout:        Duration(10 * time.Second),
		ReadTimeout:              Duration(5 * time.Minute),
		IdleTimeout:              Duration(60 * time.Second),
	}
}

// AutoMaxConnections is the most limits.maxConnections: 0 picks.
const AutoMaxConnections = 10_000

// ConnectionBudget returns the connection cap for a process whose file
// descriptor limit is nofile: MaxConnections (0: half of nofile, at most
// AutoMaxConnections), never more than nofile less FileDescriptorReserve,
// and at least 16.
func (l Limits) ConnectionBudget(nofile uint64) int {
	n := l.MaxConnections
	if n == 0 {
		n = int(min(nofile/2, AutoMaxConnections))
	}
	if nofile > uint64(l.FileDescriptorReserve) {
		n = min(n, int(min(nofile-uint64(l.FileDescriptorReserve), 1<<30)))
	} else {
		n = 0
	}
	return max(n, 16)
}

func (l Limits) validate() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("limits."+format, args...)) }
	for _, n := range []struct {
		key    string
		v, min int
	}{
		{"maxConnections", l.MaxConnections, 0},
		{"maxConnectionsPerAddress", l.MaxConnectionsPerAddress, 1},
		{"fileDescriptorReserve", l.FileDescriptorReserve, 0},
		{"maxEventStreams", l.MaxEventStreams, 1},
		{"maxEventStreamsPerRule", l.MaxEventStreamsPerRule, 1},
		{"unauthenticatedBurst", l.UnauthenticatedBurst, 1},
	} {
		if n.v < n.min || n.v > 1_000_000 {
			bad("%s %d: must be at least %d and at most 1000000", n.key, n.v, n.min)
		}
	}
	if l.UnauthenticatedRate <= 0 || l.UnauthenticatedRate > 1e6 {
		bad("unauthenticatedRate %v: must be more than 0 and at most 1000000", l.UnauthenticatedRate)
	}
	for _, d := range []struct {
		key string
		v   Duration
	}{
		{"eventStreamIdleTimeout", l.EventStreamIdleTimeout}, {"eventStreamLifetime", l.EventStreamLifetime},
		{"readHeaderTimeout", l.ReadHeaderTimeout}, {"readTimeout", l.ReadTimeout}, {"idleTimeout", l.IdleTimeout},
	} {
		if d.v.Std() < time.Second || d.v.Std() > 24*time.Hour {
			bad("%s %s: must be at least 1s and at most 24h", d.key, d.v)
		}
	}
	return errs
}
