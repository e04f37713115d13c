package rule

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/rekuiper/rekuiper/internal/sql/scanner"
	"github.com/rekuiper/rekuiper/internal/sql/token"
)

// MaskedValue replaces a secret property value in REST responses and logs.
const MaskedValue = "******"

// IsSecretKey reports whether a property, header or parameter name holds a
// secret: any name containing "password", "passwd", "secret", "token",
// "apikey", "api_key", "api-key" or "signature", the credential-carrying
// headers Authorization, Proxy-Authorization, Cookie and Set-Cookie, and
// privateKey, privateKeyRaw, aesKey (case-insensitively). certificationRaw
// and other certificates are public and not secret.
func IsSecretKey(k string) bool {
	l := strings.ToLower(k)
	switch l {
	case "privatekey", "privatekeyraw", "private_key", "aeskey", "key_password",
		"authorization", "proxy-authorization", "cookie", "set-cookie", "sig":
		return true
	}
	for _, s := range []string{"password", "passwd", "secret", "token", "apikey", "api_key", "api-key", "signature"} {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

// declaredSecrets maps a connector type (lower-cased) to the lower-cased
// names of the properties its specs declare secret; it is replaced, never
// changed. A name is secret for its type only: the sql sink's url is
// secret, a rest sink's url is an endpoint.
var (
	declaredSecrets   atomic.Pointer[map[string]map[string]bool]
	declaredSecretsMu sync.Mutex
)

// RegisterSecretKey records that connectors of type typ hold a secret in
// property name: connector registration calls it for each property a spec
// declares secret, so that an extension's secret whose name the built-in
// list (IsSecretKey) does not know is masked too (MaskPropsOf).
func RegisterSecretKey(typ, name string) {
	t, l := strings.ToLower(strings.TrimSpace(typ)), strings.ToLower(strings.TrimSpace(name))
	// An endpoint (the sql sink's url) is never masked whole: the
	// credentials in it are (MaskText), and restoring a masked secret
	// compares it (RestoreProps).
	if l == "" || IsSecretKey(l) || isEndpointKey(l) || declaredOf(t)[l] {
		return
	}
	declaredSecretsMu.Lock()
	defer declaredSecretsMu.Unlock()
	next := map[string]map[string]bool{}
	if cur := declaredSecrets.Load(); cur != nil {
		maps.Copy(next, *cur)
	}
	names := maps.Clone(next[t])
	if names == nil {
		names = map[string]bool{}
	}
	names[l] = true
	next[t] = names
	declaredSecrets.Store(&next)
}

func declaredOf(typ string) map[string]bool {
	if cur := declaredSecrets.Load(); cur != nil {
		return (*cur)[strings.ToLower(typ)]
	}
	return nil
}

// MaskPropsOf masks the properties of a connector of type typ: MaskProps,
// and every non-empty top-level property its spec declares secret.
func MaskPropsOf(typ string, props map[string]any) map[string]any {
	out := MaskProps(props)
	if declared := declaredOf(typ); len(declared) > 0 {
		for k, v := range out {
			if v != nil && v != "" && declared[strings.ToLower(k)] {
				out[k] = MaskedValue
			}
		}
	}
	return out
}

// HasSecretsOf reports whether MaskPropsOf would change props.
func HasSecretsOf(typ string, props map[string]any) bool {
	if HasSecrets(props) {
		return true
	}
	declared := declaredOf(typ)
	for k, v := range props {
		if v != nil && v != "" && declared[strings.ToLower(k)] {
			return true
		}
	}
	return false
}

// secretWords is the pattern of secret names inside free text (URL query
// parameters, DSNs, JSON and Go map echoes, header lines).
const secretWords = `[\w.-]*(?:password|passwd|pwd|secret|token|apikey|api_key|api-key|signature|authorization|cookie|privatekey|aeskey)[\w.-]*|sig`

var (
	// scheme://user:password@ — the password of a URL's userinfo, up to the
	// last @ before the path or query (a password may hold an unescaped @).
	userinfoRE = regexp.MustCompile(`(\b[A-Za-z][A-Za-z0-9+.-]*://[^\s/?#:@"']*:)([^\s/?#"']+)@`)
	// user:password@tcp(host) — MySQL DSNs, which have no scheme.
	mysqlRE = regexp.MustCompile(`(^|[\s"'])([^\s:/@"']+:)([^\s/@"']+)@(tcp|unix)\(`)
	// Cookie: a=b; c=d — a cookie header line is secret to its end.
	cookieRE = regexp.MustCompile(`(?i)(^|[^\w.-])((?:set-)?cookie\s*:\s*)([^\r\n"]+)`)
	// name=value, name: value, "name":"value", \"name\":\"value\" (JSON
	// inside a JSON string) for secret names. The value is a quoted string
	// (escapes and blanks included), a bracketed list (Go's print of
	// http.Header, a JSON array), or a bare word with an optional
	// authorization scheme.
	pairRE = regexp.MustCompile(`(?i)(^|[^\w.-])((?:\\?")?(?:` + secretWords + `)(?:\\?")?\s*[:=]\s*)(` +
		`\\"(?:[^"\\]|\\[^"])*\\"|"(?:[^"\\]|\\.)*"|'[^']*'|\[[^\]]*\]|` +
		`(?:(?:Bearer|Basic|Digest|Token)\s+)?[^\s"&;,}\]]+)`)
)

// MaskText returns s with every secret it can recognise replaced by
// MaskedValue: URL userinfo passwords (tcp://user:pass@host,
// postgres://u:pass@...), MySQL DSN passwords, cookie header lines, and
// the values of secret names (see IsSecretKey) in query parameters, DSN
// key=value pairs, header lines and JSON or Go map echoes, quoted or
// listed. Rule SQL, error messages and log lines go through it. It is
// idempotent: MaskText(MaskText(s)) == MaskText(s).
func MaskText(s string) string {
	if !strings.ContainsAny(s, "@=:") {
		return s
	}
	s = userinfoRE.ReplaceAllString(s, "${1}"+MaskedValue+"@")
	s = mysqlRE.ReplaceAllString(s, "${1}${2}"+MaskedValue+"@${4}(")
	s = cookieRE.ReplaceAllString(s, "${1}${2}"+MaskedValue)
	return pairRE.ReplaceAllStringFunc(s, func(m string) string {
		sub := pairRE.FindStringSubmatch(m)
		return sub[1] + sub[2] + maskedLike(sub[3])
	})
}

// maskedLike returns MaskedValue in the quoting or brackets of v, so that
// masked JSON stays JSON.
func maskedLike(v string) string {
	for _, q := range []string{`\"`, `"`, `'`} {
		if len(v) >= 2*len(q) && strings.HasPrefix(v, q) && strings.HasSuffix(v, q) {
			return q + MaskedValue + q
		}
	}
	if len(v) >= 2 && v[0] == '[' && v[len(v)-1] == ']' {
		inner := strings.TrimSpace(v[1 : len(v)-1])
		if strings.HasPrefix(inner, `"`) {
			return `["` + MaskedValue + `"]`
		}
		return "[" + MaskedValue + "]"
	}
	return MaskedValue
}

// HasSecrets reports whether props holds a non-empty secret at any depth:
// a value at or below a secret key, or a string with a secret in it
// (MaskText).
func HasSecrets(props map[string]any) bool {
	return hasSecret(props, false)
}

func hasSecret(v any, secret bool) bool {
	switch x := v.(type) {
	case nil:
		return false
	case map[string]any:
		for k, e := range x {
			if hasSecret(e, secret || IsSecretKey(k)) {
				return true
			}
		}
		return false
	case []any:
		for _, e := range x {
			if hasSecret(e, secret) {
				return true
			}
		}
		return false
	case string:
		return secret && x != "" || MaskText(x) != x
	}
	return secret
}

// MaskProps returns a deep copy of props in which every non-empty value at
// or below a secret key (see IsSecretKey), at any depth and in every list
// element, is MaskedValue, and every other string has its embedded
// secrets masked (see MaskText).
func MaskProps(props map[string]any) map[string]any {
	if props == nil {
		return nil
	}
	return maskValue(props, false).(map[string]any)
}

// maskValue masks v; secret says that v is held at or below a secret key.
func maskValue(v any, secret bool) any {
	switch x := v.(type) {
	case nil:
		return nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = maskValue(e, secret || IsSecretKey(k))
		}
		return out
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = maskValue(e, secret)
		}
		return l
	case string:
		if secret && x != "" {
			return MaskedValue
		}
		return MaskText(x)
	}
	if secret {
		return MaskedValue
	}
	return v
}

// MaskSQL returns the SQL statement sql with the secrets in its string
// literals and comments masked (see MaskText); keywords, names and
// operators are kept as written, so the result parses as sql does.
func MaskSQL(sql string) string {
	if !strings.ContainsAny(sql, "@=:") {
		return sql
	}
	var b strings.Builder
	sc := scanner.New(sql)
	last := 0
	for {
		it := sc.Scan()
		b.WriteString(MaskText(sql[last:it.Pos.Offset])) // blanks and comments
		text := sql[it.Pos.Offset:it.End]
		switch it.Tok {
		case token.STRING: // inside the quotes: a quote ends no secret
			text = maskLiteral(text)
		case token.ILLEGAL:
			text = MaskText(text)
		}
		b.WriteString(text)
		last = it.End
		if it.Tok == token.EOF {
			return b.String()
		}
	}
}

// maskLiteral masks the content of the SQL string literal lit (quotes
// included). When masking would end the literal early (a masked value
// next to an escaped quote), the whole content is masked instead.
func maskLiteral(lit string) string {
	q := lit[:1]
	m := q + MaskText(lit[1:len(lit)-1]) + q
	if m == lit {
		return lit
	}
	if it := scanner.New(m).Scan(); it.Tok != token.STRING || it.End != len(m) {
		return q + MaskedValue + q
	}
	return m
}

// RestoreText returns stored when given is stored with its secrets masked
// by mask (a statement or URL sent back as GET or export showed it), and
// given otherwise. A given text that carries a masked value but differs
// from the masked stored one is refused with an error wrapping ErrInvalid:
// its secret would go somewhere else. what names the text in the error.
func RestoreText(what, given, stored string, mask func(string) string) (string, error) {
	if !strings.Contains(given, MaskedValue) {
		return given, nil
	}
	masked := mask(stored)
	switch {
	case masked == given:
		return stored, nil
	case masked == stored:
		return given, nil // the stored text has no secret to keep
	}
	return "", fmt.Errorf("%w: %s carries a masked value (%s) but differs from the stored one; send the secret again", ErrInvalid, what, MaskedValue)
}

// endpointKeys name the properties that say where a secret is sent. A
// masked secret sent back is restored only while they are unchanged.
var endpointKeys = []string{"server", "servers", "url", "urls", "host", "hosts", "brokers", "broker", "addr", "address", "addresses", "datasource", "dsn", "connection", "connectionstring", "endpoint", "endpoints", "port"}

func isEndpointKey(k string) bool {
	return slices.Contains(endpointKeys, strings.ToLower(k))
}

// changedEndpoint returns the first endpoint property of props whose value
// differs from old's, comparing masked forms (a URL sent back with its
// password masked is the same endpoint).
func changedEndpoint(props, old map[string]any) (string, bool) {
	keys := slices.Sorted(maps.Keys(props))
	for k := range old {
		if _, ok := props[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !isEndpointKey(k) {
			continue
		}
		if fmt.Sprint(maskValue(props[k], false)) != fmt.Sprint(maskValue(old[k], false)) {
			return k, true
		}
	}
	return "", false
}

// RestoreProps returns a copy of props in which every MaskedValue at or
// below a secret key, and every string equal to the masked form of the
// stored string (a URL whose password came back masked), is replaced by
// the value at the same path in old (the same key of a map, the same
// index of a list), and whether anything was replaced. A masked value is
// restored only while the endpoint it is sent to (server, url, host,
// brokers, datasource, ... in its map or any map above it) is unchanged;
// otherwise it fails with an error wrapping ErrInvalid that names the
// property. A masked value with nothing stored is kept as given. props is
// not modified.
func RestoreProps(props, old map[string]any) (map[string]any, bool, error) {
	if props == nil {
		return props, false, nil
	}
	r, changed, err := restoreValue(props, old, old != nil, restoreAt{})
	if err != nil || !changed {
		return props, false, err
	}
	return r.(map[string]any), true, nil
}

// restoreAt is where restoreValue is: the path of the value (for errors),
// whether it is held at or below a secret key, and the endpoint property
// that changed above it, if any.
type restoreAt struct {
	path   string
	secret bool
	moved  string
}

func (at restoreAt) key(k string) restoreAt {
	c := at
	if c.path != "" {
		c.path += "."
	}
	c.path += k
	c.secret = c.secret || IsSecretKey(k)
	return c
}

func (at restoreAt) index(i int) restoreAt {
	c := at
	c.path += fmt.Sprintf("[%d]", i)
	return c
}

// restoreValue restores the masked values of v from old (had says that
// old was stored at all) and returns the result and whether anything was
// replaced; containers are copied only when something in them was.
func restoreValue(v, old any, had bool, at restoreAt) (any, bool, error) {
	switch x := v.(type) {
	case map[string]any:
		o, _ := old.(map[string]any)
		if at.moved == "" && o != nil {
			if k, ok := changedEndpoint(x, o); ok {
				at.moved = at.key(k).path
			}
		}
		var out map[string]any
		for _, k := range slices.Sorted(maps.Keys(x)) { // sorted: the same error every time
			ov, ok := o[k]
			r, ch, err := restoreValue(x[k], ov, ok, at.key(k))
			if err != nil {
				return nil, false, err
			}
			if ch {
				if out == nil {
					out = maps.Clone(x)
				}
				out[k] = r
			}
		}
		return out, out != nil, nil
	case []any:
		o, _ := old.([]any)
		var out []any
		for i, e := range x {
			var oe any
			if i < len(o) {
				oe = o[i]
			}
			r, ch, err := restoreValue(e, oe, i < len(o), at.index(i))
			if err != nil {
				return nil, false, err
			}
			if ch {
				if out == nil {
					out = slices.Clone(x)
				}
				out[i] = r
			}
		}
		return out, out != nil, nil
	case string:
		return restoreString(x, old, had, at)
	}
	return v, false, nil
}

func restoreString(x string, old any, had bool, at restoreAt) (any, bool, error) {
	if !strings.Contains(x, MaskedValue) {
		return x, false, nil
	}
	os, isStr := old.(string)
	restorable := had && (x == MaskedValue && at.secret || isStr && MaskText(os) == x)
	switch {
	case !restorable && had && x != MaskedValue && (at.secret || isStr && MaskText(os) != os):
		return nil, false, fmt.Errorf("%w: property %q carries a masked secret (%s) but changed; send the secret again for the new endpoint", ErrInvalid, at.path, MaskedValue)
	case !restorable:
		return x, false, nil // nothing stored to leak: kept as given
	case at.moved != "":
		return nil, false, fmt.Errorf("%w: property %q is masked (%s) but %q changed; send the secret again for the new endpoint", ErrInvalid, at.path, MaskedValue, at.moved)
	}
	return old, true, nil
}
