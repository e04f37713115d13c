package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// shippedEtc is the repository's etc folder.
const shippedEtc = "../../etc"

// writeConfig writes kuiper.yaml into a fresh etc folder and returns the base.
func writeConfig(t *testing.T, content string) string {
	t.Helper()
	base := t.TempDir()
	if err := os.MkdirAll(filepath.Join(base, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "etc", "kuiper.yaml"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return base
}

func TestShippedConfigEqualsDefaults(t *testing.T) {
	cfg, err := Load(LoadOptions{EtcDir: shippedEtc})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Warnings) != 0 {
		t.Errorf("warnings loading shipped etc/kuiper.yaml: %q", cfg.Warnings)
	}
	want := Default()
	want.Paths = cfg.Paths
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("shipped etc/kuiper.yaml differs from Default():\n got %+v\nwant %+v", cfg, want)
	}
}

func TestDefaults(t *testing.T) {
	d := Default()
	checks := []struct {
		name      string
		got, want any
	}{
		{"restPort", d.Basic.RestPort, 9081},
		{"restIp", d.Basic.RestIP, "127.0.0.1"},
		{"httpServerIp", d.Source.HTTPServerIP, "127.0.0.1"},
		{"pprof", d.Basic.Pprof, false},
		{"logLevel", d.Basic.LogLevel, "info"},
		{"fileLog", d.Basic.FileLog, true},
		{"consoleLog", d.Basic.ConsoleLog, false},
		{"rotateTime", d.Basic.RotateTime, 24},
		{"maxAge", d.Basic.MaxAge, 72},
		{"rotateSize", d.Basic.RotateSize, int64(10485760)},
		{"rotateCount", d.Basic.RotateCount, 3},
		{"prometheusPort", d.Basic.PrometheusPort, 20499},
		{"rulePatrolInterval", d.Basic.RulePatrolInterval.Std(), 10 * time.Second},
		{"lateTolerance", d.Rule.LateTolerance.Std(), time.Second},
		{"concurrency", d.Rule.Concurrency, 1},
		{"bufferLength", d.Rule.BufferLength, 1024},
		{"checkpointInterval", d.Rule.CheckpointInterval.Std(), 5 * time.Minute},
		{"memoryCacheThreshold", d.Sink.MemoryCacheThreshold, 1024},
		{"maxDiskCache", d.Sink.MaxDiskCache, 1024000},
		{"bufferPageSize", d.Sink.BufferPageSize, 256},
		{"store.type", d.Store.Type, "sqlite"},
		{"httpServerPort", d.Source.HTTPServerPort, 10081},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if c.got != c.want {
				t.Errorf("got %v, want %v", c.got, c.want)
			}
		})
	}
}

func TestPaths(t *testing.T) {
	tests := []struct {
		name string
		opts LoadOptions
		want Paths
	}{
		{"base option", LoadOptions{BaseDir: "/b"}, Paths{"/b", "/b/etc", "/b/data", "/b/log"}},
		{"env base", LoadOptions{Environ: []string{"KuiperBaseKey=/e"}}, Paths{"/e", "/e/etc", "/e/data", "/e/log"}},
		{"option beats env", LoadOptions{BaseDir: "/b", Environ: []string{"KuiperBaseKey=/e"}}, Paths{"/b", "/b/etc", "/b/data", "/b/log"}},
		{"folder flags", LoadOptions{BaseDir: "/b", EtcDir: "/x", DataDir: "/y", LogDir: "/z"}, Paths{"/b", "/x", "/y", "/z"}},
		{"current folder", LoadOptions{}, Paths{".", "etc", "data", "log"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ResolvePaths(tt.opts); got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
	t.Run("sqlite path", func(t *testing.T) {
		cfg := Default()
		cfg.Paths = ResolvePaths(LoadOptions{BaseDir: "/b"})
		if got := cfg.SqlitePath(); got != "/b/data/sqliteKV.db" {
			t.Errorf("got %s", got)
		}
		cfg.Store.Sqlite.Name = "x.db"
		if got := cfg.SqlitePath(); got != "/b/data/x.db" {
			t.Errorf("got %s", got)
		}
	})
}

func TestLoadFile(t *testing.T) {
	t.Run("missing file gives defaults and a warning", func(t *testing.T) {
		cfg, err := Load(LoadOptions{BaseDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Basic.RestPort != 9081 || len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0], "not found") {
			t.Errorf("port %d warnings %q", cfg.Basic.RestPort, cfg.Warnings)
		}
	})
	t.Run("values, partial sections and case-insensitive keys", func(t *testing.T) {
		base := writeConfig(t, "basic:\n  RESTPORT: 9999\n  consoleLog: true\nrule:\n  lateTolerance: 2500\n  checkpointInterval: 1m\n  restartStrategy:\n    attempts: 3\nsink:\n  resendInterval: 10ms\n")
		cfg, err := Load(LoadOptions{BaseDir: base})
		if err != nil {
			t.Fatal(err)
		}
		if len(cfg.Warnings) != 0 {
			t.Errorf("warnings %q", cfg.Warnings)
		}
		if cfg.Basic.RestPort != 9999 || !cfg.Basic.ConsoleLog {
			t.Errorf("basic %+v", cfg.Basic)
		}
		if cfg.Basic.RestIP != "127.0.0.1" || !cfg.Basic.FileLog {
			t.Errorf("defaults of a partial section lost: %+v", cfg.Basic)
		}
		if cfg.Rule.LateTolerance.Std() != 2500*time.Millisecond || cfg.Rule.CheckpointInterval.Std() != time.Minute {
			t.Errorf("durations %s %s", cfg.Rule.LateTolerance, cfg.Rule.CheckpointInterval)
		}
		if cfg.Rule.RestartStrategy.Attempts != 3 || cfg.Rule.RestartStrategy.Multiplier != 2 {
			t.Errorf("restartStrategy %+v", cfg.Rule.RestartStrategy)
		}
		if cfg.Sink.ResendInterval.Std() != 10*time.Millisecond || cfg.Sink.BufferPageSize != 256 {
			t.Errorf("sink %+v", cfg.Sink)
		}
	})
	t.Run("unknown keys refused with line", func(t *testing.T) {
		_, err := Load(LoadOptions{BaseDir: writeConfig(t, "basic:\n  restPort: 9082\n  bogus: 1\nextra:\n  a: b\n")})
		if err == nil {
			t.Fatal("no error")
		}
		for _, want := range []string{`kuiper.yaml:3: unknown key "basic.bogus"`, `kuiper.yaml:4: unknown key "extra"`} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
	})
	t.Run("empty file", func(t *testing.T) {
		base := writeConfig(t, "# nothing\n")
		cfg, err := Load(LoadOptions{BaseDir: base})
		if err != nil || cfg.Basic.RestPort != 9081 {
			t.Fatalf("cfg %v err %v", cfg, err)
		}
	})
	errCases := []struct {
		name, content string
		want          []string
	}{
		{"bad yaml", "basic:\n  restPort: 1\n bad: [\n", []string{"kuiper.yaml", "line"}},
		{"wrong type", "basic:\n  restPort: abc\n", []string{"kuiper.yaml", "line 2"}},
		{"float duration", "rule:\n  lateTolerance: 1.5\n", []string{"kuiper.yaml", "line 2", "invalid duration"}},
		{"bad duration", "rule:\n  lateTolerance: soon\n", []string{"line 2", "invalid duration"}},
		{"top level list", "- a\n", []string{"kuiper.yaml", "mapping"}},
		{"qos", "rule:\n  qos: 3\n", []string{"rule.qos 3"}},
		{"store type", "store:\n  type: redis\n", []string{"store.type", "only sqlite"}},
		{"log level", "basic:\n  logLevel: loud\n", []string{"basic.logLevel"}},
		{"negative buffer", "rule:\n  bufferLength: -1\n", []string{"rule.bufferLength"}},
		{"resend priority", "sink:\n  resendPriority: 2\n", []string{"sink.resendPriority"}},
		{"page size", "sink:\n  bufferPageSize: 0\n", []string{"sink.bufferPageSize"}},
		{"port", "basic:\n  restPort: 70000\n", []string{"basic.restPort"}},
		{"timezone", "basic:\n  timezone: Mars/Olympus\n", []string{"basic.timezone"}},
		{"cron without duration", "rule:\n  cron: '* * * * *'\n", []string{"needs a duration"}},
		{"memory limit unit", "basic:\n  memoryLimit: 512 parsecs\n", []string{"basic.memoryLimit", "512 parsecs"}},
		{"memory limit tiny", "basic:\n  memoryLimit: 1MiB\n", []string{"basic.memoryLimit", "1MiB", "16MiB"}},
	}
	for _, tc := range errCases {
		t.Run("error "+tc.name, func(t *testing.T) {
			_, err := Load(LoadOptions{BaseDir: writeConfig(t, tc.content)})
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
	t.Run("patrol interval clamped", func(t *testing.T) {
		cfg, err := Load(LoadOptions{BaseDir: writeConfig(t, "basic:\n  rulePatrolInterval: 100ms\n")})
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Basic.RulePatrolInterval.Std() != time.Second || len(cfg.Warnings) != 1 {
			t.Errorf("interval %s warnings %q", cfg.Basic.RulePatrolInterval, cfg.Warnings)
		}
	})
}

func TestEnvOverrides(t *testing.T) {
	tests := []struct {
		env   string
		check func(c *Config) bool
	}{
		{"KUIPER__BASIC__RESTPORT=9082", func(c *Config) bool { return c.Basic.RestPort == 9082 }},
		{"KUIPER__BASIC__MEMORYLIMIT=512MiB", func(c *Config) bool { return c.Basic.MemoryLimitBytes == 512<<20 }},
		{"KUIPER__BASIC__MEMORYLIMIT=100000000", func(c *Config) bool { return c.Basic.MemoryLimitBytes == 100000000 }},
		{"KUIPER__basic__RestIp=127.0.0.1", func(c *Config) bool { return c.Basic.RestIP == "127.0.0.1" }},
		{"KUIPER__BASIC__PROMETHEUS=true", func(c *Config) bool { return c.Basic.Prometheus }},
		{"KUIPER__BASIC__ROTATESIZE=2048", func(c *Config) bool { return c.Basic.RotateSize == 2048 }},
		{"KUIPER__BASIC__RULEPATROLINTERVAL=30s", func(c *Config) bool { return c.Basic.RulePatrolInterval.Std() == 30*time.Second }},
		{"KUIPER__BASIC__JSFUNCTIONTIMEOUT=250ms", func(c *Config) bool { return c.Basic.JSFunctionTimeout.Std() == 250*time.Millisecond }},
		{"KUIPER__BASIC__CATALOG=postgres://k:pw@db:5432/kuiper", func(c *Config) bool {
			return c.Basic.Catalog == "postgres://k:pw@db:5432/kuiper" && c.Basic.Catalog.Postgres()
		}},
		{"KUIPER__BASIC__SYSLOG__TAG=x", func(c *Config) bool { return c.Basic.Syslog.Tag == "x" }},
		{"KUIPER__BASIC__CORS=https://a.example, http://b.example:8080", func(c *Config) bool {
			return reflect.DeepEqual(c.Basic.CORS, []string{"https://a.example", "http://b.example:8080"})
		}},
		{"KUIPER__RULE__LATETOLERANCE=1500", func(c *Config) bool { return c.Rule.LateTolerance.Std() == 1500*time.Millisecond }},
		{"KUIPER__RULE__RESTARTSTRATEGY__ATTEMPTS=5", func(c *Config) bool { return c.Rule.RestartStrategy.Attempts == 5 }},
		{"KUIPER__RULE__RESTARTSTRATEGY__JITTERFACTOR=0.5", func(c *Config) bool { return c.Rule.RestartStrategy.JitterFactor == 0.5 }},
		{`KUIPER__RULE__CRONDATETIMERANGE=[{"begin":"2024-01-01 00:00:00","end":"2024-01-02 00:00:00"}]`, func(c *Config) bool {
			return len(c.Rule.CronDatetimeRange) == 1 && c.Rule.CronDatetimeRange[0].End == "2024-01-02 00:00:00"
		}},
		{"KUIPER__SINK__ENABLECACHE=true", func(c *Config) bool { return c.Sink.EnableCache }},
		{"KUIPER__SINK__RESENDINTERVAL=100", func(c *Config) bool { return c.Sink.ResendInterval.Std() == 100*time.Millisecond }},
		{"KUIPER__SINK__RESENDDESTINATION=retry", func(c *Config) bool { return c.Sink.ResendDestination == "retry" }},
		{"KUIPER__STORE__SQLITE__NAME=cat.db", func(c *Config) bool { return c.Store.Sqlite.Name == "cat.db" }},
		{"KUIPER__SOURCE__HTTPSERVERPORT=10082", func(c *Config) bool { return c.Source.HTTPServerPort == 10082 }},
		{"KUIPER__SECURITY__TLS__INSECURE=true", func(c *Config) bool {
			tls, ok := c.Security["tls"].(map[string]any)
			return ok && tls["insecure"] == true
		}},
	}
	for _, tt := range tests {
		name, _, _ := strings.Cut(tt.env, "=")
		t.Run(name, func(t *testing.T) {
			cfg, err := Load(LoadOptions{EtcDir: shippedEtc, Environ: []string{tt.env}})
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(cfg) {
				t.Errorf("override %s not applied", tt.env)
			}
			if len(cfg.Warnings) != 0 {
				t.Errorf("warnings %q", cfg.Warnings)
			}
		})
	}
	t.Run("jsFunctionTimeout out of range refused", func(t *testing.T) {
		for _, v := range []string{"0s", "11s", "-1s"} {
			_, err := Load(LoadOptions{EtcDir: shippedEtc, Environ: []string{"KUIPER__BASIC__JSFUNCTIONTIMEOUT=" + v}})
			if err == nil || !strings.Contains(err.Error(), "basic.jsFunctionTimeout") {
				t.Errorf("%s: got %v, want a basic.jsFunctionTimeout error", v, err)
			}
		}
	})
	t.Run("list override parsed, then refused as unsupported", func(t *testing.T) {
		_, err := Load(LoadOptions{EtcDir: shippedEtc, Environ: []string{"KUIPER__RULE__PLANOPTIMIZESTRATEGY__OPTIMIZECONTROL__DISABLEOPTIMIZERULES=a, b"}})
		if err == nil || !strings.Contains(err.Error(), "rule.planOptimizeStrategy") || !strings.Contains(err.Error(), "DisableOptimizeRules:[a b]") {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("env beats file", func(t *testing.T) {
		cfg, err := Load(LoadOptions{BaseDir: writeConfig(t, "basic:\n  restPort: 1000\n"), Environ: []string{"KUIPER__BASIC__RESTPORT=2000", "OTHER=1"}})
		if err != nil || cfg.Basic.RestPort != 2000 {
			t.Fatalf("cfg %v err %v", cfg, err)
		}
	})
	// An override that names no key, names a section or whose value does
	// not fit its key is an error naming the variable.
	for _, c := range []struct{ env, want string }{
		{"KUIPER__BASIC__NOSUCH=1", `unknown key "basic.nosuch"`},
		{"KUIPER__NOSUCH__KEY=1", `unknown key "nosuch.key"`},
		{"KUIPER__BASIC=1", "basic is a section, not a key"},
		{"KUIPER__BASIC__RESTPORT__DEEPER=1", `unknown key "basic.restPort.deeper"`},
		{"KUIPER__BASIC____RESTPORT=1", "empty key segment (did you mean basic.restPort?)"},
		{"KUIPER__BASIC__RESTPORT=abc", "want an integer"},
		{"KUIPER__BASIC__PROMETHEUS=maybe", "want true or false"},
		{"KUIPER__RULE__LATETOLERANCE=soon", "invalid duration"},
		{"KUIPER__RULE__RESTARTSTRATEGY__MULTIPLIER=x", "want a number"},
		{"KUIPER__RULE__CRONDATETIMERANGE=nope", "want a JSON array"},
	} {
		name, _, _ := strings.Cut(c.env, "=")
		t.Run("error "+name, func(t *testing.T) {
			_, err := Load(LoadOptions{EtcDir: shippedEtc, Environ: []string{c.env}})
			if err == nil || !strings.Contains(err.Error(), "environment variable "+name) {
				t.Fatalf("error %v does not name %s", err, name)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not say %q", err, c.want)
			}
		})
	}
}

func TestDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"5000", 5 * time.Second, true},
		{"5s", 5 * time.Second, true},
		{"1m30s", 90 * time.Second, true},
		{"", 0, true},
		{"-1", -time.Millisecond, true},
		{"abc", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseDuration(tt.in)
			if (err == nil) != tt.ok || got.Std() != tt.want {
				t.Errorf("got %v, %v", got, err)
			}
		})
	}
	t.Run("json", func(t *testing.T) {
		var d Duration
		if err := d.UnmarshalJSON([]byte("250")); err != nil || d.Std() != 250*time.Millisecond {
			t.Errorf("number: %v %v", d, err)
		}
		if err := d.UnmarshalJSON([]byte(`"2m"`)); err != nil || d.Std() != 2*time.Minute {
			t.Errorf("string: %v %v", d, err)
		}
		b, err := d.MarshalJSON()
		if err != nil || string(b) != `"2m0s"` {
			t.Errorf("marshal: %s %v", b, err)
		}
		if err := d.UnmarshalJSON([]byte(`true`)); err == nil {
			t.Error("bool accepted")
		}
	})
}

func TestParseByteSize(t *testing.T) {
	for in, want := range map[string]int64{"": 0, "123": 123, "512MiB": 512 << 20, "2GB": 2e9, "64 KiB": 64 << 10, "7B": 7, "1TiB": 1 << 40} {
		if got, err := ParseByteSize(in); err != nil || got != want {
			t.Errorf("ParseByteSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"-1", "1.5GiB", "12 mib", "MiB", "9223372036854775807KiB"} {
		if got, err := ParseByteSize(in); err == nil {
			t.Errorf("ParseByteSize(%q) = %d; want an error", in, got)
		}
	}
}

func TestParseDurationOutOfRange(t *testing.T) {
	if d, err := ParseDuration("9223372036854775807"); err == nil {
		t.Fatalf("2^63 ms parsed as %s", d)
	}
	if d, err := ParseDuration("9223372036854"); err != nil || d.Std() != 9223372036854*time.Millisecond {
		t.Fatalf("largest ms: %s, %v", d, err)
	}
}
