package rule

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rekuiper/rekuiper/internal/sql/parser"
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
		{"http://u:p@ss@h/x?a=b@c", "http://u:******@h/x?a=b@c"},
		{"map[Authorization:[Bearer abc] Accept:[json]]", "map[Authorization:[******] Accept:[json]]"},
		{`{"Authorization":["Bearer abc"],"X-Api-Key":["k"]}`, `{"Authorization":["******"],"X-Api-Key":["******"]}`},
		{`{"password": "two words"}`, `{"password": "******"}`},
		{`{"token":"a\"b"}`, `{"token":"******"}`},
		{`password='two words' host=db`, `password='******' host=db`},
		{`{\"secret\":\"two words\",\"a\":1}`, `{\"secret\":\"******\",\"a\":1}`},
		{"Cookie: a=1; b=2", "Cookie: ******"},
		{"Set-Cookie: sid=1; Path=/", "Set-Cookie: ******"},
		{"X-Api-Key: k1x", "X-Api-Key: ******"},
		{"Authorization: eyJhbGciOi.eyJzdWIi.sig", "Authorization: ******"},
		{`{"token": 12345}`, `{"token": ******}`},
		{"token: 'abc def' user=u", "token: '******' user=u"},
		// The words of messages stay as written.
		{"unauthorized: missing token: send the header Authorization: <jwt>", ""},
		{"unauthorized: missing token: expected the header Authorization", ""},
		{"unauthorized: invalid token: token has invalid claims: token is expired", ""},
		{`import "/etc/passwd": file does not exist`, ""},
		{"sign token: the issuer (public key file name) is required", ""},
		{"invalid cookie: want name=value", ""},
		{"want postgres://user:<password>@host:5432/db or user:<password>@tcp(host)/db", ""},
		{"the secret: missing; the password: too short; the header Authorization: missing", ""},
		{"token: password=pw1", "token: password=******"},
	} {
		if tc.want == "" {
			tc.want = tc.in
		}
		if got := MaskText(tc.in); got != tc.want {
			t.Errorf("MaskText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestMaskTextIdempotent(t *testing.T) {
	for _, in := range []string{
		`{"headers":[{"Authorization":"Bearer a b"}],"url":"http://u:p@h?token=t"}`,
		"map[Cookie:[a=1; b=2]] password='x y' u:pw@tcp(h)",
	} {
		once := MaskText(in)
		if twice := MaskText(once); twice != once {
			t.Errorf("MaskText not idempotent:\n%s\n%s", once, twice)
		}
	}
}

func TestMaskSQL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`SELECT a FROM s WHERE token = b`, `SELECT a FROM s WHERE token = b`},
		{`SELECT rest_call("http://u:pw@h/x?api_key=k") AS token FROM s`, `SELECT rest_call("http://u:******@h/x?api_key=******") AS token FROM s`},
		{`SELECT a FROM s WHERE h = 'Authorization: Bearer abc' -- password=pw` + "\nAND b = 1", `SELECT a FROM s WHERE h = 'Authorization: ******' -- password=******` + "\nAND b = 1"},
		{`SELECT a FROM s /* u:pw@tcp(db) */`, `SELECT a FROM s /* u:******@tcp(db) */`},
		{`SELECT "tcp://u:pw@h`, `SELECT "tcp://u:******@h`},
	} {
		if got := MaskSQL(tc.in); got != tc.want {
			t.Errorf("MaskSQL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestRestoreText(t *testing.T) {
	stored := `SELECT f("http://u:pw@h") FROM s`
	if got, err := RestoreText("sql", MaskSQL(stored), stored, MaskSQL); err != nil || got != stored {
		t.Fatalf("unchanged: %q %v", got, err)
	}
	if got, err := RestoreText("sql", `SELECT 1 FROM s`, stored, MaskSQL); err != nil || got != `SELECT 1 FROM s` {
		t.Fatalf("new text: %q %v", got, err)
	}
	moved := `SELECT f("http://u:******@evil") FROM s`
	if _, err := RestoreText("sql", moved, stored, MaskSQL); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "sql carries a masked value") {
		t.Fatalf("moved: %v", err)
	}
}

func TestMaskPropsLists(t *testing.T) {
	in := map[string]any{
		"headers":   []any{map[string]any{"Authorization": []any{"Bearer a"}, "Accept": "json"}, map[string]any{"X-Api-Key": "k"}},
		"tokens":    []any{"t1", "t2"},
		"secret":    map[string]any{"user": "u", "pass": "p", "n": 3},
		"endpoints": []any{map[string]any{"url": "http://u:pw@h1", "extra": map[string]any{"password": "p2"}}},
	}
	out := MaskProps(in)
	b, _ := json.Marshal(out)
	for _, s := range []string{"Bearer a", `"k"`, "t1", "t2", `"p"`, ":pw@", "p2", `"u"`} {
		if strings.Contains(string(b), s) {
			t.Errorf("MaskProps leaks %s: %s", s, b)
		}
	}
	if !strings.Contains(string(b), `"Accept":"json"`) || !HasSecrets(map[string]any{"l": []any{map[string]any{"token": "x"}}}) {
		t.Errorf("masked too much or HasSecrets missed a listed secret: %s", b)
	}
	if _, err := json.Marshal(in); err != nil || in["tokens"].([]any)[0] != "t1" {
		t.Fatal("MaskProps modified its input")
	}
}

// wantRefused checks that old, masked and edited, is refused by
// RestoreProps with an ErrInvalid containing wants.
func wantRefused(t *testing.T, old map[string]any, edit func(map[string]any), wants string) {
	t.Helper()
	m := MaskProps(old)
	edit(m)
	_, _, err := RestoreProps(m, old)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), wants) {
		t.Fatalf("err = %v, want ErrInvalid containing %s", err, wants)
	}
}

func TestRestorePropsLists(t *testing.T) {
	old := map[string]any{
		"headers": []any{map[string]any{"Authorization": "Bearer a"}, map[string]any{"X-Api-Key": "k"}},
		"tokens":  []any{"t1", "t2"},
		"urls":    []any{"http://u:pw1@h1", "http://u:pw2@h2"},
		"targets": []any{map[string]any{"url": "http://h3", "token": "t3"}},
	}
	got, changed, err := RestoreProps(MaskProps(old), old)
	if err != nil || !changed || !reflect.DeepEqual(got, old) {
		t.Fatalf("round trip: %v %v %v", got, changed, err)
	}
	for _, tc := range []struct {
		name  string
		edit  func(m map[string]any)
		wants string
	}{
		{"list element url host", func(m map[string]any) {
			m["targets"].([]any)[0].(map[string]any)["url"] = "http://evil"
		}, `"targets[0].token" is masked (******) but "targets[0].url" changed`},
		{"listed url host", func(m map[string]any) {
			m["urls"].([]any)[1] = "http://u:******@evil"
		}, `"headers[0].Authorization" is masked (******) but "urls" changed`},
		{"listed url alone", func(m map[string]any) {
			m["urls"] = []any{"http://u:******@h1", "http://u:******@evil"}
			delete(m, "headers")
			delete(m, "tokens")
			delete(m, "targets")
		}, `but "urls" changed`},
	} {
		t.Run(tc.name, func(t *testing.T) { wantRefused(t, old, tc.edit, tc.wants) })
	}
	// A list that grew: the new element has nothing stored and is kept.
	m := MaskProps(old)
	m["tokens"] = append(m["tokens"].([]any), "t3")
	got, _, err = RestoreProps(m, old)
	if err != nil || !reflect.DeepEqual(got["tokens"], []any{"t1", "t2", "t3"}) {
		t.Fatalf("grown list: %v %v", got["tokens"], err)
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
		t.Run(tc.name, func(t *testing.T) { wantRefused(t, old, tc.edit, tc.wants) })
	}
	if got, _, err := RestoreProps(map[string]any{"server": "tcp://evil", "password": "new"}, old); err != nil || got["password"] != "new" {
		t.Fatalf("a new secret for a new server: %v %v", got, err)
	}
}

// FuzzMaskSQL checks that masking never panics and keeps a statement that
// parses parseable (the masked SQL GET shows can be sent back).
func FuzzMaskSQL(f *testing.F) {
	for _, s := range []string{
		`SELECT rest_call("http://u:pw@h/x?token=t") AS a FROM s WHERE b = 'password=x y'`,
		`SELECT "password=\"abc" FROM s`,
		`SELECT a FROM s -- token=abc`,
		`SELECT '{"Authorization":["Bearer x"]}' FROM s /* u:pw@tcp(h) */`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		m := MaskSQL(sql)
		if _, err := parser.ParseSelect(sql); err != nil {
			return
		}
		if _, err := parser.ParseSelect(m); err != nil {
			t.Errorf("masked SQL no longer parses: %v\n%q\n%q", err, sql, m)
		}
	})
}

// FuzzMaskText checks that masking any text (an error message, a log
// line) never panics and, for valid UTF-8, is stable.
func FuzzMaskText(f *testing.F) {
	for _, s := range []string{
		`Post "http://u:pw@h/x?token=t": map[Authorization:[Bearer x]] password='a b'`,
		`{\"secret\":\"x\"} Cookie: a=1; b=2 u:pw@tcp(h)`,
		`token:[`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m := MaskText(s)
		if utf8.ValidString(s) && MaskText(m) != m {
			t.Errorf("MaskText is not stable:\n%q\n%q", m, MaskText(m))
		}
	})
}

func TestMaskStreamSQL(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"secret column", `CREATE STREAM s (api_token STRING DEFAULT 'tok-1', n BIGINT DEFAULT 3) WITH (TYPE="memory")`,
			`CREATE STREAM s (api_token STRING DEFAULT '******', n BIGINT DEFAULT 3) WITH (TYPE="memory")`},
		{"double quotes and escapes", `CREATE STREAM s (Password STRING DEFAULT "a\"b", note STRING DEFAULT "plain") WITH (TYPE="memory")`,
			`CREATE STREAM s (Password STRING DEFAULT "******", note STRING DEFAULT "plain") WITH (TYPE="memory")`},
		{"inside a secret struct", `CREATE STREAM s (secret STRUCT(a STRING DEFAULT 'x1', b ARRAY(STRUCT(c STRING DEFAULT 'x2'))), user STRING DEFAULT 'bob') WITH (TYPE="memory")`,
			`CREATE STREAM s (secret STRUCT(a STRING DEFAULT '******', b ARRAY(STRUCT(c STRING DEFAULT '******'))), user STRING DEFAULT 'bob') WITH (TYPE="memory")`},
		{"secret in a plain column", `CREATE TABLE t (url STRING DEFAULT 'mqtt://u:pw@h:1883') WITH (TYPE="memory")`,
			`CREATE TABLE t (url STRING DEFAULT 'mqtt://u:******@h:1883') WITH (TYPE="memory")`},
		{"empty and null defaults", `CREATE STREAM s (token STRING DEFAULT '', secret STRING DEFAULT NULL) WITH (TYPE="memory")`,
			`CREATE STREAM s (token STRING DEFAULT '', secret STRING DEFAULT NULL) WITH (TYPE="memory")`},
		{"does not parse", `CREATE STREAM s (token STRING DEFAULT 'x' WITH (TYPE="memory", password="pw")`,
			`CREATE STREAM s (token STRING DEFAULT 'x' WITH (TYPE="memory", password="******")`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := MaskStreamSQL(tc.in)
			if got != tc.want {
				t.Fatalf("MaskStreamSQL(%q)\n = %q\nwant %q", tc.in, got, tc.want)
			}
			if again := MaskStreamSQL(got); again != got {
				t.Errorf("not idempotent: %q", again)
			}
			if restored, err := RestoreText("stream", got, tc.in, MaskStreamSQL); err != nil || restored != tc.in {
				t.Errorf("RestoreText of the masked statement: %q, %v", restored, err)
			}
		})
	}
}
