package rule

import "strings"

// MaskedValue replaces a secret property value in REST responses and logs.
const MaskedValue = "******"

// IsSecretKey reports whether a property name holds a secret: password,
// token, privateKey, privateKeyRaw, saslPassword, or any name containing
// "password", "secret" or "token" (case-insensitively). certificationRaw and
// other certificates are public and not secret.
func IsSecretKey(k string) bool {
	l := strings.ToLower(k)
	switch l {
	case "privatekey", "privatekeyraw", "private_key", "aeskey", "key_password":
		return true
	}
	return strings.Contains(l, "password") || strings.Contains(l, "secret") || strings.Contains(l, "token")
}

// HasSecrets reports whether props holds a non-empty secret at any depth.
func HasSecrets(props map[string]any) bool {
	for k, v := range props {
		if IsSecretKey(k) && v != nil && v != "" {
			if _, nested := v.(map[string]any); !nested {
				return true
			}
		}
		switch x := v.(type) {
		case map[string]any:
			if HasSecrets(x) {
				return true
			}
		case []any:
			for _, e := range x {
				if m, ok := e.(map[string]any); ok && HasSecrets(m) {
					return true
				}
			}
		}
	}
	return false
}

// MaskProps returns a deep copy of props in which every non-empty secret
// value (see IsSecretKey), at any depth, is MaskedValue.
func MaskProps(props map[string]any) map[string]any {
	if props == nil {
		return nil
	}
	out := make(map[string]any, len(props))
	for k, v := range props {
		switch x := v.(type) {
		case map[string]any:
			out[k] = MaskProps(x)
		case []any:
			l := make([]any, len(x))
			for i, e := range x {
				if m, ok := e.(map[string]any); ok {
					l[i] = MaskProps(m)
				} else {
					l[i] = e
				}
			}
			out[k] = l
		default:
			if IsSecretKey(k) && v != nil && v != "" {
				out[k] = MaskedValue
			} else {
				out[k] = v
			}
		}
	}
	return out
}

// RestoreProps returns a copy of props in which every MaskedValue at a
// secret key is replaced by the value at the same path in old, and whether
// anything was replaced. props is not modified.
func RestoreProps(props, old map[string]any) (map[string]any, bool) {
	if props == nil || old == nil {
		return props, false
	}
	out := make(map[string]any, len(props))
	changed := false
	for k, v := range props {
		out[k] = v
		switch x := v.(type) {
		case map[string]any:
			if o, ok := old[k].(map[string]any); ok {
				if r, ch := RestoreProps(x, o); ch {
					out[k], changed = r, true
				}
			}
		case string:
			if x == MaskedValue && IsSecretKey(k) {
				if o, ok := old[k]; ok {
					out[k], changed = o, true
				}
			}
		}
	}
	return out, changed
}
