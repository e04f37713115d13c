package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestShippedConfKeyFiles(t *testing.T) {
	paths := Paths{Etc: shippedEtc}
	t.Run("mqtt", func(t *testing.T) {
		ck, warns, err := LoadConfKeys(paths.SourceConfFile("mqtt"), nil)
		if err != nil || len(warns) != 0 {
			t.Fatalf("err %v warns %q", err, warns)
		}
		if got := ck["default"]["server"]; got != "tcp://127.0.0.1:1883" {
			t.Errorf("server %v", got)
		}
		if got := ck["default"]["qos"]; got != int64(1) {
			t.Errorf("qos %#v, want int64(1)", got)
		}
	})
	for _, typ := range []string{"httppull", "file", "memory", "simulator"} {
		t.Run(typ, func(t *testing.T) {
			p := paths.SourceConfFile(typ)
			if _, err := os.Stat(p); err != nil {
				t.Fatal(err)
			}
			ck, _, err := LoadConfKeys(p, nil)
			if err != nil || len(ck["default"]) == 0 {
				t.Fatalf("err %v keys %v", err, ck)
			}
		})
	}
	t.Run("connections", func(t *testing.T) {
		seeds, warns, err := LoadConnectionSeeds(paths.ConnectionsFile(), nil)
		if err != nil || len(warns) != 0 || len(seeds) != 0 {
			t.Fatalf("seeds %v warns %q err %v", seeds, warns, err)
		}
	})
	t.Run("client", func(t *testing.T) {
		c, warns, err := LoadClient(paths.ClientFile(), nil)
		if err != nil || len(warns) != 0 || c.Basic.Host != "127.0.0.1" || c.Basic.Port != 9081 {
			t.Fatalf("client %+v warns %q err %v", c, warns, err)
		}
	})
}

func TestConfKeyOverrides(t *testing.T) {
	file := "default:\n  server: tcp://127.0.0.1:1883\n  insecureSkipVerify: false\n  qos: 1\n  port: \"1883\"\ndemo_conf:\n  qos: 0\n"
	tests := []struct {
		name    string
		environ []string
		key     string
		want    map[string]any
	}{
		{"server", []string{"MQTT_SOURCE__DEFAULT__SERVER=tcp://h:1883"}, "default",
			map[string]any{"server": "tcp://h:1883", "insecureSkipVerify": false, "qos": int64(1), "port": "1883"}},
		{"infer types and keep spelling", []string{"MQTT_SOURCE__DEFAULT__INSECURESKIPVERIFY=true", "MQTT_SOURCE__DEFAULT__QOS=2", "MQTT_SOURCE__DEFAULT__PORT=1884"}, "default",
			map[string]any{"server": "tcp://127.0.0.1:1883", "insecureSkipVerify": true, "qos": int64(2), "port": "1884"}},
		{"existing key other case", []string{"MQTT_SOURCE__DEMO_CONF__QOS=1"}, "demo_conf", map[string]any{"qos": int64(1)}},
		{"new key takes default spelling", []string{"MQTT_SOURCE__NEW__INSECURESKIPVERIFY=true", "MQTT_SOURCE__NEW__RATIO=0.5"}, "new",
			map[string]any{"insecureSkipVerify": true, "ratio": 0.5}},
		{"nested", []string{"MQTT_SOURCE__NEW__HEADERS__ACCEPT=json"}, "new", map[string]any{"headers": map[string]any{"accept": "json"}}},
		{"other files ignored", []string{"HTTPPULL__DEFAULT__URL=x", "MQTT_SOURCEX__DEFAULT__A=1"}, "default",
			map[string]any{"server": "tcp://127.0.0.1:1883", "insecureSkipVerify": false, "qos": int64(1), "port": "1883"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeFile(t, "mqtt_source.yaml", file)
			ck, warns, err := LoadConfKeys(p, tt.environ)
			if err != nil || len(warns) != 0 {
				t.Fatalf("err %v warns %q", err, warns)
			}
			if !reflect.DeepEqual(ck[tt.key], tt.want) {
				t.Errorf("got %#v\nwant %#v", ck[tt.key], tt.want)
			}
		})
	}
	t.Run("malformed names warn", func(t *testing.T) {
		p := writeFile(t, "mqtt_source.yaml", file)
		_, warns, err := LoadConfKeys(p, []string{"MQTT_SOURCE__DEFAULT=1", "MQTT_SOURCE__DEFAULT____X=1", "MQTT_SOURCE__DEFAULT__SERVER__SUB=1"})
		if err != nil || len(warns) != 3 {
			t.Fatalf("err %v warns %q", err, warns)
		}
	})
	t.Run("missing file still takes overrides", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "sources", "httppull.yaml")
		ck, _, err := LoadConfKeys(p, []string{"HTTPPULL__DEFAULT__URL=http://x"})
		if err != nil || ck["default"]["url"] != "http://x" {
			t.Fatalf("keys %v err %v", ck, err)
		}
	})
	t.Run("resolve", func(t *testing.T) {
		p := writeFile(t, "mqtt_source.yaml", file)
		ck, _, err := LoadConfKeys(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		props, ok := ck.Resolve("DEMO_CONF")
		if !ok || props["qos"] != int64(0) || props["server"] != "tcp://127.0.0.1:1883" {
			t.Errorf("resolve demo_conf: %v %v", props, ok)
		}
		if ck["default"]["qos"] != int64(1) {
			t.Error("resolve changed the default section")
		}
		if _, ok := ck.Resolve("absent"); ok {
			t.Error("absent key resolved")
		}
	})
	errCases := []struct{ name, content, want string }{
		{"bad yaml", "default:\n  a: [\n", "line"},
		{"key not a mapping", "default: 3\n", "line 1: default must be a mapping"},
		{"top level list", "- 1\n", "top level must be a mapping"},
	}
	for _, tc := range errCases {
		t.Run("error "+tc.name, func(t *testing.T) {
			p := writeFile(t, "mqtt_source.yaml", tc.content)
			_, _, err := LoadConfKeys(p, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "mqtt_source.yaml") {
				t.Errorf("error %v, want file name and %q", err, tc.want)
			}
		})
	}
}

func TestConnectionSeeds(t *testing.T) {
	p := writeFile(t, "connection.yaml", "mqtt:\n  cloud:\n    server: tcp://127.0.0.1:1883\n")
	seeds, warns, err := LoadConnectionSeeds(p, []string{"CONNECTION__MQTT__CLOUD__SERVER=tcp://h:1883", "CONNECTION__MQTT__EDGE__QOS=1", "CONNECTION__MQTT__X=1"})
	if err != nil {
		t.Fatal(err)
	}
	want := ConnectionSeeds{"mqtt": {
		"cloud": {"server": "tcp://h:1883"},
		"edge":  {"qos": int64(1)},
	}}
	if !reflect.DeepEqual(seeds, want) {
		t.Errorf("got %v, want %v", seeds, want)
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "CONNECTION__MQTT__X") {
		t.Errorf("warns %q", warns)
	}
}

func TestLoadClient(t *testing.T) {
	p := writeFile(t, "client.yaml", "basic:\n  host: 10.0.0.1\n")
	c, _, err := LoadClient(p, []string{"CLIENT__BASIC__PORT=9999"})
	if err != nil || c.Basic.Host != "10.0.0.1" || c.Basic.Port != 9999 {
		t.Fatalf("client %+v err %v", c, err)
	}
	_, _, err = LoadClient(p, []string{"CLIENT__BASIC__PORT=x"})
	if err == nil || !strings.Contains(err.Error(), "CLIENT__BASIC__PORT") {
		t.Errorf("error %v", err)
	}
}
