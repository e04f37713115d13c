package rule

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/rekuiper/rekuiper/internal/config"
)

// TestMaskTextNewKeyNames checks the key names eKuiper users give their
// secrets, case-insensitively, in properties, JSON echoes and query
// strings.
func TestMaskTextNewKeyNames(t *testing.T) {
	for _, k := range []string{"pwd", "PWD", "passphrase", "keyPassphrase", "credentials", "Credential", "secret", "clientSecret", "apikey", "apiKey", "accessKey", "access_key", "AccessKeyId"} {
		if !IsSecretKey(k) {
			t.Errorf("IsSecretKey(%q) = false", k)
		}
		props := MaskProps(map[string]any{k: "v4lue", "nested": map[string]any{k: 7}})
		if props[k] != MaskedValue || props["nested"].(map[string]any)[k] != MaskedValue {
			t.Errorf("MaskProps(%s) = %v", k, props)
		}
		for _, tc := range []struct{ in, want string }{
			{fmt.Sprintf(`{"%s":"v4lue","a":1}`, k), fmt.Sprintf(`{"%s":"******","a":1}`, k)},
			{fmt.Sprintf(`{\"%s\":\"v4lue\"}`, k), fmt.Sprintf(`{\"%s\":\"******\"}`, k)},
			{fmt.Sprintf("http://h/x?a=1&%s=v4lue&b=2", k), fmt.Sprintf("http://h/x?a=1&%s=******&b=2", k)},
			{fmt.Sprintf("map[%s:v4lue url:http://h]", k), fmt.Sprintf("map[%s:****** url:http://h]", k)},
		} {
			if got := MaskText(tc.in); got != tc.want {
				t.Errorf("MaskText(%q) = %q, want %q", tc.in, got, tc.want)
			}
		}
	}
	for _, k := range []string{"user", "username", "certificationRaw", "server", "key", "topic"} {
		if IsSecretKey(k) {
			t.Errorf("IsSecretKey(%q) = true", k)
		}
	}
}

// TestMaskKnownSecrets checks that a value configured under a secret name
// is masked in any text once registered, and what is never registered.
func TestMaskKnownSecrets(t *testing.T) {
	t.Cleanup(known.reset)
	known.reset()
	RegisterSecretsIn(map[string]any{
		"server":   "tcp://bob:hunter2%40x@broker:1883",
		"password": "s3cr3t-pw",
		"headers":  map[string]any{"Authorization": "Bearer tok.en.value"},
		"dsn":      "host=db password=dsnpass9 sslmode=off",
		"user":     "bob",
		"pwd":      "abc", // too short: "abc" would be masked everywhere
		"secret":   "password",
		"apikey":   12345678,
	})
	for _, tc := range []struct{ in, want string }{
		{"login failed for s3cr3t-pw: denied", "login failed for ******: denied"},
		{`connect "s3cr3t-pw" refused`, `connect "******" refused`},
		{"http 401: invalid bearer tok.en.value", "http 401: invalid bearer ******"},
		{"broker said: bad password hunter2@x for bob", "broker said: bad password ****** for bob"},
		{"dial failed: hunter2%40x", "dial failed: ******"},
		{"pq: password dsnpass9 rejected", "pq: password ****** rejected"},
		{"key 12345678 refused", "key ****** refused"},
		{"property \"pwd\" is abc, want a password", ""},
		{"s3cr3t-pwd and xs3cr3t-pw are other words", ""},
		{fmt.Sprintf("%q", "s3cr3t-pw"), `"******"`},
		{url.QueryEscape("a=s3cr3t-pw"), "a%3D******"},
	} {
		if tc.want == "" {
			tc.want = tc.in
		}
		if got := MaskText(tc.in); got != tc.want {
			t.Errorf("MaskText(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if twice := MaskText(MaskText(tc.in)); twice != MaskText(tc.in) {
			t.Errorf("MaskText not idempotent on %q: %q", tc.in, twice)
		}
	}
	// A JSON-quoted secret with a quote in it.
	RegisterSecretValue(`qu"ote`)
	b, _ := json.Marshal(map[string]string{"msg": `bad qu"ote`})
	if got := MaskText(string(b)); got != `{"msg":"bad ******"}` {
		t.Errorf("JSON form: %s", got)
	}
	// Catalog entities and the configuration.
	RegisterSecretsIn(struct {
		Definition json.RawMessage
		SQL        string
	}{json.RawMessage(`{"actions":[{"mqtt":{"passphrase":"ruleSecret1"}}]}`), `SELECT rest_call("http://u:sqlPw77@h") FROM s`})
	cfg := &config.Config{}
	cfg.Basic.AESKey = "MTIzNDU2Nzg5MDEyMzQ1Ng=="
	cfg.Basic.Catalog = "postgres://kuiper:catPw42@db:5432/k"
	cfg.Basic.Connection = map[string]any{"mqtt": map[string]any{"conn1": map[string]any{"credentials": "connCred1"}}}
	RegisterConfigSecrets(cfg)
	got := MaskText("ruleSecret1 sqlPw77 MTIzNDU2Nzg5MDEyMzQ1Ng== catPw42 connCred1")
	if got != strings.TrimSpace(strings.Repeat(MaskedValue+" ", 5)) {
		t.Errorf("catalog and config secrets: %q", got)
	}
}

// TestKnownSecretsBounded checks that the set keeps at most
// maxSecretValues values, forgetting the least recently registered.
func TestKnownSecretsBounded(t *testing.T) {
	t.Cleanup(known.reset)
	known.reset()
	RegisterSecretValue("first-secret")
	RegisterSecretValue("kept-secret")
	for i := range maxSecretValues - 1 {
		if i == maxSecretValues/2 {
			RegisterSecretValue("kept-secret") // registered again: moved to the back
		}
		RegisterSecretValue(fmt.Sprintf("value%05d", i))
	}
	known.mu.RLock()
	n, bytes := known.order.Len(), known.bytes
	known.mu.RUnlock()
	if n != maxSecretValues || bytes > maxSecretBytes {
		t.Fatalf("%d values, %d bytes", n, bytes)
	}
	if got := MaskText("first-secret kept-secret value00000 value04094"); got != "first-secret ****** ****** ******" {
		t.Errorf("eviction: %q", got)
	}
	RegisterSecretValue(strings.Repeat("x", maxSecretLen+1))
	if known.order.Len() != maxSecretValues {
		t.Error("a value longer than maxSecretLen was registered")
	}
}

// FuzzMaskKnown checks that masking with known secrets is stable.
func FuzzMaskKnown(f *testing.F) {
	f.Add("abcd", "xabcd abcd abcdabcd ab-cd*")
	f.Add("a***", "a*** a****** tcp://u:a***@h")
	f.Add("p@ss:w0rd", "password=p@ss:w0rd u:p@ss:w0rd@tcp(h)")
	f.Fuzz(func(t *testing.T, secret, s string) {
		known.reset()
		defer known.reset()
		RegisterSecretValue(secret)
		m := MaskText(s)
		if again := MaskText(m); again != m {
			t.Errorf("MaskText is not stable with secret %q:\n%q\n%q", secret, m, again)
		}
	})
}
