package server

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"time"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/config"
	"github.com/rekuiper/rekuiper/internal/connector/connection"
	"github.com/rekuiper/rekuiper/internal/rule"
	"github.com/rekuiper/rekuiper/internal/sql/parser"
	"github.com/rekuiper/rekuiper/internal/value"
)

func (s *Server) connectionRoutes() {
	s.handle("GET /connections", s.listConnections)
	s.handle("POST /connections", s.createConnection)
	s.handle("GET /connections/{id}", s.getConnection)
	s.handle("PUT /connections/{id}", s.updateConnection)
	s.handle("DELETE /connections/{id}", s.deleteConnection)
	for _, c := range []string{"sources", "sinks", "connections"} {
		s.handle("GET /metadata/"+c+"/yaml/{type}", s.getConfKeys(c))
		s.handle("PUT /metadata/"+c+"/{type}/confKeys/{key}", s.putConfKey(c))
		s.handle("DELETE /metadata/"+c+"/{type}/confKeys/{key}", s.deleteConfKey(c))
	}
}

type connectionBody struct {
	ID    string         `json:"id"`
	Typ   string         `json:"typ"`
	Props map[string]any `json:"props"`
}

// SplitRef splits a confKey or connection reference into type and key. The
// canonical form is "type/key"; the alias "type.key" (as users write
// connectionSelector: mqtt.local) resolves to the same pair. ok is false
// for a reference with neither separator.
func SplitRef(ref string) (typ, key string, ok bool) {
	if t, k, found := strings.Cut(ref, "/"); found {
		return strings.ToLower(t), k, true
	}
	if t, k, found := strings.Cut(ref, "."); found {
		return strings.ToLower(t), k, true
	}
	return "", ref, false
}

// selects reports whether a connectionSelector value names connection c:
// by id, or by type and id in either reference form.
func selects(sel string, c catalog.Connection) bool {
	if sel == c.ID {
		return true
	}
	typ, key, ok := SplitRef(sel)
	return ok && typ == strings.ToLower(c.Type) && key == c.ID
}

// connectionRefs counts the rules whose actions, or whose streams' confKeys,
// carry a connectionSelector naming c.
func (s *Server) connectionRefs(c catalog.Connection) []string {
	return s.rulesWhere(func(def *rule.Def) bool { return s.ruleSelects(def, c) })
}

func (s *Server) ruleSelects(def *rule.Def, c catalog.Connection) bool {
	for _, a := range def.Actions {
		if sel, ok := a.Props["connectionSelector"].(string); ok && selects(sel, c) {
			return true
		}
		if key, ok := a.Props["resourceId"].(string); ok && s.confKeySelects(catalog.ConfSink, a.Type, key, c) {
			return true
		}
	}
	stmt, err := parser.ParseSelect(def.SQL)
	if err != nil {
		return false
	}
	for _, n := range streamsRead(stmt) {
		cs, err := s.streamDef(n)
		if err != nil {
			continue
		}
		if typ, key := streamConf(cs); s.confKeySelects(catalog.ConfSource, typ, key, c) {
			return true
		}
	}
	return false
}

func (s *Server) confKeySelects(cat catalog.ConfCategory, typ, key string, c catalog.Connection) bool {
	k, err := s.cat.ConfKey(cat, typ, key)
	if err != nil {
		return false
	}
	sel, ok := k.Props["connectionSelector"].(string)
	return ok && selects(sel, c)
}

// connectionJSON is eKuiper's connection object. status, err and refCount
// describe the clients open with the connection's settings now: refCount
// is the number of sources, sinks and lookup tables using them (eKuiper's
// live reference count), clients the number of clients, lastConnected and
// lastDisconnected are Unix milliseconds (0: never). ruleRefs lists the
// rules whose definitions select the connection, running or not (they
// keep it from being updated or deleted).
func (s *Server) connectionJSON(c catalog.Connection) map[string]any {
	refs := s.connectionRefs(c)
	if refs == nil {
		refs = []string{}
	}
	st := connection.Status{State: connection.StateDisconnected}
	errText := ""
	if s.opts.Connections != nil {
		var err error
		st, err = s.opts.Connections.Status(c.Type, c.Props)
		if err != nil && !errors.Is(err, connection.ErrNoKeyFunc) {
			errText = err.Error()
		}
	}
	if errText == "" {
		errText = st.LastError
	}
	return map[string]any{
		"id": c.ID, "typ": c.Type, "props": rule.MaskPropsOf(c.Type, nonNil(c.Props)), "isNamed": true,
		"status": st.State, "err": rule.MaskText(errText), "refCount": st.Users, "clients": st.Clients,
		"lastConnected": unixMilli(st.LastConnected), "lastDisconnected": unixMilli(st.LastDisconnected),
		"ruleRefs": refs,
	}
}

func unixMilli(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func nonNil(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

func (s *Server) listConnections(w http.ResponseWriter, r *http.Request) error {
	out := []map[string]any{}
	for _, c := range s.cat.Connections() {
		out = append(out, s.connectionJSON(c))
	}
	return writeJSON(w, http.StatusOK, out)
}

func (s *Server) getConnection(w http.ResponseWriter, r *http.Request) error {
	c, err := s.cat.Connection(r.PathValue("id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, s.connectionJSON(c))
}

func (s *Server) createConnection(w http.ResponseWriter, r *http.Request) error {
	var body connectionBody
	if err := decodeStrict(r, &body); err != nil {
		return err
	}
	if err := validName("connection", body.ID); err != nil {
		return err
	}
	if body.Typ == "" {
		return badRequest("field typ is required")
	}
	conn := catalog.Connection{ID: body.ID, Type: strings.ToLower(body.Typ), Props: normalizeProps(body.Props)}
	if _, err := s.cat.PutConnection(r.Context(), conn, catalog.Create); err != nil {
		return fmt.Errorf("create connection %s: %w", body.ID, err)
	}
	return writeText(w, http.StatusCreated, "success")
}

func (s *Server) updateConnection(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	var body connectionBody
	if err := decodeStrict(r, &body); err != nil {
		return err
	}
	if body.ID != "" && body.ID != id {
		return badRequest("connection id %q in the body does not match %q in the path", body.ID, id)
	}
	old, err := s.cat.Connection(id)
	if err != nil {
		return err
	}
	if refs := s.connectionRefs(old); len(refs) > 0 {
		return fmt.Errorf("connection %s is referenced by rules %s: %w", id, strings.Join(refs, ", "), errReferenced)
	}
	typ := strings.ToLower(body.Typ)
	if typ == "" {
		typ = old.Type
	}
	props, _, err := rule.RestoreProps(normalizeProps(body.Props), old.Props)
	if err != nil {
		return fmt.Errorf("update connection %s: %w", id, err)
	}
	conn := catalog.Connection{ID: id, Type: typ, Props: props}
	if _, err := s.cat.PutConnection(r.Context(), conn, catalog.Replace); err != nil {
		return fmt.Errorf("update connection %s: %w", id, err)
	}
	return writeText(w, http.StatusOK, "success")
}

func (s *Server) deleteConnection(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	old, err := s.cat.Connection(id)
	if err != nil {
		return err
	}
	if u := s.connectionUsers(old); !u.empty() {
		return referenced("connection "+id, u)
	}
	if err := s.cat.DeleteConnection(r.Context(), id); err != nil {
		return fmt.Errorf("delete connection %s: %w", id, err)
	}
	return writeText(w, http.StatusOK, "success")
}

func normalizeProps(p map[string]any) map[string]any {
	if p == nil {
		return map[string]any{}
	}
	return value.Normalize(p).(map[string]any)
}

func confCategory(c string) catalog.ConfCategory {
	switch c {
	case "sinks":
		return catalog.ConfSink
	case "connections":
		return catalog.ConfConnection
	}
	return catalog.ConfSource
}

// fileConfKeys reads the etc/ YAML baseline of a category and type.
func (s *Server) fileConfKeys(c, typ string) (config.ConfKeys, error) {
	paths := s.opts.Config.Paths
	if paths.Etc == "" {
		return config.ConfKeys{}, nil
	}
	switch c {
	case "sources":
		keys, _, err := config.LoadConfKeys(paths.SourceConfFile(typ), s.opts.Environ)
		return keys, err
	case "sinks":
		keys, _, err := config.LoadConfKeys(paths.SinkConfFile(typ), s.opts.Environ)
		return keys, err
	default:
		seeds, _, err := config.LoadConnectionSeeds(paths.ConnectionsFile(), s.opts.Environ)
		if err != nil {
			return nil, err
		}
		out := config.ConfKeys{}
		for t, byID := range seeds {
			if strings.EqualFold(t, typ) {
				maps.Copy(out, byID)
			}
		}
		return out, nil
	}
}

// mergedConfKeys is the YAML baseline of a type overlaid by the catalog's
// confKeys (whole keys replace whole keys).
func (s *Server) mergedConfKeys(c, typ string) (map[string]map[string]any, error) {
	keys, err := s.fileConfKeys(c, typ)
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]any{}
	for k, p := range keys {
		out[k] = p
	}
	for _, k := range s.cat.ConfKeys(confCategory(c), typ) {
		out[k.Key] = k.Props
	}
	return out, nil
}

func (s *Server) getConfKeys(c string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		typ := strings.ToLower(r.PathValue("type"))
		if err := validName(c+" type", typ); err != nil {
			return err
		}
		merged, err := s.mergedConfKeys(c, typ)
		if err != nil {
			return err
		}
		out := make(map[string]any, len(merged))
		for k, p := range merged {
			out[k] = rule.MaskPropsOf(typ, nonNil(p))
		}
		return writeJSON(w, http.StatusOK, out)
	}
}

func (s *Server) putConfKey(c string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		typ, key := strings.ToLower(r.PathValue("type")), r.PathValue("key")
		if err := validConfKeyName(c, typ, key); err != nil {
			return err
		}
		var props map[string]any
		if err := decodeStrict(r, &props); err != nil {
			return err
		}
		if err := s.storeConfKey(r.Context(), c, typ, key, normalizeProps(props)); err != nil {
			return err
		}
		return writeText(w, http.StatusOK, "")
	}
}

func validConfKeyName(c, typ, key string) error {
	if err := validName(c+" type", typ); err != nil {
		return err
	}
	return validName("confKey", key)
}

// storeConfKey upserts a confKey, keeping stored secrets where props carries
// the masked value.
func (s *Server) storeConfKey(ctx context.Context, c, typ, key string, props map[string]any) error {
	if err := validConfKeyName(c, typ, key); err != nil {
		return err
	}
	if err := s.checkConfKeyFiles(c, typ, props); err != nil {
		return fmt.Errorf("confKey %s/%s: %w", typ, key, err)
	}
	merged, err := s.mergedConfKeys(c, typ)
	if err != nil {
		return err
	}
	props, _, err = rule.RestoreProps(props, merged[key])
	if err != nil {
		return fmt.Errorf("put conf key %s/%s: %w", typ, key, err)
	}
	k := catalog.ConfKey{Category: confCategory(c), Type: typ, Key: key, Props: props}
	if _, err := s.cat.PutConfKey(ctx, k, catalog.Upsert); err != nil {
		return fmt.Errorf("put conf key %s/%s: %w", typ, key, err)
	}
	return nil
}

func (s *Server) deleteConfKey(c string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		typ, key := strings.ToLower(r.PathValue("type")), r.PathValue("key")
		if err := validConfKeyName(c, typ, key); err != nil {
			return err
		}
		if _, err := s.cat.ConfKey(confCategory(c), typ, key); err != nil {
			return fmt.Errorf("delete conf key %s/%s: %w", typ, key, err)
		}
		if u := s.confKeyUsers(confCategory(c), typ, key); !u.empty() {
			return referenced(fmt.Sprintf("confKey %s/%s", typ, key), u)
		}
		if err := s.cat.DeleteConfKey(r.Context(), confCategory(c), typ, key); err != nil {
			return fmt.Errorf("delete conf key %s/%s: %w", typ, key, err)
		}
		return writeText(w, http.StatusOK, "")
	}
}
