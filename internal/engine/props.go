package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/sql/ast"
)

// sourceType is a stream's connector type (TYPE option, mqtt by default).
func sourceType(def *ast.CreateStreamStmt) string {
	if t, ok := def.Option("TYPE"); ok && t != "" {
		return strings.ToLower(t)
	}
	return "mqtt"
}

// sourceProps resolves a stream's source properties the way eKuiper does:
// the `default` confKey of etc/sources/<type>.yaml (read again when the
// file changed since the last rule that read it), overlaid by the
// stream's CONF_KEY section, then by confKeys stored through the REST API,
// then DATASOURCE, then the EXTRA JSON object.
func (rn *Engine) sourceProps(def *ast.CreateStreamStmt) (string, map[string]any, error) {
	typ, props, _, err := rn.sourcePropsConn(def)
	return typ, props, err
}

// sourcePropsConn is sourceProps that also returns the stream's
// connectionSelector ("" when it has none).
func (rn *Engine) sourcePropsConn(def *ast.CreateStreamStmt) (string, map[string]any, string, error) {
	typ := sourceType(def)
	key, _ := def.Option("CONF_KEY")
	if key == "" {
		key = "default"
	}
	props := map[string]any{}
	found := strings.EqualFold(key, "default")
	if rn.cfg.Paths.Etc != "" {
		keys, err := rn.confFiles.Load(rn.cfg.Paths.SourceConfFile(typ), rn.cfg.Environ)
		if err != nil {
			return "", nil, "", fmt.Errorf("stream %s: %w", def.Name, err)
		}
		p, ok := keys.Resolve(key)
		maps.Copy(props, p)
		found = found || ok
	}
	if rn.cfg.Catalog != nil {
		if ck, err := rn.cfg.Catalog.ConfKey(catalog.ConfSource, typ, "default"); err == nil {
			maps.Copy(props, ck.Props)
		}
		if key != "default" {
			if ck, err := rn.cfg.Catalog.ConfKey(catalog.ConfSource, typ, key); err == nil {
				maps.Copy(props, ck.Props)
				found = true
			}
		}
	}
	if !found {
		return "", nil, "", fmt.Errorf("stream %s: CONF_KEY %q is not a confKey of source type %s (neither in %s nor stored over REST)",
			def.Name, key, typ, rn.confFileName(typ))
	}
	if ds, ok := def.Option("DATASOURCE"); ok {
		props["datasource"] = ds
	}
	if extra, ok := def.Option("EXTRA"); ok && extra != "" {
		var m map[string]any
		if err := json.Unmarshal([]byte(extra), &m); err != nil {
			return "", nil, "", fmt.Errorf("stream %s: EXTRA is not a JSON object: %w", def.Name, err)
		}
		maps.Copy(props, m)
	}
	sel, _ := props["connectionSelector"].(string)
	if err := rn.resolveConnection(typ, props); err != nil {
		return "", nil, "", fmt.Errorf("stream %s: %w", def.Name, err)
	}
	return typ, props, sel, nil
}

// resolveConnection replaces a connectionSelector with the properties of
// the named connection (`name`, `type.name` or `type/name`), which the
// connector pools by their settings, so rules naming the same connection
// share one.
func (rn *Engine) resolveConnection(typ string, props map[string]any) error {
	sel, _ := props["connectionSelector"].(string)
	if sel == "" || rn.cfg.Catalog == nil {
		return nil
	}
	id := sel
	if t, k, ok := strings.Cut(sel, "/"); ok && strings.EqualFold(t, typ) {
		id = k
	} else if t, k, ok := strings.Cut(sel, "."); ok && strings.EqualFold(t, typ) {
		id = k
	}
	conn, err := rn.cfg.Catalog.Connection(id)
	if errors.Is(err, catalog.ErrNotFound) {
		return fmt.Errorf("connectionSelector %q: unknown connection %q (see GET /connections)", sel, id)
	} else if err != nil {
		return fmt.Errorf("connectionSelector %q: %w", sel, err)
	}
	if !strings.EqualFold(conn.Type, typ) {
		return fmt.Errorf("connectionSelector %q names a %s connection, not %s", sel, conn.Type, typ)
	}
	delete(props, "connectionSelector")
	for k, v := range conn.Props {
		props[k] = v
	}
	return nil
}

// sinkProps resolves an action's properties: a `resourceId` names a sink
// confKey whose properties the action's own override.
func (rn *Engine) sinkProps(typ string, action map[string]any) (map[string]any, error) {
	props := map[string]any{}
	if id, ok := action["resourceId"].(string); ok && id != "" {
		found := false
		if rn.cfg.Paths.Etc != "" {
			if keys, err := rn.confFiles.Load(rn.cfg.Paths.SinkConfFile(typ), rn.cfg.Environ); err == nil {
				if p, ok := keys.Resolve(id); ok {
					maps.Copy(props, p)
					found = true
				}
			}
		}
		if rn.cfg.Catalog != nil {
			if ck, err := rn.cfg.Catalog.ConfKey(catalog.ConfSink, typ, id); err == nil {
				maps.Copy(props, ck.Props)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("sink %s: resourceId %q not found", typ, id)
		}
	}
	for k, v := range action {
		if k != "resourceId" {
			props[k] = v
		}
	}
	if err := rn.resolveConnection(typ, props); err != nil {
		return nil, fmt.Errorf("sink %s: %w", typ, err)
	}
	return props, nil
}
