package rule

import (
	"container/list"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/rekuiper/rekuiper/internal/config"
)

// Known secret values. MaskText masks, wherever they appear in a text, the
// values that were configured as secrets: RegisterSecretsIn and
// RegisterConfigSecrets record them when the configuration is loaded, when
// the catalog loads or stores a stream, rule, connection or confKey, and
// when a connector's properties are validated (Spec.Validate), so that an
// error text quoting a password, a token or a key (a driver's message, a
// broker's refusal) shows ****** in its place.
//
// The set is process-wide and bounded: at most maxSecretValues values and
// maxSecretBytes bytes; the value registered (or registered again) least
// recently goes first when a new one would pass either bound. A value is
// registered with the forms it takes in texts: as given, URL-escaped
// (query and path), and quoted by JSON and by Go's %q. A value is not
// registered when masking it would mask the words of messages or nothing
// useful:
//   - shorter than minSecretLen bytes (every "a" or "abc" would be masked),
//     or longer than maxSecretLen (a certificate key is masked by its name);
//   - equal, ignoring case, to a secret name ("password", "token",
//     "secret"): the message word and the secret cannot be told apart;
//   - holding ****** (already masked) or only asterisks.
//
// A value is masked only where it is not part of a longer word: "admin" is
// masked in "user admin:" and "u=admin%26", not in "administrator".
const (
	minSecretLen    = 4
	maxSecretLen    = 4096
	maxSecretValues = 4096
	maxSecretBytes  = 1 << 20
)

var known = &secretSet{byHead: map[uint32][]string{}, at: map[string]*list.Element{}, order: list.New()}

// secretSet is the set of known secret values, indexed by their first four
// bytes so that masking a text costs one map look-up per byte.
type secretSet struct {
	mu     sync.RWMutex
	byHead map[uint32][]string      // values by head, longest first
	at     map[string]*list.Element // each value's place in order
	order  *list.List               // values, least recently registered first
	bytes  int
}

// head is the index key of s, at least 4 bytes long.
func head(s string) uint32 {
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
}

// RegisterSecretValue records v (a string or a number, as configured under
// a secret name) as a secret MaskText masks wherever it appears. Values
// that would mask ordinary words are ignored (see the rule above).
func RegisterSecretValue(v any) {
	var s string
	switch x := v.(type) {
	case nil, bool:
		return
	case string:
		s = x
	default:
		s = fmt.Sprint(x)
	}
	if !registrable(s) {
		return
	}
	forms := []string{s}
	q := strconv.Quote(s)
	j, _ := json.Marshal(s)
	for _, f := range []string{url.QueryEscape(s), url.PathEscape(s), q[1 : len(q)-1], string(j[1 : len(j)-1])} {
		if !slices.Contains(forms, f) {
			forms = append(forms, f)
		}
	}
	known.add(forms)
}

func registrable(s string) bool {
	if len(s) < minSecretLen || len(s) > maxSecretLen || strings.Contains(s, MaskedValue) || strings.Trim(s, "*") == "" {
		return false
	}
	l := strings.ToLower(s)
	return !slices.Contains(secretParts, l) && !slices.Contains(secretNames, l)
}

func (k *secretSet) add(forms []string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, f := range forms {
		if e, ok := k.at[f]; ok {
			k.order.MoveToBack(e)
			continue
		}
		k.at[f] = k.order.PushBack(f)
		k.bytes += len(f)
		h := head(f)
		l := append(k.byHead[h], f)
		slices.SortStableFunc(l, func(a, b string) int { return len(b) - len(a) })
		k.byHead[h] = l
	}
	for k.order.Len() > maxSecretValues || k.bytes > maxSecretBytes {
		k.remove(k.order.Front())
	}
}

func (k *secretSet) remove(e *list.Element) {
	f := k.order.Remove(e).(string)
	delete(k.at, f)
	k.bytes -= len(f)
	h := head(f)
	l := slices.DeleteFunc(k.byHead[h], func(v string) bool { return v == f })
	if len(l) == 0 {
		delete(k.byHead, h)
	} else {
		k.byHead[h] = l
	}
}

// reset forgets every value (tests).
func (k *secretSet) reset() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.byHead, k.at, k.order, k.bytes = map[uint32][]string{}, map[string]*list.Element{}, list.New(), 0
}

// maskKnown masks the known secret values in s.
func maskKnown(s string) string { return known.mask(s) }

func wordByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= 0x80
}

func (k *secretSet) mask(s string) string {
	k.mu.RLock()
	defer k.mu.RUnlock()
	if len(k.at) == 0 || len(s) < minSecretLen {
		return s
	}
	var b *strings.Builder
	last := 0
	for i := 0; i+minSecretLen <= len(s); {
		n := k.matchAt(s, i)
		if n == 0 {
			i++
			continue
		}
		if b == nil {
			b = &strings.Builder{}
			b.Grow(len(s))
		}
		b.WriteString(s[last:i])
		b.WriteString(MaskedValue)
		i += n
		last = i
	}
	if b == nil {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// escapedBefore reports whether s[:i] ends with a URL escape (%3D), which
// ends a word.
func escapedBefore(s string, i int) bool {
	return i >= 3 && s[i-3] == '%' && isHex(s[i-2]) && isHex(s[i-1])
}

func isHex(b byte) bool {
	return b >= '0' && b <= '9' || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F'
}

// matchAt returns the length of the longest known value at s[i:] that is
// not part of a longer word, or 0.
func (k *secretSet) matchAt(s string, i int) int {
	for _, v := range k.byHead[head(s[i:])] {
		if !strings.HasPrefix(s[i:], v) {
			continue
		}
		if wordByte(v[0]) && i > 0 && wordByte(s[i-1]) && !escapedBefore(s, i) {
			continue
		}
		if end := i + len(v); wordByte(v[len(v)-1]) && end < len(s) && wordByte(s[end]) {
			continue
		}
		return len(v)
	}
	return 0
}

// RegisterSecretsIn records the secrets v holds (see RegisterSecretValue):
// every value at or below a secret name (IsSecretKey) at any depth, the
// credential after an authorization scheme (Bearer x), and the secrets
// MaskText finds inside other strings (URL and DSN passwords, name=value
// pairs). v is a properties map, a list, a string, or anything that
// encodes to JSON (a catalog entity: a rule's definition, a stream's SQL,
// a connection's or a confKey's properties).
func RegisterSecretsIn(v any) {
	registerIn(v, false, true)
}

func registerIn(v any, secret, encode bool) {
	switch x := v.(type) {
	case nil, bool:
	case map[string]any:
		for k, e := range x {
			registerIn(e, secret || IsSecretKey(k), encode)
		}
	case []any:
		for _, e := range x {
			registerIn(e, secret, encode)
		}
	case string:
		if secret {
			registerSecretString(x)
		} else {
			registerEmbedded(x)
		}
	case json.Number, float64, float32, int, int64, int32, uint, uint64, uint32:
		if secret {
			RegisterSecretValue(x)
		}
	default:
		if !encode {
			return
		}
		b, err := json.Marshal(v)
		var d any
		if err == nil && json.Unmarshal(b, &d) == nil {
			registerIn(d, secret, false)
		}
	}
}

// RegisterDeclaredSecret records the secret v of the property name that a
// connector's spec declares secret: all of it, or, for an endpoint (the
// sql sink's url), only the credentials inside it (see RegisterSecretKey).
func RegisterDeclaredSecret(name string, v any) {
	if s, ok := v.(string); ok && isEndpointKey(name) {
		registerEmbedded(s)
		return
	}
	registerIn(v, true, true)
}

// registerSecretString registers s, held under a secret name, and the
// credential after its authorization scheme.
func registerSecretString(s string) {
	RegisterSecretValue(s)
	if authSchemeRE.MatchString(s) {
		_, cred, _ := strings.Cut(s, " ")
		RegisterSecretValue(strings.TrimSpace(cred))
	}
}

// registerEmbedded registers the secrets MaskText finds inside s.
func registerEmbedded(s string) {
	if !strings.ContainsAny(s, "@=:") {
		return
	}
	for _, p := range userinfoPasswords(s) {
		registerEscaped(p.val)
	}
	for _, sub := range mysqlRE.FindAllStringSubmatch(s, -1) {
		registerEscaped(sub[3])
	}
	for _, p := range secretPairs(s) {
		v := p.val
		if strings.HasPrefix(v, "[") {
			continue // a list: its elements are not told apart
		}
		if quotedOrListed(v) {
			v = strings.Trim(strings.TrimPrefix(strings.TrimSuffix(v, `\"`), `\"`), `"'`)
		}
		registerSecretString(v)
		registerEscaped(v)
	}
}

// registerEscaped registers v and, when it is URL-escaped, its unescaped
// form.
func registerEscaped(v string) {
	RegisterSecretValue(v)
	if u, err := url.PathUnescape(v); err == nil && u != v {
		RegisterSecretValue(u)
	}
}

// RegisterConfigSecrets records the secrets of the configuration:
// basic.aesKey, the password of basic.catalog, store.redis.password, the
// properties of basic.connection, and any value under a secret name.
func RegisterConfigSecrets(cfg *config.Config) {
	if cfg == nil {
		return
	}
	RegisterSecretValue(cfg.Basic.AESKey)
	RegisterSecretValue(cfg.Store.Redis.Password)
	registerEmbedded(string(cfg.Basic.Catalog))
	RegisterSecretsIn(cfg.Basic.Connection)
	RegisterSecretsIn(cfg)
}
