package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/rekuiper/rekuiper/internal/value"
)

// isDuration reports whether t is Duration, which is a leaf, not an int.
func isDuration(t reflect.Type) bool { return t == reflect.TypeFor[Duration]() }

// structType returns the struct type dst points to.
func structType(dst any) reflect.Type {
	t := reflect.TypeOf(dst)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// yamlName returns the key a struct field is read from, "" for skipped fields.
func yamlName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if name == "-" {
		return ""
	}
	if name == "" {
		return strings.ToLower(f.Name)
	}
	return name
}

// fieldByKey finds the field of struct type t whose YAML name equals key
// case-insensitively.
func fieldByKey(t reflect.Type, key string) (int, string, bool) {
	for i := range t.NumField() {
		name := yamlName(t.Field(i))
		if name != "" && strings.EqualFold(name, key) {
			return i, name, true
		}
	}
	return 0, "", false
}

// canonicalizeKeys rewrites the mapping keys under n to the exact YAML names
// of type t's fields, so that keys match case-insensitively, and returns an
// error naming file:line and the closest of known for every key that names
// no field.
func canonicalizeKeys(n *yaml.Node, t reflect.Type, path, file string, known []string) []error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var errs []error
	switch {
	case isDuration(t):
	case t.Kind() == reflect.Struct && n.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			idx, name, ok := fieldByKey(t, k.Value)
			if !ok {
				errs = append(errs, unknownKey(fmt.Sprintf("%s:%d", file, k.Line), path+k.Value, known))
				continue
			}
			k.Value = name
			errs = append(errs, canonicalizeKeys(v, t.Field(idx).Type, path+name+".", file, known)...)
		}
	case t.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode:
		for i, e := range n.Content {
			errs = append(errs, canonicalizeKeys(e, t.Elem(), fmt.Sprintf("%s%d.", path, i), file, known)...)
		}
	}
	return errs
}

// applyEnvToStruct applies every <prefix>__KEY__SUBKEY=value variable of
// environ to the struct dst points to. Key segments match YAML names
// case-insensitively; a free-form map field takes the remaining segments as
// lower-cased nested keys. A variable that names no key (with the closest
// of known), names a section, or whose value does not parse as the field's
// type is an error naming the variable; all of them are reported.
func applyEnvToStruct(dst any, prefix string, environ []string, known []string) error {
	var errs []error
	for _, kv := range environ {
		name, val, ok := strings.Cut(kv, "=")
		rest, found := strings.CutPrefix(name, prefix+"__")
		if !ok || !found {
			continue
		}
		if err := applyOneEnv(reflect.ValueOf(dst).Elem(), name, strings.Split(rest, "__"), val, known); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func applyOneEnv(v reflect.Value, name string, segs []string, val string, known []string) error {
	where := "environment variable " + name
	if slices.Contains(segs, "") {
		meant := slices.DeleteFunc(slices.Clone(segs), func(s string) bool { return s == "" })
		if hint := suggestKey(strings.ToLower(strings.Join(meant, ".")), known); hint != "" {
			return fmt.Errorf("%s: empty key segment (did you mean %s?)", where, hint)
		}
		return fmt.Errorf("%s: empty key segment", where)
	}
	// unknown names the key of segs from the i-th segment on.
	path := ""
	unknown := func(i int) error {
		return unknownKey(where, path+strings.ToLower(strings.Join(segs[i:], ".")), known)
	}
	for i, seg := range segs {
		if isDuration(v.Type()) || (v.Kind() != reflect.Struct && v.Kind() != reflect.Map) {
			return unknown(i)
		}
		if v.Kind() == reflect.Map {
			if v.Type() != reflect.TypeFor[map[string]any]() {
				return fmt.Errorf("%s: key %s cannot be overridden", where, strings.TrimSuffix(path, "."))
			}
			if v.IsNil() {
				v.Set(reflect.ValueOf(map[string]any{}))
			}
			lower := make([]string, len(segs)-i)
			for j, s := range segs[i:] {
				lower[j] = strings.ToLower(s)
			}
			if w := setMapPath(v.Interface().(map[string]any), lower, val, false); w != "" {
				return fmt.Errorf("%s: %s", where, w)
			}
			return nil
		}
		idx, key, ok := fieldByKey(v.Type(), seg)
		if !ok {
			return unknown(i)
		}
		v = v.Field(idx)
		path += key + "."
	}
	path = strings.TrimSuffix(path, ".")
	if v.Kind() == reflect.Struct && !isDuration(v.Type()) {
		return fmt.Errorf("%s: %s is a section, not a key", where, path)
	}
	if err := setLeaf(v, val); err != nil {
		return fmt.Errorf("%s (%s): %w", where, path, err)
	}
	return nil
}

// setLeaf parses s into v according to v's type.
func setLeaf(v reflect.Value, s string) error {
	if isDuration(v.Type()) {
		d, err := ParseDuration(s)
		if err != nil {
			return err
		}
		v.SetInt(int64(d))
		return nil
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Bool:
		b, err := strconv.ParseBool(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("want true or false, got %q", s)
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, v.Type().Bits())
		if err != nil {
			return fmt.Errorf("want an integer, got %q", s)
		}
		v.SetInt(n)
	case reflect.Float32, reflect.Float64:
		f, err := strconv.ParseFloat(strings.TrimSpace(s), v.Type().Bits())
		if err != nil {
			return fmt.Errorf("want a number, got %q", s)
		}
		v.SetFloat(f)
	case reflect.Slice:
		return setSlice(v, s)
	case reflect.Map:
		m := map[string]any{}
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			return fmt.Errorf("want a JSON object, got %q", s)
		}
		v.Set(reflect.ValueOf(value.Normalize(m)))
	default:
		return fmt.Errorf("keys of type %s cannot be overridden", v.Type())
	}
	return nil
}

// setSlice accepts a JSON array, or for string lists a comma-separated list.
func setSlice(v reflect.Value, s string) error {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "[") {
		p := reflect.New(v.Type())
		if err := json.Unmarshal([]byte(t), p.Interface()); err != nil {
			return fmt.Errorf("want a JSON array of %s, got %q", v.Type().Elem(), s)
		}
		v.Set(p.Elem())
		return nil
	}
	if v.Type().Elem().Kind() != reflect.String {
		return fmt.Errorf("want a JSON array, got %q", s)
	}
	out := reflect.MakeSlice(v.Type(), 0, 0)
	if t != "" {
		for _, part := range strings.Split(t, ",") {
			out = reflect.Append(out, reflect.ValueOf(strings.TrimSpace(part)).Convert(v.Type().Elem()))
		}
	}
	v.Set(out)
	return nil
}

// inferValue types an environment value the way eKuiper does: integer,
// then float, then true/false, else string.
func inferValue(s string) any {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return f
	}
	switch strings.ToLower(s) {
	case "true":
		return true
	case "false":
		return false
	}
	return s
}

// setMapPath sets root[segs[0]][segs[1]]... = val, matching existing keys
// case-insensitively and keeping their spelling; new keys are spelled as in
// segs. When defaultCasing is set and a property (second level) is new, its
// spelling is taken from root["default"] if that has it. A value replacing
// an existing string stays a string; otherwise it is type-inferred. It
// returns a description of the problem when an intermediate value is not a
// mapping.
func setMapPath(root map[string]any, segs []string, val string, defaultCasing bool) string {
	m := root
	for i, seg := range segs {
		key := matchKey(m, seg)
		if key == "" && i == 1 && defaultCasing {
			if def, ok := root[matchKey(root, "default")].(map[string]any); ok {
				key = matchKey(def, seg)
			}
		}
		if key == "" {
			key = seg
		}
		if i == len(segs)-1 {
			if _, isString := m[key].(string); isString {
				m[key] = val
			} else {
				m[key] = inferValue(val)
			}
			return ""
		}
		next, exists := m[key]
		if !exists || next == nil {
			next = map[string]any{}
			m[key] = next
		}
		nm, ok := next.(map[string]any)
		if !ok {
			return fmt.Sprintf("key %s is not a mapping", strings.Join(segs[:i+1], "."))
		}
		m = nm
	}
	return ""
}

// matchKey returns the key of m equal to k case-insensitively, preferring
// an exact match, or "" when there is none.
func matchKey(m map[string]any, k string) string {
	if _, ok := m[k]; ok {
		return k
	}
	for mk := range m {
		if strings.EqualFold(mk, k) {
			return mk
		}
	}
	return ""
}
