package config

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Duration is a time.Duration that reads, like eKuiper's DurationConf, from
// either an integer number of milliseconds (5000) or a Go duration string
// ("5s", "1m30s"). It writes back as a Go duration string.
type Duration time.Duration

// Std returns d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// String returns the Go duration string, e.g. "5m0s".
func (d Duration) String() string { return time.Duration(d).String() }

// ParseDuration parses s as an integer number of milliseconds or a Go
// duration string. The empty string is zero. Negative values are accepted;
// callers validate ranges.
func ParseDuration(s string) (Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		if ms > math.MaxInt64/int64(time.Millisecond) || ms < math.MinInt64/int64(time.Millisecond) {
			return 0, fmt.Errorf("invalid duration %q: out of range", s)
		}
		return Duration(time.Duration(ms) * time.Millisecond), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q: want milliseconds or a Go duration such as \"5s\"", s)
	}
	return Duration(d), nil
}

// UnmarshalYAML accepts an integer (milliseconds), a duration string or null.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: duration must be a scalar", n.Line)
	}
	if n.Tag == "!!null" {
		*d = 0
		return nil
	}
	if n.Tag == "!!float" {
		return fmt.Errorf("line %d: invalid duration %q: want integer milliseconds or a Go duration string", n.Line, n.Value)
	}
	v, err := ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*d = v
	return nil
}

// MarshalYAML writes d as a Go duration string.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// MarshalJSON writes d as a Go duration string, as eKuiper does.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON accepts a JSON number (milliseconds) or a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("decode duration: %w", err)
		}
	} else {
		var ms json.Number
		if err := json.Unmarshal(b, &ms); err != nil {
			return fmt.Errorf("decode duration: %w", err)
		}
		s = ms.String()
	}
	v, err := ParseDuration(s)
	if err != nil {
		return err
	}
	*d = v
	return nil
}
