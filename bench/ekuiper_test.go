package bench

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// mkfile writes content to root/rel, creating its folders.
func mkfile(t *testing.T, root, rel, content string) string {
	t.Helper()
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFindEKuiper(t *testing.T) {
	root := t.TempDir()
	// An installation: bin/kuiperd and etc/ side by side.
	inst := filepath.Join(root, "inst")
	instBin := mkfile(t, inst, "bin/kuiperd", "")
	mkfile(t, inst, "etc/kuiper.yaml", "basic: {}\n")
	// A flat folder: kuiperd and etc/ in it.
	flat := filepath.Join(root, "flat")
	flatBin := mkfile(t, flat, "kuiperd", "")
	mkfile(t, flat, "etc/kuiper.yaml", "basic: {}\n")
	// A binary with no etc anywhere near, and a folder with no kuiperd.
	lone := mkfile(t, root, "lone/x/kuiperd", "")
	empty := filepath.Join(root, "empty")
	mkfile(t, empty, "etc/kuiper.yaml", "")

	for _, tc := range []struct {
		name, path, bin, etc string
	}{
		{"install folder", inst, instBin, filepath.Join(inst, "etc")},
		{"install binary", instBin, instBin, filepath.Join(inst, "etc")},
		{"flat folder", flat, flatBin, filepath.Join(flat, "etc")},
		{"flat binary", flatBin, flatBin, filepath.Join(flat, "etc")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ek, err := FindEKuiper(tc.path)
			if err != nil {
				t.Fatal(err)
			}
			if ek.Bin != tc.bin || ek.Etc != tc.etc {
				t.Fatalf("got %+v, want bin %s etc %s", ek, tc.bin, tc.etc)
			}
		})
	}
	for _, p := range []string{lone, empty, filepath.Join(root, "missing")} {
		if ek, err := FindEKuiper(p); err == nil {
			t.Errorf("FindEKuiper(%s) = %+v, want an error", p, ek)
		}
	}
}

func TestNewEKuiperDaemon(t *testing.T) {
	root := t.TempDir()
	etc := filepath.Join(root, "ek", "etc")
	mkfile(t, etc, "kuiper.yaml", "basic:\n  restPort: 9081\n")
	mkfile(t, etc, "mqtt_source.yaml", "default:\n  qos: 1\n  server: tcp://127.0.0.1:1883\n")
	mkfile(t, etc, "sources/memory.yaml", "default: {}\n")
	ek := EKuiper{Bin: filepath.Join(root, "ek", "kuiperd"), Etc: etc}
	dir := filepath.Join(root, "run", "kuiperd")
	src := "default:\n  qos: 0\n  server: tcp://127.0.0.1:5555\n"
	d, err := NewEKuiperDaemon(ek, dir, map[string]string{"mqtt_source.yaml": src})
	if err != nil {
		t.Fatal(err)
	}
	read := func(rel string) string {
		b, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := read("etc/kuiper.yaml"); got != "basic:\n  restPort: 9081\n" {
		t.Errorf("etc/kuiper.yaml = %q", got)
	}
	if got := read("etc/sources/memory.yaml"); got != "default: {}\n" {
		t.Errorf("etc/sources/memory.yaml = %q", got)
	}
	if got := read("etc/mqtt_source.yaml"); got != src {
		t.Errorf("etc/mqtt_source.yaml = %q, want the bench's %q", got, src)
	}
	for _, sub := range []string{"data", "log", "plugins/sources", "plugins/sinks", "plugins/functions", "plugins/portable", "plugins/wasm"} {
		if fi, err := os.Stat(filepath.Join(dir, sub)); err != nil || !fi.IsDir() {
			t.Errorf("%s: not a folder (%v)", sub, err)
		}
	}
	if !d.EKuiper || d.Bin != ek.Bin || d.Dir != dir {
		t.Errorf("daemon %+v", d)
	}
	if d.Port == 0 || d.RPCPort == 0 || d.HTTPPort == 0 || d.Port == d.RPCPort || d.Port == d.HTTPPort || d.RPCPort == d.HTTPPort {
		t.Errorf("ports REST %d, CLI %d, HTTP push %d: want three distinct", d.Port, d.RPCPort, d.HTTPPort)
	}
	// The source file of eKuiper's installation is left as it was.
	b, err := os.ReadFile(filepath.Join(etc, "mqtt_source.yaml"))
	if err != nil || !strings.Contains(string(b), "1883") {
		t.Errorf("installation's mqtt_source.yaml changed: %q %v", b, err)
	}
}

func TestDaemonCommand(t *testing.T) {
	t.Run("rekuiper", func(t *testing.T) {
		d := &Daemon{Bin: "/x/kuiperd", Dir: "/run/k", Port: 1234, Env: []string{"GOGC=200"}}
		env, args := d.command()
		wantEnv := []string{"KUIPER__BASIC__RESTPORT=1234", "KUIPER__BASIC__RESTIP=127.0.0.1",
			"KUIPER__SOURCE__HTTPSERVERPORT=0", "KUIPER__BASIC__CONSOLELOG=false", "KUIPER__BASIC__FILELOG=true",
			"KUIPER__BASIC__LOGLEVEL=warn", "GOGC=200"}
		wantArgs := []string{"-etc", "/run/k/etc", "-data", "/run/k/data", "-log", "/run/k/log"}
		if !slices.Equal(env, wantEnv) || !slices.Equal(args, wantArgs) {
			t.Fatalf("env %q args %q\nwant env %q args %q", env, args, wantEnv, wantArgs)
		}
	})
	t.Run("ekuiper", func(t *testing.T) {
		d := &Daemon{Bin: "/e/kuiperd", Dir: "/run/e", Port: 1234, RPCPort: 2345, HTTPPort: 3456, EKuiper: true,
			Env: []string{"KUIPER__BASIC__PPROF=true"}}
		env, args := d.command()
		if len(args) != 0 {
			t.Errorf("args %q: eKuiper finds its folders through KuiperBaseKey", args)
		}
		last := map[string]string{} // exec keeps the last value of a key
		for _, kv := range env {
			k, v, _ := strings.Cut(kv, "=")
			last[k] = v
		}
		for k, v := range map[string]string{
			"KuiperBaseKey":                  "/run/e",
			"KUIPER__BASIC__RESTPORT":        "1234",
			"KUIPER__BASIC__RESTIP":          "127.0.0.1",
			"KUIPER__BASIC__PORT":            "2345",
			"KUIPER__SOURCE__HTTPSERVERPORT": "3456",
			"KUIPER__BASIC__AUTHENTICATION":  "false",
			"KUIPER__BASIC__LOGLEVEL":        "warn",
			"KUIPER__BASIC__PPROF":           "true", // d.Env wins
		} {
			if last[k] != v {
				t.Errorf("%s=%q, want %q (env %q)", k, last[k], v, env)
			}
		}
	})
}

func TestRunEKuiperRefusesReadPace(t *testing.T) {
	sc, _ := FindScenario("filter10k")
	dir := t.TempDir()
	_, err := Run(context.Background(), sc, RunConfig{Dir: dir, Duration: time.Second, ReadPace: "250us",
		EKuiper: &EKuiper{Bin: "/nonexistent/kuiperd", Etc: dir}})
	if !errors.Is(err, errEKuiperReadPace) {
		t.Fatalf("err %v, want %v", err, errEKuiperReadPace)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("run started (%d entries in its folder)", len(entries))
	}
}

// The rules sent to eKuiper are rekuiper's: an MQTT sink at QoS 0 with
// sendSingle on the bench's broker, and the rule qos option.
func TestRuleDefForBothEngines(t *testing.T) {
	sc, _ := FindScenario("rules100")
	r := ruleDef(sc, 7, "tcp://127.0.0.1:5555", 0, "")
	sink := r["actions"].([]any)[0].(map[string]any)["mqtt"].(map[string]any)
	if sink["server"] != "tcp://127.0.0.1:5555" || sink["topic"] != "bench/out/r7" || sink["qos"] != 0 || sink["sendSingle"] != true {
		t.Fatalf("sink %v", sink)
	}
	if _, ok := sink["protocolVersion"]; ok {
		t.Fatalf("sink %v: protocolVersion set without -protocol", sink)
	}
	opts := r["options"].(map[string]any)
	if len(opts) != 1 || opts["qos"] != 0 {
		t.Fatalf("options %v", opts)
	}
	if r["id"] != "r7" || !strings.Contains(r["sql"].(string), `deviceId = "d`+strconv.Itoa(7)+`"`) {
		t.Fatalf("rule %v", r)
	}
}

func TestStreamSQL(t *testing.T) {
	ek := &EKuiper{Bin: "/e/kuiperd", Etc: "/e/etc"}
	const plain = `CREATE STREAM bench () WITH (DATASOURCE="bench/in", FORMAT="json", TYPE="mqtt")`
	for _, tc := range []struct {
		name string
		cfg  RunConfig
		want string
	}{
		{"rekuiper", RunConfig{}, plain},
		{"rekuiper ignores shared", RunConfig{EKuiperShared: true}, plain},
		{"ekuiper", RunConfig{EKuiper: ek}, plain},
		{"ekuiper shared", RunConfig{EKuiper: ek, EKuiperShared: true},
			`CREATE STREAM bench () WITH (DATASOURCE="bench/in", FORMAT="json", TYPE="mqtt", SHARED="true")`},
		{"typed", RunConfig{EKuiper: ek, Typed: true},
			`CREATE STREAM bench (seq BIGINT, ts BIGINT, deviceId STRING, temperature FLOAT) WITH (DATASOURCE="bench/in", FORMAT="json", TYPE="mqtt")`},
	} {
		if got := streamSQL(tc.cfg); got != tc.want {
			t.Errorf("%s: %s\nwant %s", tc.name, got, tc.want)
		}
	}
}
