package rule

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"

	"github.com/rekuiper/rekuiper/internal/sql/scanner"
	"github.com/rekuiper/rekuiper/internal/sql/token"
)

// MaskedValue replaces a secret property value in REST responses and logs.
const MaskedValue = "******"

// secretParts are the lower-cased parts that make a property, header or
// parameter name secret wherever they occur in it (api_token, saslPassword,
// X-Api-Key, aws_secret_access_key, db_pwd, credentialsJson).
var secretParts = []string{"password", "passwd", "pwd", "passphrase", "secret", "token", "apikey", "api_key", "api-key",
	"accesskey", "access_key", "access-key", "credential", "signature"}

// secretNames are the lower-cased names that are secret as a whole: the
// credential-carrying headers and the key properties.
var secretNames = []string{"privatekey", "privatekeyraw", "private_key", "aeskey", "key_password",
	"authorization", "proxy-authorization", "cookie", "set-cookie", "sig"}

// IsSecretKey reports whether a property, header or parameter name holds a
// secret: any name containing "password", "passwd", "pwd", "passphrase",
// "secret", "token", "apikey", "api_key", "api-key", "accessKey",
// "access_key", "access-key", "credential" or "signature", the
// credential-carrying headers Authorization, Proxy-Authorization, Cookie
// and Set-Cookie, and privateKey, privateKeyRaw, aesKey (case-insensitively).
// certificationRaw and other certificates are public and not secret.
func IsSecretKey(k string) bool {
	l := strings.ToLower(k)
	if slices.Contains(secretNames, l) {
		return true
	}
	for _, s := range secretParts {
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
// parameters, DSNs, JSON and Go map echoes, header lines): a name holding
// one of secretParts or of the headers and keys of secretNames, or sig.
var secretWords = `[\w.-]*(?:` + strings.Join(secretParts, "|") + `|authorization|cookie|privatekey|private_key|aeskey)[\w.-]*|sig`

var (
	// scheme://user:password@ — the password of a URL's userinfo, up to the
	// last @ before the path or query (a password may hold an unescaped @).
	// Tried where a scheme starts (maskUserinfo).
	userinfoRE = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*://[^\s/?#:@"']*:)([^\s/?#"']+)@`)
	// user:password@tcp(host) — MySQL DSNs, which have no scheme.
	mysqlRE = regexp.MustCompile(`(^|[\s"'])([^\s:/@"']+:)([^\s/@"']+)@(tcp|unix)\(`)
	// Cookie: a=b; c=d — a cookie header line (its value starts with a
	// cookie's name=) is secret to its end.
	cookieRE = regexp.MustCompile(`(?i)(^|[^\w.-])((?:set-)?cookie[ \t]*:[ \t]*)([^\s=;,"\[\]]+=[^\r\n"]*)`)
	// pairRE, tried where a secret name starts (secretNamesIn): the name (sub
	// 1), bare or quoted ("name", \"name\" in JSON inside a JSON string;
	// pairKey checks the quotes), then = or : (sub 2), then a value (sub
	// 3): a quoted string (escapes and blanks included), a bracketed list
	// (Go's print of http.Header, a JSON array), or a bare word with an
	// optional authorization scheme. pairSecret decides whether the value
	// is a secret.
	pairRE = regexp.MustCompile(`(?i)^((?:\\?")?(?:` + secretWords + `)(?:\\?")?)` +
		`([ \t]*=[ \t]*|[ \t]*:[ \t]*)(` +
		`\\"(?:[^"\\]|\\[^"])*\\"|"(?:[^"\\]|\\.)*"|'[^']*'|\[[^\[\]]*\]|` +
		`(?:(?:Bearer|Basic|Digest|Token)[ \t]+)?[^\s"&;,}\]]+)`)
	// authSchemeRE is a value that starts with an authorization scheme.
	authSchemeRE = regexp.MustCompile(`(?i)^(?:Bearer|Basic|Digest|Token)[ \t]+\S`)
)

// MaskText returns s with every secret it can recognise replaced by
// MaskedValue, without touching the words of a message:
//   - every known secret value (RegisterSecretValue: what the
//     configuration, the catalog and the connectors' properties hold under
//     secret names), wherever it appears;
//   - URL userinfo passwords (tcp://user:pass@host, postgres://u:pass@...)
//     and MySQL DSN passwords (user:pass@tcp(host));
//   - cookie header lines (Cookie: a=1; b=2);
//   - the value after a secret name (see IsSecretKey) where the text is
//     structured: name=value (query parameters, DSN pairs, log attributes),
//     "name":value and name:value without a blank (JSON and Go map echoes,
//     quoted or listed), name: followed by a quoted or bracketed value, and
//     a credential header line (Authorization, Proxy-Authorization or a
//     hyphenated name such as X-Api-Key) whose value has an authorization
//     scheme (Authorization: Bearer x) or looks like a credential.
//
// A secret name followed by ": " and a plain word is prose ("missing token:
// send the header Authorization: <jwt>", "token: token is expired") and is
// kept, as are placeholders in angle brackets (<jwt>, <password>). Rule
// SQL, error messages and log lines go through MaskText. It is idempotent:
// MaskText(MaskText(s)) == MaskText(s).
func MaskText(s string) string {
	// Masking one secret can make another pattern match (a password masked
	// in a pair ends a DSN's user:password@tcp): masked again until stable.
	for range 4 {
		m := maskTextOnce(s)
		if m == s {
			break
		}
		s = m
	}
	return s
}

func maskTextOnce(s string) string {
	if !strings.ContainsAny(s, "@=:") {
		return maskKnown(s)
	}
	// Each pattern is tried only where the text has what it needs: the
	// regular expressions cost far more than these look-ups.
	s = maskFound(s, userinfoPasswords(s), func(string) string { return MaskedValue })
	if strings.Contains(s, "@tcp(") || strings.Contains(s, "@unix(") {
		s = mysqlRE.ReplaceAllStringFunc(s, func(m string) string {
			sub := mysqlRE.FindStringSubmatch(m)
			if isPlaceholder(sub[3]) {
				return m
			}
			return sub[1] + sub[2] + MaskedValue + "@" + sub[4] + "("
		})
	}
	if lower := asciiLower(s); strings.Contains(lower, "cookie") {
		s = cookieRE.ReplaceAllString(s, "${1}${2}"+MaskedValue)
	}
	return maskKnown(maskPairs(s))
}

// userinfoPasswords returns the passwords userinfoRE finds in the URLs of
// s, in order (placeholders such as <password> left out).
func userinfoPasswords(s string) []secretPair {
	var found []secretPair
	end := 0
	for off := 0; ; {
		i := strings.Index(s[off:], "://")
		if i < 0 || !strings.Contains(s[i+off:], "@") {
			return found
		}
		i += off
		off = i + 3
		// The scheme starts at its first letter after a word's end (\b).
		a := i
		for a > end && (isLetter(s[a-1]) || s[a-1] >= '0' && s[a-1] <= '9' || strings.IndexByte("+.-", s[a-1]) >= 0) {
			a--
		}
		for a < i && !(isLetter(s[a]) && (a == 0 || !asciiWord(s[a-1]))) {
			a++
		}
		sub := userinfoRE.FindStringSubmatchIndex(s[a:])
		if a == i || sub == nil || isPlaceholder(s[a+sub[4]:a+sub[5]]) {
			continue
		}
		found = append(found, secretPair{a + sub[4], a + sub[5], s[a+sub[4] : a+sub[5]]})
		end = a + sub[1]
		off = end
	}
}

// maskFound returns s with the values found replaced by mask(value).
func maskFound(s string, found []secretPair, mask func(string) string) string {
	if len(found) == 0 {
		return s
	}
	var b strings.Builder
	last := 0
	for _, p := range found {
		b.WriteString(s[last:p.start])
		b.WriteString(mask(p.val))
		last = p.end
	}
	b.WriteString(s[last:])
	return b.String()
}

func asciiWord(b byte) bool { return b < 0x80 && wordByte(b) }

func isLetter(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' }

// secretWordParts are the words one of which every match of secretWords
// holds (sig is in signature).
var secretWordParts = append(slices.Clone(secretParts), "authorization", "cookie", "privatekey", "private_key", "aeskey", "sig")

// asciiLower is s with its ASCII letters in lower case, byte for byte (an
// offset in it is one in s).
func asciiLower(s string) string {
	i := strings.IndexFunc(s, func(r rune) bool { return r >= 'A' && r <= 'Z' })
	if i < 0 {
		return s
	}
	b := []byte(s)
	for j := i; j < len(b); j++ {
		if c := b[j]; c >= 'A' && c <= 'Z' {
			b[j] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func nameByte(b byte) bool {
	return b == '_' || b == '.' || b == '-' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// secretName is a name in a text holding a part of a secret name: s[start:end]
// with its opening quote, if it has one (the closing one is after end).
type secretName struct{ start, end int }

// secretNamesIn returns, in order, where pairRE may match in s: each name (a
// run of word characters, dots and hyphens) holding a part of a secret
// name, from its opening quote if it has one.
func secretNamesIn(s string) []secretName {
	lower := asciiLower(s)
	var at []int // where the parts occur
	for _, w := range secretWordParts {
		for off := 0; ; {
			i := strings.Index(lower[off:], w)
			if i < 0 {
				break
			}
			at = append(at, off+i)
			off += i + len(w)
		}
	}
	slices.Sort(at)
	var names []secretName
	end := 0 // of the last name
	for _, i := range at {
		if i < end {
			continue // in the last name
		}
		a := i
		for a > end && nameByte(s[a-1]) {
			a--
		}
		for end = i; end < len(s) && nameByte(s[end]); end++ {
		}
		if a > 0 && s[a-1] == '"' {
			a--
			if a > 0 && s[a-1] == '\\' {
				a--
			}
		}
		names = append(names, secretName{a, end})
	}
	return names
}

// prose reports whether the name n of s is not followed by a value
// pairSecret could take for a secret: no = or : follows, or ": " and the
// next word of a message (a plain word after a name that is not
// valueKeyed). pairRE need not be tried there.
func prose(s string, n secretName) bool {
	j := n.end
	if strings.HasPrefix(s[j:], `"`) {
		j++
	} else if strings.HasPrefix(s[j:], `\"`) {
		j += 2
	}
	key := s[n.start:j]
	for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
		j++
	}
	switch {
	case j == len(s):
		return true
	case s[j] == '=':
		return false
	case s[j] != ':':
		return true
	}
	k := j + 1
	for k < len(s) && (s[k] == ' ' || s[k] == '\t') {
		k++
	}
	if k == j+1 || k == len(s) || strings.IndexByte(`"'[\`, s[k]) >= 0 {
		return false
	}
	return !valueKeyed(key)
}

// secretPair is a value found in a text: s[start:end] is val.
type secretPair struct {
	start, end int
	val        string
}

// maxPairLen bounds a name and its value, so that each match costs at most
// that much whatever the length of the text: a longer value is masked up
// to there (or not at all when it is quoted), unless it is a known secret.
const maxPairLen = 4096

// secretPairs returns the values pairRE finds after secret names in s
// that pairSecret says are secrets, in order and not overlapping. A value
// that is not a secret is searched for names in turn (token: password=x).
func secretPairs(s string) []secretPair {
	var found []secretPair
	end := 0
	for _, n := range secretNamesIn(s) {
		a := n.start
		if a < end || prose(s, n) {
			continue // inside a secret found, or a message's word
		}
		sub := pairRE.FindStringSubmatchIndex(s[a:min(len(s), a+maxPairLen)])
		if sub == nil {
			continue
		}
		key, sep, val := s[a+sub[2]:a+sub[3]], s[a+sub[4]:a+sub[5]], s[a+sub[6]:a+sub[7]]
		if k, ok := pairKey(key); ok && pairSecret(k, sep, val) {
			found = append(found, secretPair{a + sub[6], a + sub[7], val})
			end = a + sub[7]
		}
	}
	return found
}

// maskPairs masks the values secretPairs finds in s.
func maskPairs(s string) string { return maskFound(s, secretPairs(s), maskedLike) }

// pairKey returns the name pairRE found with its quotes when they match
// ("name", \"name\"), without an opening quote that has no closing one
// ("token:abc" printed by %q), and false for a closing quote that has no
// opening one (the end of a quoted path: "/etc/passwd": ...).
func pairKey(key string) (string, bool) {
	q := ""
	switch {
	case strings.HasPrefix(key, `\"`):
		q = `\"`
	case strings.HasPrefix(key, `"`):
		q = `"`
	}
	switch closed := len(key) > len(q) && strings.HasSuffix(key, `"`); {
	case q == "" && closed:
		return "", false
	case q != "" && !closed:
		return key[len(q):], true
	case q == `\"` && !strings.HasSuffix(key, `\"`), q == `"` && strings.HasSuffix(key, `\"`):
		return "", false
	}
	return key, true
}

// pairSecret reports whether val, found after the secret name key and the
// separator sep, is a secret rather than the next word of a message.
func pairSecret(key, sep, val string) bool {
	if isPlaceholder(val) {
		return false
	}
	if strings.Contains(sep, "=") || !strings.HasSuffix(sep, " ") && !strings.HasSuffix(sep, "\t") {
		return true // name=value, "name":value, name:value
	}
	// "name": value and name: value
	if quotedOrListed(val) {
		return true
	}
	if valueKeyed(key) {
		return authSchemeRE.MatchString(val) || credentialLike(val)
	}
	return false
}

// valueKeyed reports whether key ("name" or name, quotes included) is
// followed by ": " and a bare value where that value may be its secret: a
// JSON key (its value unquoted: a number), or a credential header
// (Authorization, Proxy-Authorization, a hyphenated name as X-Api-Key).
func valueKeyed(key string) bool {
	name := strings.ToLower(strings.Trim(key, `\"`))
	return strings.HasSuffix(key, `"`) || name == "authorization" || name == "proxy-authorization" || strings.Contains(name, "-")
}

// quotedOrListed reports whether v is quoted or bracketed.
func quotedOrListed(v string) bool {
	return len(v) >= 2 && (v[0] == '"' || v[0] == '\'' || v[0] == '[' || strings.HasPrefix(v, `\"`))
}

// isPlaceholder reports whether v is a placeholder such as <jwt> or
// <password>, shown by messages that say what to send.
func isPlaceholder(v string) bool {
	return len(v) > 2 && v[0] == '<' && v[len(v)-1] == '>' && !strings.ContainsAny(v[1:len(v)-1], "<>")
}

// credentialLike reports whether the bare word v looks like a credential
// rather than a word of a message: it holds a digit, a sign or an upper
// case letter after its first, or is 20 bytes or longer. A trailing
// full stop, comma or colon is punctuation.
func credentialLike(v string) bool {
	v = strings.TrimRight(v, ".:!?)")
	if len(v) >= 20 {
		return true
	}
	for i, r := range v {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z' && i == 0:
		case r >= 0x80 && unicode.IsLetter(r) && !unicode.IsUpper(r):
		default:
			return true
		}
	}
	return false
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
