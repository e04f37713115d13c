package config

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/rekuiper/rekuiper/internal/value"
)

// ConfKeys is the content of a source or sink confKey file: confKey name
// ("default", "demo_conf", ...) → properties. Property values follow the
// value model (int64, float64, string, bool, []any, map[string]any).
type ConfKeys map[string]map[string]any

// Resolve returns the properties of key laid over those of "default", as
// eKuiper resolves a stream's CONF_KEY: the key is looked up exactly, then
// case-insensitively. ok is false when key is not "default" and absent; the
// default properties are still returned then. The result is a new map; its
// nested values are shared with c.
func (c ConfKeys) Resolve(key string) (props map[string]any, ok bool) {
	props = maps.Clone(c["default"])
	if props == nil {
		props = map[string]any{}
	}
	if key == "" || strings.EqualFold(key, "default") {
		return props, true
	}
	own, found := c[key]
	if !found {
		for k, v := range c {
			if strings.EqualFold(k, key) {
				own, found = v, true
				break
			}
		}
	}
	maps.Copy(props, own)
	return props, found
}

// ConnectionSeeds is the content of etc/connections/connection.yaml:
// connection type → connection id → properties.
type ConnectionSeeds map[string]map[string]map[string]any

// LoadConfKeys reads a confKey file (etc/mqtt_source.yaml,
// etc/sources/<type>.yaml, etc/sinks/<type>.yaml) and applies the
// environment overrides <FILE_PREFIX>__<CONFKEY>__<PROP>[__<SUB>]=value,
// where FILE_PREFIX is the upper-cased base name of file (MQTT_SOURCE for
// mqtt_source.yaml). ConfKeys and properties match case-insensitively; a new
// property takes its spelling from the default confKey when that has it.
// A missing file yields an empty map (overrides still apply). Bad YAML is an
// error naming the file and line.
func LoadConfKeys(file string, environ []string) (ConfKeys, []string, error) {
	root, warns, err := loadYAMLMap(file, environ, 2, true)
	if err != nil {
		return nil, nil, fmt.Errorf("load conf keys: %w", err)
	}
	out := make(ConfKeys, len(root))
	for k, v := range root {
		props, _ := v.(map[string]any)
		if props == nil {
			props = map[string]any{}
		}
		out[k] = props
	}
	return out, warns, nil
}

// LoadConnectionSeeds reads etc/connections/connection.yaml
// (type → id → props) with CONNECTION__<TYPE>__<ID>__<PROP> overrides.
// A missing file yields an empty map.
func LoadConnectionSeeds(file string, environ []string) (ConnectionSeeds, []string, error) {
	root, warns, err := loadYAMLMap(file, environ, 3, false)
	if err != nil {
		return nil, nil, fmt.Errorf("load connections: %w", err)
	}
	out := make(ConnectionSeeds, len(root))
	for typ, v := range root {
		ids, _ := v.(map[string]any)
		byID := make(map[string]map[string]any, len(ids))
		for id, p := range ids {
			props, ok := p.(map[string]any)
			if !ok && p != nil {
				return nil, nil, fmt.Errorf("load connections: %s: connection %s.%s must be a mapping", file, typ, id)
			}
			if props == nil {
				props = map[string]any{}
			}
			byID[id] = props
		}
		out[typ] = byID
	}
	return out, warns, nil
}

// loadYAMLMap reads file as nested mappings, checks that the first depth-1
// levels are mappings (or empty), and applies the file's env overrides.
func loadYAMLMap(file string, environ []string, depth int, defaultCasing bool) (map[string]any, []string, error) {
	root := map[string]any{}
	data, err := os.ReadFile(file)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, nil, err
	default:
		var doc yaml.Node
		if err := yaml.Unmarshal(data, &doc); err != nil {
			return nil, nil, fmt.Errorf("parse %s: %w", file, err)
		}
		if doc.Kind != 0 && len(doc.Content) > 0 {
			if err := checkMappings(doc.Content[0], depth, "", file); err != nil {
				return nil, nil, err
			}
			var raw map[string]any
			if err := doc.Content[0].Decode(&raw); err != nil {
				return nil, nil, fmt.Errorf("parse %s: %w", file, err)
			}
			if raw != nil {
				root = normalizeYAML(raw).(map[string]any)
			}
		}
	}
	prefix := filePrefix(file) + "__"
	var warns []string
	for _, kv := range environ {
		name, val, ok := strings.Cut(kv, "=")
		rest, found := strings.CutPrefix(name, prefix)
		if !ok || !found {
			continue
		}
		segs := strings.Split(rest, "__")
		if len(segs) < depth || slices.Contains(segs, "") {
			warns = append(warns, fmt.Sprintf("environment variable %s: want %s<KEY>%s, ignored", name, prefix, strings.Repeat("__<KEY>", depth-1)))
			continue
		}
		for i := range segs {
			segs[i] = strings.ToLower(segs[i])
		}
		if w := setMapPath(root, segs, val, defaultCasing); w != "" {
			warns = append(warns, fmt.Sprintf("environment variable %s: %s, ignored", name, w))
		}
	}
	return root, warns, nil
}

// checkMappings requires n and the values down to depth-1 levels below it to
// be mappings or null.
func checkMappings(n *yaml.Node, depth int, path, file string) error {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		what := "top level"
		if path != "" {
			what = strings.TrimSuffix(path, ".")
		}
		return fmt.Errorf("parse %s: line %d: %s must be a mapping", file, n.Line, what)
	}
	if depth <= 1 {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if err := checkMappings(n.Content[i+1], depth-1, path+n.Content[i].Value+".", file); err != nil {
			return err
		}
	}
	return nil
}

// normalizeYAML converts decoded YAML to the value model: map[any]any keys
// become strings, integers int64.
func normalizeYAML(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = normalizeYAML(e)
		}
		return x
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(k)] = normalizeYAML(e)
		}
		return out
	case []any:
		for i, e := range x {
			x[i] = normalizeYAML(e)
		}
		return x
	default:
		return value.Normalize(v)
	}
}
