package server

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/rule"
	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/sql/parser"
)

// users lists who depends on a confKey or a connection, by kind, so that
// deleting it can be refused naming them.
type users struct {
	streams, rules, confKeys []string
}

func (u *users) empty() bool { return len(u.streams)+len(u.rules)+len(u.confKeys) == 0 }

func (u *users) String() string {
	var parts []string
	for _, g := range []struct {
		kind  string
		names []string
	}{{"streams", u.streams}, {"rules", u.rules}, {"confKeys", u.confKeys}} {
		if len(g.names) > 0 {
			parts = append(parts, g.kind+" "+strings.Join(g.names, ", "))
		}
	}
	return strings.Join(parts, "; ")
}

// referenced is the 409 refusing to delete what users depend on.
func referenced(what string, u *users) error {
	return fmt.Errorf("%s is referenced by %s: %w", what, u, errReferenced)
}

// streamDefs returns the parsed definitions of every stream and table.
func (s *Server) streamDefs() []*ast.CreateStreamStmt {
	var out []*ast.CreateStreamStmt
	for _, st := range s.cat.Streams("") {
		parsed, err := parser.ParseStatement(st.SQL)
		if err != nil {
			continue
		}
		if cs, ok := parsed.(*ast.CreateStreamStmt); ok {
			out = append(out, cs)
		}
	}
	return out
}

// streamConf returns a stream's source type and CONF_KEY ("default" when
// it names none), as the engine resolves them.
func streamConf(cs *ast.CreateStreamStmt) (typ, key string) {
	typ, _ = cs.Option("TYPE")
	if typ == "" {
		typ = "mqtt"
	}
	key, _ = cs.Option("CONF_KEY")
	if key == "" {
		key = "default"
	}
	return strings.ToLower(typ), key
}

// addReaders adds the rules that read one of the streams.
func (s *Server) addReaders(u *users) {
	for _, name := range u.streams {
		for _, id := range s.rulesReading(name) {
			if !slices.Contains(u.rules, id) {
				u.rules = append(u.rules, id)
			}
		}
	}
	slices.Sort(u.rules)
}

// confKeyUsers lists the users of a confKey. A source confKey is used by
// the streams and tables of its type that name it in CONF_KEY ("default" by
// every stream of the type: its properties underlie every other key) and by
// the rules reading them; a sink confKey by the rules whose actions of its
// type name it in resourceId.
func (s *Server) confKeyUsers(c catalog.ConfCategory, typ, key string) *users {
	u := &users{}
	switch c {
	case catalog.ConfSource:
		for _, cs := range s.streamDefs() {
			t, k := streamConf(cs)
			if t == typ && (strings.EqualFold(k, key) || strings.EqualFold(key, "default")) {
				u.streams = append(u.streams, cs.Name)
			}
		}
		s.addReaders(u)
	case catalog.ConfSink:
		u.rules = s.rulesWhere(func(def *rule.Def) bool {
			return slices.ContainsFunc(def.Actions, func(a rule.Action) bool {
				id, ok := a.Props["resourceId"].(string)
				return ok && strings.EqualFold(a.Type, typ) && id == key
			})
		})
	}
	return u
}

// connectionUsers lists the users of a named connection: the rules whose
// actions or sink confKeys select it (connectionRefs), the streams whose
// EXTRA or source confKey (file or stored) select it with the rules
// reading them, and the stored confKeys that select it.
func (s *Server) connectionUsers(c catalog.Connection) *users {
	u := &users{rules: s.connectionRefs(c)}
	for _, cs := range s.streamDefs() {
		if s.streamSelects(cs, c) {
			u.streams = append(u.streams, cs.Name)
		}
	}
	s.addReaders(u)
	for _, cat := range []catalog.ConfCategory{catalog.ConfSource, catalog.ConfSink} {
		for _, k := range s.cat.ConfKeys(cat, "") {
			if sel, ok := k.Props["connectionSelector"].(string); ok && selects(sel, c) {
				u.confKeys = append(u.confKeys, fmt.Sprintf("%ss/%s/%s", cat, k.Type, k.Key))
			}
		}
	}
	return u
}

// streamSelects reports whether a stream's source properties select c:
// its EXTRA object, its confKey or the type's default confKey.
func (s *Server) streamSelects(cs *ast.CreateStreamStmt, c catalog.Connection) bool {
	if extra, ok := cs.Option("EXTRA"); ok && extra != "" {
		var m map[string]any
		if json.Unmarshal([]byte(extra), &m) == nil {
			if sel, ok := m["connectionSelector"].(string); ok && selects(sel, c) {
				return true
			}
		}
	}
	typ, key := streamConf(cs)
	merged, err := s.mergedConfKeys("sources", typ)
	if err != nil {
		return false
	}
	for k, props := range merged {
		if !strings.EqualFold(k, key) && !strings.EqualFold(k, "default") {
			continue
		}
		if sel, ok := props["connectionSelector"].(string); ok && selects(sel, c) {
			return true
		}
	}
	return false
}
