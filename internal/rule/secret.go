package rule

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
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

// secretWords is the pattern of secret names inside free text (URL query
// parameters, DSNs, JSON and Go map echoes, header lines).
const secretWords = `[\w.-]*(?:password|passwd|pwd|secret|token|apikey|api_key|api-key|signature|authorization|cookie|privatekey|aeskey)[\w.-]*|sig`

var (
	// scheme://user:password@ — the password of a URL's userinfo.
	userinfoRE = regexp.MustCompile(`(\b[A-Za-z][A-Za-z0-9+.-]*://[^\s/:@"']*:)([^\s/@"']+)@`)
	// user:password@tcp(host) — MySQL DSNs, which have no scheme.
	mysqlRE = regexp.MustCompile(`(^|[\s"'])([^\s:/@"']+:)([^\s/@"']+)@(tcp|unix)\(`)
	// name=value, name: value, "name":"value" for secret names.
	pairRE = regexp.MustCompile(`(?i)(^|[^\w.-])("?(?:` + secretWords + `)"?\s*[:=]\s*"?)((?:(?:Bearer|Basic|Digest|Token)\s+)?[^\s"&;,}\]]+)`)
)

// MaskText returns s with every secret it can recognise replaced by
// MaskedValue: URL userinfo passwords (tcp://user:pass@host,
// postgres://u:pass@...), MySQL DSN passwords, and the values of secret
// names (see IsSecretKey) in query parameters, DSN key=value pairs,
// header lines and JSON or Go map echoes. Error messages and log lines go
// through it.
func MaskText(s string) string {
	if !strings.ContainsAny(s, "@=:") {
		return s
	}
	s = userinfoRE.ReplaceAllString(s, "${1}"+MaskedValue+"@")
	s = mysqlRE.ReplaceAllString(s, "${1}${2}"+MaskedValue+"@${4}(")
	return pairRE.ReplaceAllStringFunc(s, func(m string) string {
		sub := pairRE.FindStringSubmatch(m)
		if sub[3] == MaskedValue {
			return m
		}
		return sub[1] + sub[2] + MaskedValue
	})
}

// HasSecrets reports whether props holds a non-empty secret at any depth:
// a value at a secret key, or a string with a secret in it (MaskText).
func HasSecrets(props map[string]any) bool {
	for k, v := range props {
		if IsSecretKey(k) && v != nil && v != "" {
			if _, nested := v.(map[string]any); !nested {
				return true
			}
		}
		if hasSecretValue(v) {
			return true
		}
	}
	return false
}

func hasSecretValue(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		return HasSecrets(x)
	case []any:
		for _, e := range x {
			if hasSecretValue(e) {
				return true
			}
		}
	case string:
		return MaskText(x) != x
	}
	return false
}

// MaskProps returns a deep copy of props in which every non-empty secret
// value (see IsSecretKey), at any depth, is MaskedValue, and every other
// string has its embedded secrets masked (see MaskText).
func MaskProps(props map[string]any) map[string]any {
	if props == nil {
		return nil
	}
	out := make(map[string]any, len(props))
	for k, v := range props {
		if _, nested := v.(map[string]any); !nested && IsSecretKey(k) && v != nil && v != "" {
			if _, list := v.([]any); !list {
				out[k] = MaskedValue
				continue
			}
		}
		out[k] = maskValue(v)
	}
	return out
}

func maskValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return MaskProps(x)
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = maskValue(e)
		}
		return l
	case string:
		return MaskText(x)
	}
	return v
}

// endpointKeys name the properties that say where a secret is sent. A
// masked secret sent back is restored only while they are unchanged.
var endpointKeys = []string{"server", "servers", "url", "host", "hosts", "brokers", "broker", "addr", "address", "addresses", "datasource", "dsn", "connection", "connectionstring", "endpoint", "port"}

func isEndpointKey(k string) bool {
	l := strings.ToLower(k)
	for _, e := range endpointKeys {
		if l == e {
			return true
		}
	}
	return false
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
		if fmt.Sprint(maskValue(props[k])) != fmt.Sprint(maskValue(old[k])) {
			return k, true
		}
	}
	return "", false
}

// RestoreProps returns a copy of props in which every MaskedValue at a
// secret key, and every string equal to the masked form of the stored
// string (a URL whose password came back masked), is replaced by the value
// at the same path in old, and whether anything was replaced. A masked
// value is restored only while the endpoint it is sent to (server, url,
// host, brokers, datasource, ... at its level or above) is unchanged;
// otherwise it fails with an error wrapping ErrInvalid that names the
// property. A masked value with nothing stored is kept as given. props is
// not modified.
func RestoreProps(props, old map[string]any) (map[string]any, bool, error) {
	return restoreProps(props, old, "", "")
}

func restoreProps(props, old map[string]any, prefix, moved string) (map[string]any, bool, error) {
	if props == nil {
		return props, false, nil
	}
	if moved == "" && old != nil {
		if k, ok := changedEndpoint(props, old); ok {
			moved = prefix + k
		}
	}
	out := make(map[string]any, len(props))
	changed := false
	for _, k := range slices.Sorted(maps.Keys(props)) { // sorted: the same error every time
		v := props[k]
		out[k] = v
		switch x := v.(type) {
		case map[string]any:
			o, _ := old[k].(map[string]any)
			r, ch, err := restoreProps(x, o, prefix+k+".", moved)
			if err != nil {
				return nil, false, err
			}
			if ch {
				out[k], changed = r, true
			}
		case string:
			if !strings.Contains(x, MaskedValue) {
				continue
			}
			o, had := old[k]
			os, isStr := o.(string)
			restorable := had && (x == MaskedValue && IsSecretKey(k) || isStr && MaskText(os) == x)
			switch {
			case !restorable && isStr && x != MaskedValue && MaskText(os) != os:
				return nil, false, fmt.Errorf("%w: property %q carries a masked secret (%s) but changed; send the secret again for the new endpoint", ErrInvalid, prefix+k, MaskedValue)
			case !restorable:
				continue // nothing stored to leak: kept as given
			case moved != "":
				return nil, false, fmt.Errorf("%w: property %q is masked (%s) but %q changed; send the secret again for the new endpoint", ErrInvalid, prefix+k, MaskedValue, moved)
			}
			out[k], changed = o, true
		}
	}
	return out, changed, nil
}
