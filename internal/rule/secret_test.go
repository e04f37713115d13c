package rule

import (
	"errors"
	"strings"
	"testing"
)

func TestMaskText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"tcp://user:pass@host:1883", "tcp://user:******@host:1883"},
		{"postgres://u:p%40ss@db:5432/x?sslmode=disable", "postgres://u:******@db:5432/x?sslmode=disable"},
		{"user:pw@tcp(db:3306)/x", "user:******@tcp(db:3306)/x"},
		{"http://h/x?a=1&token=abc&access_token=def", "http://h/x?a=1&token=******&access_token=******"},
		{"http://h/x?api_key=k1&apikey=k2&Signature=s", "http://h/x?api_key=******&apikey=******&Signature=******"},
		{"host=db password=secret sslmode=off", "host=db password=****** sslmode=off"},
		{`{"password":"pw","server":"tcp://h"}`, `{"password":"******","server":"tcp://h"}`},
		{"Authorization: Bearer abc.def", "Authorization: ******"},
		{"map[X-Api-Key:k1 url:http://h]", "map[X-Api-Key:****** url:http://h]"},
		{"send to http://h:80/x: connection refused", "send to http://h:80/x: connection refused"},
		{"SELECT a FROM s WHERE b = 1", "SELECT a FROM s WHERE b = 1"},
		{"tcp://u:******@h", "tcp://u:******@h"},
	} {
		if got := MaskText(tc.in); got != tc.want {
			t.Errorf("MaskText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestMaskPropsHeadersAndURLs(t *testing.T) {
	in := map[string]any{
		"url":     "https://u:pw@h/x?token=t",
		"headers": map[string]any{"Authorization": "Bearer b", "Cookie": "c=1", "Accept": "json"},
		"brokers": []any{"tcp://a:pw2@h1", "tcp://h2"},
	}
	out := MaskProps(in)
	s := strings.Join([]string{out["url"].(string), out["brokers"].([]any)[0].(string)}, " ")
	if strings.Contains(s, "pw") || strings.Contains(s, "token=t") {
		t.Errorf("url secrets shown: %s", s)
	}
	h := out["headers"].(map[string]any)
	if h["Authorization"] != MaskedValue || h["Cookie"] != MaskedValue || h["Accept"] != "json" {
		t.Errorf("headers: %v", h)
	}
	if !HasSecrets(map[string]any{"url": "tcp://u:p@h"}) || HasSecrets(map[string]any{"url": "tcp://h"}) {
		t.Error("HasSecrets misses a URL password")
	}
}

func TestRestorePropsEndpoint(t *testing.T) {
	old := map[string]any{"server": "tcp://h:1883", "password": "pw", "url": "http://u:upw@w/x",
		"headers": map[string]any{"Authorization": "Bearer t"}}
	masked := MaskProps(old)
	got, changed, err := RestoreProps(masked, old)
	if err != nil || !changed || got["password"] != "pw" || got["url"] != "http://u:upw@w/x" || got["headers"].(map[string]any)["Authorization"] != "Bearer t" {
		t.Fatalf("unchanged endpoints: %v %v %v", got, changed, err)
	}
	for _, tc := range []struct {
		name  string
		edit  func(m map[string]any)
		wants string
	}{
		{"server", func(m map[string]any) { m["server"] = "tcp://evil:1883" }, `"headers.Authorization" is masked (******) but "server" changed`},
		{"url host", func(m map[string]any) { m["url"] = "http://u:******@evil/x" }, `but "url" changed`},
		{"url host alone", func(m map[string]any) {
			m["url"] = "http://u:******@evil/x"
			delete(m, "password")
			delete(m, "headers")
		}, `"url" carries a masked secret`},
		{"nested header under a new url", func(m map[string]any) { m["url"] = "http://u:******@evil/x"; delete(m, "password") }, "masked"},
		{"new port", func(m map[string]any) { m["port"] = 1 }, `"port" changed`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := MaskProps(old)
			tc.edit(m)
			_, _, err := RestoreProps(m, old)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.wants) {
				t.Fatalf("err = %v, want ErrInvalid containing %s", err, tc.wants)
			}
		})
	}
	if got, _, err := RestoreProps(map[string]any{"server": "tcp://evil", "password": "new"}, old); err != nil || got["password"] != "new" {
		t.Fatalf("a new secret for a new server: %v %v", got, err)
	}
}
