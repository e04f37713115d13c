package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnknownSettingsRefused checks that a key of kuiper.yaml or a
// KUIPER__ variable that names no setting stops the start with an error
// naming where it is and, when one is close, the key meant; a key far from
// every setting gets no suggestion.
func TestUnknownSettingsRefused(t *testing.T) {
	for _, c := range []struct {
		name, yaml string
		env        []string
		want       []string
		hint       bool // the error suggests a key
	}{
		{"typo'd variable", "", []string{"KUIPER__BASIC__AUTHENTICATON=true"},
			[]string{`environment variable KUIPER__BASIC__AUTHENTICATON: unknown key "basic.authenticaton" (did you mean basic.authentication?)`}, true},
		{"typo'd nested key", "rule:\n  bufferLenght: 5\n", nil,
			[]string{`kuiper.yaml:2: unknown key "rule.bufferLenght" (did you mean rule.bufferLength?)`}, true},
		{"typo'd deeper key", "basic:\n  syslog:\n    levle: debug\n", nil,
			[]string{`kuiper.yaml:3: unknown key "basic.syslog.levle" (did you mean basic.syslog.level?)`}, true},
		{"typo'd section", "rul:\n  bufferLength: 5\n", nil,
			[]string{`kuiper.yaml:1: unknown key "rul" (did you mean rule?)`}, true},
		{"typo'd section in a variable", "", []string{"KUIPER__BASC__RESTPORT=1"},
			[]string{`unknown key "basc.restport" (did you mean basic.restPort?)`}, true},
		{"key of a list element", "rule:\n  cronDatetimeRange:\n    - begin: '2024-01-01 00:00:00'\n    - bgin: '2024-01-01 00:00:00'\n", nil,
			[]string{`kuiper.yaml:4: unknown key "rule.cronDatetimeRange.1.bgin" (did you mean rule.cronDatetimeRange.1.begin?)`}, true},
		{"key in the wrong section", "rule:\n  enableCache: true\n", nil,
			[]string{`unknown key "rule.enableCache" (did you mean sink.enableCache?)`}, true},
		{"far-off key", "basic:\n  bogus: 1\n", nil, []string{`kuiper.yaml:2: unknown key "basic.bogus"`}, false},
		{"far-off variable", "", []string{"KUIPER__NOSUCH__KEY=1"}, []string{`environment variable KUIPER__NOSUCH__KEY: unknown key "nosuch.key"`}, false},
		{"key below a setting", "", []string{"KUIPER__BASIC__RESTPORT__DEEPER=1"}, []string{`unknown key "basic.restPort.deeper"`}, false},
		{"every problem in one error", "basic:\n  restPrt: 1\n  bogus: 2\nrule:\n  qos: x\n", []string{"KUIPER__BASIC__AUTHENTICATON=true", "KUIPER__RULE__NOPE=1"},
			[]string{
				`kuiper.yaml:2: unknown key "basic.restPrt" (did you mean basic.restPort?)`,
				`kuiper.yaml:3: unknown key "basic.bogus"`,
				"kuiper.yaml", "line 5", // qos: x does not decode
				"KUIPER__BASIC__AUTHENTICATON",
				`KUIPER__RULE__NOPE: unknown key "rule.nope"`,
			}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load(LoadOptions{BaseDir: writeConfig(t, c.yaml), Environ: c.env})
			if err == nil {
				t.Fatal("loaded")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if got := strings.Contains(err.Error(), "did you mean"); got != c.hint {
				t.Errorf("error %q: suggestion %v, want %v", err, got, c.hint)
			}
		})
	}
}

// TestFreeFormSectionsTakeAnyKey checks that what is below a free-form
// map (basic.connection, security) is not checked, in the file and in the
// environment.
func TestFreeFormSectionsTakeAnyKey(t *testing.T) {
	base := writeConfig(t, "basic:\n  connection:\n    anything: {deep: 1}\nsecurity:\n  whatever:\n    x: y\n")
	cfg, err := Load(LoadOptions{BaseDir: base, Environ: []string{"KUIPER__SECURITY__TLS__ANYKEY=1", "KUIPER__BASIC__CONNECTION__MQTT__FOO=bar"}})
	if err != nil {
		t.Fatal(err)
	}
	if tls, _ := cfg.Security["tls"].(map[string]any); tls["anykey"] != int64(1) {
		t.Errorf("security %v", cfg.Security)
	}
	if mqtt, _ := cfg.Basic.Connection["mqtt"].(map[string]any); mqtt["foo"] != "bar" {
		t.Errorf("basic.connection %v", cfg.Basic.Connection)
	}
}

// TestEKuiperKeysAccepted checks that eKuiper's shipped kuiper.yaml loads
// as it is, and that every key of eKuiper's configuration structs is a key
// here (what rekuiper does not implement is refused by value, in
// unsupported.go, not by name).
func TestEKuiperKeysAccepted(t *testing.T) {
	cfg, err := Load(LoadOptions{EtcDir: "testdata/ekuiper-etc"})
	if err != nil {
		t.Fatalf("eKuiper's shipped kuiper.yaml: %v", err)
	}
	if len(cfg.Warnings) != 0 {
		t.Errorf("eKuiper's shipped kuiper.yaml: warnings %q", cfg.Warnings)
	}
	etc := t.TempDir()
	data, err := os.ReadFile("testdata/ekuiper-all-keys.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(etc, "kuiper.yaml"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(LoadOptions{EtcDir: etc}); err != nil {
		t.Fatalf("every eKuiper key: %v", err)
	}
}

func TestLoadClientRefusesUnknownKeys(t *testing.T) {
	if _, _, err := LoadClient(filepath.Join(shippedEtc, "client.yaml"), nil); err != nil {
		t.Fatalf("shipped etc/client.yaml: %v", err)
	}
	p := writeFile(t, "client.yaml", "basic:\n  hots: 10.0.0.1\n")
	_, _, err := LoadClient(p, []string{"CLIENT__BASIC__PROT=1"})
	for _, w := range []string{`client.yaml:2: unknown key "basic.hots" (did you mean basic.host?)`, `CLIENT__BASIC__PROT: unknown key "basic.prot" (did you mean basic.port?)`} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v does not say %q", err, w)
		}
	}
}

func TestSuggestKey(t *testing.T) {
	known := knownKeys(structType(Default()))
	for key, want := range map[string]string{
		"basic.authenticaton":          "basic.authentication",
		"BASIC.AUTHENTICATION":         "basic.authentication",
		"rule.bufferlenght":            "rule.bufferLength",
		"rule.cronDatetimeRange.3.ned": "rule.cronDatetimeRange.3.end",
		"aesKey":                       "basic.aesKey",
		"restPort":                     "basic.restPort",
		"opentelemetry.servicenam":     "openTelemetry.serviceName",
		"basic.bogus":                  "",
		"extra":                        "",
		"enable":                       "", // several sections have one
		"rule.planOptimizeStrategy.windowOption.bogus": "",
	} {
		if got := suggestKey(key, known); got != want {
			t.Errorf("suggestKey(%q) = %q, want %q", key, got, want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"abc", "", 3}, {"", "ab", 2}, {"kitten", "sitting", 3},
		{"bufferlenght", "bufferlength", 1}, {"ab", "ba", 1}, {"abc", "abc", 0},
	} {
		if got := editDistance(c.a, c.b); got != c.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}
