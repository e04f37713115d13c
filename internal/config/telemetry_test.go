package config

import (
	"strings"
	"testing"
)

func TestCollectorEndpoint(t *testing.T) {
	for _, c := range []struct {
		endpoint string
		want     Collector
	}{
		{"localhost:4318", Collector{Host: "localhost:4318", Insecure: true}},
		{"http://otel:4318", Collector{Host: "otel:4318", Insecure: true}},
		{"http://otel:4318/", Collector{Host: "otel:4318", Insecure: true}},
		{"https://otel.example.com/custom/v1/traces", Collector{Host: "otel.example.com", Path: "/custom/v1/traces"}},
	} {
		got, err := OpenTelemetry{RemoteEndpoint: c.endpoint}.Collector()
		if err != nil || got != c.want {
			t.Errorf("%q: %+v, %v; want %+v", c.endpoint, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "localhost:4318/v1/traces", "grpc://otel:4317", "http://", "http://u:p@otel:4318", "http://otel:4318?x=1"} {
		if got, err := (OpenTelemetry{RemoteEndpoint: bad}).Collector(); err == nil {
			t.Errorf("%q: %+v, want an error", bad, got)
		}
	}
}

// TestOpenTelemetrySettings: the collector settings are checked at load; a
// setting that cannot work stops the start with an error naming the key.
func TestOpenTelemetrySettings(t *testing.T) {
	for _, c := range []struct{ yaml, key string }{
		{"openTelemetry:\n  enableRemoteCollector: true\n  remoteEndpoint: \"\"\n", "openTelemetry.remoteEndpoint"},
		{"openTelemetry:\n  enableRemoteCollector: true\n  remoteEndpoint: ftp://x:1\n", "openTelemetry.remoteEndpoint"},
		{"openTelemetry:\n  localTraceCapacity: 0\n", "openTelemetry.localTraceCapacity"},
		{"openTelemetry:\n  localTraceCapacity: 1000000000\n", "openTelemetry.localTraceCapacity"},
	} {
		if _, err := Load(LoadOptions{BaseDir: writeConfig(t, c.yaml)}); err == nil || !strings.Contains(err.Error(), c.key) {
			t.Errorf("load %q: %v, want an error naming %s", c.yaml, err, c.key)
		}
	}
	cfg, err := Load(LoadOptions{BaseDir: writeConfig(t, "openTelemetry:\n  enableRemoteCollector: true\n  remoteEndpoint: collector:4318\n  serviceName: edge1\n")})
	if err != nil {
		t.Fatal(err)
	}
	if o := cfg.OpenTelemetry; !o.EnableRemoteCollector || o.RemoteEndpoint != "collector:4318" || o.ServiceName != "edge1" {
		t.Errorf("loaded %+v", o)
	}
}
