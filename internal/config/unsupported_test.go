package config

import (
	"strings"
	"testing"
)

// TestUnsupportedSettingsRefused checks that eKuiper settings rekuiper
// does not implement stop the start with an error naming the key when set
// to anything but the default, and that the defaults load.
func TestUnsupportedSettingsRefused(t *testing.T) {
	for _, c := range []struct{ yaml, key string }{
		{"basic:\n  enableOpenZiti: true\n", "basic.enableOpenZiti"},
		{"basic:\n  resourceProfileConfig:\n    enable: true\n", "basic.resourceProfileConfig.enable"},
		{"basic:\n  metricsDumpConfig:\n    enable: true\n", "basic.metricsDumpConfig.enable"},
		{"basic:\n  sql:\n    maxConnections: 5\n", "basic.sql.maxConnections 5"},
		{"basic:\n  pluginHosts: https://example.com\n", `basic.pluginHosts "https://example.com"`},
		{"rule:\n  planOptimizeStrategy:\n    enableAliasPushdown: true\n", "rule.planOptimizeStrategy"},
		{"portable:\n  pythonBin: python3\n", "portable"},
		{"openTelemetry:\n  enableLocalStorage: true\n", "openTelemetry.enableLocalStorage"},
		{"basic:\n  aesKey: notbase64!\n", "basic.aesKey"},
		{"basic:\n  ip: 127.0.0.1\n", `basic.ip "127.0.0.1": not supported (there is no CLI server`},
		{"basic:\n  port: 20500\n", "basic.port 20500: not supported (there is no CLI server"},
		{"connection:\n  backoffMaxElapsedDuration: 1m\n", "connection.backoffMaxElapsedDuration 1m0s: not supported"},
	} {
		t.Run(c.key, func(t *testing.T) {
			_, err := Load(LoadOptions{BaseDir: writeConfig(t, c.yaml)})
			if err == nil || !strings.Contains(err.Error(), c.key) {
				t.Fatalf("load %q: %v, want an error naming %s", c.yaml, err, c.key)
			}
		})
	}
	for _, ok := range []string{
		"basic:\n  ignoreCase: false\n  pluginHosts: https://packages.emqx.io\n",
		"basic:\n  ignoreCase: true\n",
		"rule:\n  planOptimizeStrategy:\n    optimizeControl:\n      disableOptimizeRules: []\n",
		"rule:\n  planOptimizeStrategy:\n    enableIncrementalWindow: true\n    windowOption:\n      windowVersion: v2\n",
		"basic:\n  aesKey: MDEyMzQ1Njc4OWFiY2RlZg==\n",
		"basic:\n  ip: 0.0.0.0\n  port: 20498\nconnection:\n  backoffMaxElapsedDuration: 3m\n",
	} {
		if _, err := Load(LoadOptions{BaseDir: writeConfig(t, ok)}); err != nil {
			t.Errorf("load %q: %v", ok, err)
		}
	}
}
