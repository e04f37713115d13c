package server

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/rule"
	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/sql/parser"
	"github.com/rekuiper/rekuiper/internal/sql/token"
)

// streamKind describes the stream or table flavour of the shared handlers.
type streamKind struct {
	kind  catalog.StreamKind
	ast   ast.StreamKind
	title string // "Stream" or "Table"
}

var (
	kindStream = streamKind{catalog.KindStream, ast.KindStream, "Stream"}
	kindTable  = streamKind{catalog.KindTable, ast.KindTable, "Table"}
)

func (s *Server) streamRoutes() {
	for _, k := range []streamKind{kindStream, kindTable} {
		base := "/" + string(k.kind) + "s"
		s.handle("GET "+base, s.listStreams(k))
		s.handle("POST "+base, s.createStream(k))
		s.handle("POST "+base+"/validate", s.validateStream(k))
		s.handle("GET /"+string(k.kind)+"details", s.streamDetails(k))
		s.handle("GET "+base+"/{name}", s.describeStream(k))
		s.handle("PUT "+base+"/{name}", s.replaceStream(k))
		s.handle("DELETE "+base+"/{name}", s.dropStream(k))
		s.handle("GET "+base+"/{name}/schema", s.streamSchema(k))
	}
}

// parseDDL parses a {"sql": "CREATE ..."} body for kind k; with anyKind
// the statement may create either kind, and k is its kind.
func parseDDL(r *http.Request, k streamKind, anyKind bool) (*ast.CreateStreamStmt, string, error) {
	var body struct {
		SQL string `json:"sql"`
	}
	if err := decodeStrict(r, &body); err != nil {
		return nil, "", err
	}
	if strings.TrimSpace(body.SQL) == "" {
		return nil, "", badRequest("field sql is required")
	}
	cs, err := parseCreateStream(body.SQL, k, anyKind)
	if err != nil {
		return nil, "", err
	}
	return cs, body.SQL, nil
}

// parseCreateStream parses one CREATE statement of kind k (with anyKind,
// of either kind); a syntax error keeps its *parser.Error in the chain.
func parseCreateStream(sql string, k streamKind, anyKind bool) (*ast.CreateStreamStmt, error) {
	st, err := parser.ParseStatement(sql)
	if err != nil {
		return nil, fmt.Errorf("%w: parse sql: %w", errBadRequest, err)
	}
	cs, ok := st.(*ast.CreateStreamStmt)
	if ok && anyKind {
		k = kindOf(cs)
	}
	if !ok || cs.Kind != k.ast {
		return nil, badRequest("sql must be a CREATE %s statement", strings.ToUpper(string(k.kind)))
	}
	if err := validName(string(k.kind), cs.Name); err != nil {
		return nil, err
	}
	return cs, nil
}

func (s *Server) getStream(k streamKind, name string) (catalog.Stream, *ast.CreateStreamStmt, error) {
	st, err := s.cat.Stream(name)
	if err != nil || st.Kind != k.kind {
		return catalog.Stream{}, nil, fmt.Errorf("%s %s: %w", k.kind, name, catalog.ErrNotFound)
	}
	parsed, err := parser.ParseStatement(st.SQL)
	if err != nil {
		return st, nil, fmt.Errorf("parse stored %s %s: %w", k.kind, name, err)
	}
	cs, ok := parsed.(*ast.CreateStreamStmt)
	if !ok {
		return st, nil, fmt.Errorf("stored %s %s is not a CREATE statement", k.kind, name)
	}
	return st, cs, nil
}

func (s *Server) listStreams(k streamKind) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		kindFilter := r.URL.Query().Get("kind")
		names := []string{}
		for _, st := range s.cat.Streams(k.kind) {
			if kindFilter != "" && !s.tableKindIs(st, kindFilter) {
				continue
			}
			names = append(names, st.Name)
		}
		return writeJSON(w, http.StatusOK, names)
	}
}

func (s *Server) tableKindIs(st catalog.Stream, want string) bool {
	_, cs, err := s.getStream(streamKindOf(st.Kind), st.Name)
	if err != nil {
		return false
	}
	kind, ok := cs.Option("KIND")
	if !ok {
		kind = "scan"
	}
	return strings.EqualFold(kind, want)
}

func streamKindOf(k catalog.StreamKind) streamKind {
	if k == catalog.KindTable {
		return kindTable
	}
	return kindStream
}

func (s *Server) streamDetails(k streamKind) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		kindFilter := r.URL.Query().Get("kind")
		out := []map[string]string{}
		for _, st := range s.cat.Streams(k.kind) {
			if kindFilter != "" && !s.tableKindIs(st, kindFilter) {
				continue
			}
			typ, format := "mqtt", "json"
			if _, cs, err := s.getStream(k, st.Name); err == nil {
				if v, ok := cs.Option("TYPE"); ok {
					typ = v
				}
				if v, ok := cs.Option("FORMAT"); ok {
					format = v
				}
			}
			out = append(out, map[string]string{"name": st.Name, "type": typ, "format": format})
		}
		return writeJSON(w, http.StatusOK, out)
	}
}

// kindOf is the kind a CREATE statement makes.
func kindOf(cs *ast.CreateStreamStmt) streamKind {
	if cs.Kind == ast.KindTable {
		return kindTable
	}
	return kindStream
}

// createStream creates what the statement says: as in eKuiper, POST
// /streams may carry CREATE TABLE and POST /tables CREATE STREAM.
func (s *Server) createStream(k streamKind) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		cs, sql, err := parseDDL(r, k, true)
		if err != nil {
			return err
		}
		k = kindOf(cs)
		if err := s.checkStreamFiles(cs); err != nil {
			return err
		}
		if err := s.checkStream(r, cs); err != nil {
			return err
		}
		if _, err := s.cat.PutStream(r.Context(), catalog.Stream{Name: cs.Name, Kind: k.kind, SQL: sql}, catalog.Create); err != nil {
			return fmt.Errorf("create %s %s: %w", k.kind, cs.Name, err)
		}
		return writeText(w, http.StatusCreated, "%s %s is created.", k.title, cs.Name)
	}
}

func (s *Server) replaceStream(k streamKind) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		name := r.PathValue("name")
		cs, sql, err := parseDDL(r, k, false)
		if err != nil {
			return err
		}
		if err := s.checkStreamFiles(cs); err != nil {
			return err
		}
		if cs.Name != name {
			return badRequest("%s name %s in sql does not match %s in the path", k.kind, cs.Name, name)
		}
		_, old, err := s.getStream(k, name)
		if err != nil {
			return err
		}
		newV, hasNew := cs.Option("VERSION")
		oldV, hasOld := old.Option("VERSION")
		if hasNew && hasOld && newV <= oldV {
			return fmt.Errorf("replace %s %s: version %q is not newer than %q: %w", k.kind, name, newV, oldV, catalog.ErrConflict)
		}
		if sql, err = s.restoreStreamSQL(name, sql); err != nil {
			return err
		}
		if err := s.checkStream(r, cs); err != nil {
			return err
		}
		if _, err := s.cat.PutStream(r.Context(), catalog.Stream{Name: name, Kind: k.kind, SQL: sql}, catalog.Replace); err != nil {
			return fmt.Errorf("replace %s %s: %w", k.kind, name, err)
		}
		return writeText(w, http.StatusOK, "%s %s is updated.", k.title, name)
	}
}

func (s *Server) dropStream(k streamKind) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		name := r.PathValue("name")
		if _, _, err := s.getStream(k, name); err != nil {
			return err
		}
		force, _ := strconv.ParseBool(r.URL.Query().Get("force"))
		if refs := s.rulesReading(name); len(refs) > 0 && !force {
			return fmt.Errorf("%s %s has been referenced by rules %s: %w", k.kind, name, strings.Join(refs, ", "), errReferenced)
		}
		if err := s.cat.DeleteStream(r.Context(), name); err != nil {
			return fmt.Errorf("drop %s %s: %w", k.kind, name, err)
		}
		return writeText(w, http.StatusOK, "%s %s is dropped.", k.title, name)
	}
}

// checkStream checks a definition with the engine (see
// Options.Streams); a problem is a 400 naming it.
func (s *Server) checkStream(r *http.Request, cs *ast.CreateStreamStmt) error {
	if s.opts.Streams == nil {
		return nil
	}
	if err := s.opts.Streams.CheckStream(r.Context(), cs); err != nil {
		return badRequest("%v", err)
	}
	return nil
}

// rulesReading lists the rules whose SQL reads the stream or table name.
func (s *Server) rulesReading(name string) []string {
	return s.rulesWhoseSQL(func(stmt *ast.SelectStmt) bool { return slices.Contains(streamsRead(stmt), name) })
}

func (s *Server) describeStream(k streamKind) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		_, cs, err := s.getStream(k, r.PathValue("name"))
		if err != nil {
			return err
		}
		var fields any
		if len(cs.Fields) > 0 {
			fl := make([]map[string]any, len(cs.Fields))
			for i, f := range cs.Fields {
				fl[i] = describeField(f, false)
			}
			fields = fl
		}
		streamType := 0
		if k.kind == catalog.KindTable {
			streamType = 1
		}
		return writeJSON(w, http.StatusOK, map[string]any{
			"Name": cs.Name, "StreamFields": fields, "Options": describeOptions(cs), "StreamType": streamType,
		})
	}
}

// optionNames maps WITH keys to eKuiper's JSON option names.
var optionNames = map[string]string{
	"DATASOURCE": "datasource", "KEY": "key", "FORMAT": "format", "CONF_KEY": "confKey", "TYPE": "type",
	"STRICT_VALIDATION": "strictValidation", "TIMESTAMP": "timestamp", "TIMESTAMP_FORMAT": "timestampFormat",
	"SHARED": "shared", "SCHEMAID": "schemaid", "VERSION": "version", "EXTRA": "extra", "TEMP": "temp",
	"RETAIN_SIZE": "retainSize", "KIND": "kind", "DELIMITER": "delimiter",
}

func describeOptions(cs *ast.CreateStreamStmt) map[string]any {
	out := map[string]any{}
	for _, o := range cs.Options {
		name, ok := optionNames[o.Key]
		if !ok {
			name = strings.ToLower(o.Key)
		}
		switch o.Key {
		case "STRICT_VALIDATION", "SHARED", "TEMP":
			if b, err := strconv.ParseBool(o.Value); err == nil {
				out[name] = b
				continue
			}
		case "RETAIN_SIZE":
			if n, err := strconv.Atoi(o.Value); err == nil {
				out[name] = n
				continue
			}
		}
		out[name] = rule.MaskText(o.Value)
	}
	return out
}

var typeNames = map[token.Token]string{
	token.BIGINT: "bigint", token.FLOAT: "float", token.STRINGTYPE: "string", token.DATETIME: "datetime",
	token.BOOLEAN: "boolean", token.BYTEA: "bytea", token.ARRAY: "array", token.STRUCT: "struct",
}

// describeField describes a column; secret says it lies inside a column
// whose name is secret, whose DEFAULT strings are masked like its own
// (rule.MaskStreamSQL).
func describeField(f ast.StreamField, secret bool) map[string]any {
	secret = secret || rule.IsSecretKey(f.Name)
	m := map[string]any{"Name": f.Name, "FieldType": describeType(f.Type, secret)}
	if f.Default != nil {
		m["DefaultClause"] = rule.MaskDefault(f.Default, secret)
	}
	return m
}

func describeType(t *ast.DataType, secret bool) any {
	if t == nil {
		return nil
	}
	switch t.Kind {
	case token.ARRAY:
		return map[string]any{"Type": "array", "ElementType": describeType(t.Elem, secret)}
	case token.STRUCT:
		fs := make([]map[string]any, len(t.Fields))
		for i, f := range t.Fields {
			fs[i] = describeField(f, secret)
		}
		return map[string]any{"Type": "struct", "Fields": fs}
	}
	return typeNames[t.Kind]
}

func (s *Server) streamSchema(k streamKind) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		_, cs, err := s.getStream(k, r.PathValue("name"))
		if err != nil {
			return err
		}
		if len(cs.Fields) == 0 {
			return writeJSON(w, http.StatusOK, s.usedSchema(cs.Name))
		}
		return writeJSON(w, http.StatusOK, schemaFields(cs.Fields))
	}
}

func schemaFields(fields []ast.StreamField) map[string]any {
	out := map[string]any{}
	for _, f := range fields {
		out[f.Name] = schemaType(f.Type)
	}
	return out
}

func schemaType(t *ast.DataType) map[string]any {
	if t == nil {
		return map[string]any{}
	}
	// "index" is always 0, eKuiper's value outside its experimental slice
	// tuples, where it numbers the field's slot.
	m := map[string]any{"type": typeNames[t.Kind], "index": 0}
	switch t.Kind {
	case token.ARRAY:
		m["items"] = schemaType(t.Elem)
	case token.STRUCT:
		m["properties"] = schemaFields(t.Fields)
	}
	return m
}
