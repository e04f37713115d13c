package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/rule"
	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/sql/parser"
)

func (s *Server) transferRoutes() {
	s.handle("POST /ruleset/export", s.exportRuleset)
	s.handle("POST /ruleset/import", s.importRuleset)
	s.handle("GET /data/export", s.exportData)
	s.handle("POST /data/export", s.exportData)
	s.handle("POST /data/import", s.importData)
}

// Ruleset is the ruleset export: name → CREATE statement for streams and
// tables, id → rule JSON (as a string) for rules.
type Ruleset struct {
	Streams map[string]string `json:"streams"`
	Tables  map[string]string `json:"tables"`
	Rules   map[string]string `json:"rules"`
}

// DataExport is the /data/export document (eKuiper's shape). Every section
// maps a name to a string; the config sections map a connector type to the
// JSON of its confKeys ({"key": {props}}). Secrets are masked.
type DataExport struct {
	Streams          map[string]string `json:"streams"`
	Tables           map[string]string `json:"tables"`
	Rules            map[string]string `json:"rules"`
	NativePlugins    map[string]string `json:"nativePlugins"`
	PortablePlugins  map[string]string `json:"portablePlugins"`
	SourceConfig     map[string]string `json:"sourceConfig"`
	SinkConfig       map[string]string `json:"sinkConfig"`
	ConnectionConfig map[string]string `json:"connectionConfig"`
	Service          map[string]string `json:"Service"`
	Schema           map[string]string `json:"Schema"`
	Uploads          map[string]string `json:"uploads"`
	Scripts          map[string]string `json:"scripts"`
}

// ruleJSON is a rule's masked JSON with triggered set to its wanted state;
// a stored definition that no longer decodes is shown as stored, with the
// secrets MaskText finds masked.
func (s *Server) ruleJSON(id string) (string, error) {
	def, err := s.rules.Def(id)
	if err != nil {
		return "", err
	}
	st, err := s.rules.Status(id)
	if err != nil {
		return "", err
	}
	if def.SQL == "" {
		return rule.MaskText(string(def.Raw)), nil
	}
	b, err := def.MaskedJSON(st.Wanted == catalog.RuleRunning)
	return string(b), err
}

func (s *Server) ruleset(ids []string) (Ruleset, error) {
	rs := Ruleset{Streams: map[string]string{}, Tables: map[string]string{}, Rules: map[string]string{}}
	var wanted map[string]bool
	if ids != nil {
		wanted = map[string]bool{}
	}
	for _, id := range ids {
		def, err := s.rules.Def(id)
		if err != nil {
			return rs, err
		}
		if stmt, err := parser.ParseSelect(def.SQL); err == nil {
			for _, n := range streamsRead(stmt) {
				wanted[n] = true
			}
		}
	}
	for _, st := range s.cat.Streams("") {
		if wanted != nil && !wanted[st.Name] {
			continue
		}
		if st.Kind == catalog.KindTable {
			rs.Tables[st.Name] = rule.MaskStreamSQL(st.SQL)
		} else {
			rs.Streams[st.Name] = rule.MaskStreamSQL(st.SQL)
		}
	}
	if ids == nil {
		for _, st := range s.rules.List() {
			ids = append(ids, st.ID)
		}
	}
	for _, id := range ids {
		j, err := s.ruleJSON(id)
		if err != nil {
			return rs, err
		}
		rs.Rules[id] = j
	}
	return rs, nil
}

func attach(w http.ResponseWriter) {
	w.Header().Set("Content-Disposition", `attachment; filename="ekuiper_export.json"`)
}

func (s *Server) exportRuleset(w http.ResponseWriter, r *http.Request) error {
	rs, err := s.ruleset(nil)
	if err != nil {
		return err
	}
	attach(w)
	return writeJSON(w, http.StatusOK, rs)
}

type importBody struct {
	Content string `json:"content"`
	File    string `json:"file"`
}

// importContent returns the document of an import body: its content, or
// the file it names (file:// path or http(s) URL). The file and network
// guards apply, and a failure says neither whether a refused file exists
// nor whether a refused port is open.
func (s *Server) importContent(ctx context.Context, r *http.Request) ([]byte, error) {
	var body importBody
	if err := decodeStrict(r, &body); err != nil {
		return nil, err
	}
	switch {
	case body.Content != "" && body.File != "":
		return nil, badRequest("give either content or file, not both")
	case body.Content != "":
		return []byte(body.Content), nil
	case body.File == "":
		return nil, badRequest("field content or file is required")
	}
	return s.fetchFile(ctx, body.File, maxBody)
}

func (s *Server) importRuleset(w http.ResponseWriter, r *http.Request) error {
	doc, err := s.importContent(r.Context(), r)
	if err != nil {
		return err
	}
	var rs Ruleset
	if err := json.Unmarshal(doc, &rs); err != nil {
		return badRequest("decode ruleset: %v", err)
	}
	res := s.importDefs(r.Context(), rs.Streams, rs.Tables, rs.Rules)
	if err := res.firstErr(); err != nil {
		return fmt.Errorf("imported %d streams, %d tables and %d rules; %w", res.streams, res.tables, res.rules, err)
	}
	return writeText(w, http.StatusOK, "imported %d streams, %d tables and %d rules", res.streams, res.tables, res.rules)
}

type importResult struct {
	streams, tables, rules int
	errs                   map[string]map[string]string // section → name → error
	first                  error
}

func (res *importResult) fail(section, name string, err error) {
	if res.errs[section] == nil {
		res.errs[section] = map[string]string{}
	}
	res.errs[section][name] = err.Error()
	if res.first == nil {
		res.first = fmt.Errorf("%s %s: %w", strings.TrimSuffix(section, "s"), name, err)
	}
}

func (res *importResult) firstErr() error { return res.first }

// importDefs upserts streams, then tables, then rules, continuing past
// failures, which it records.
func (s *Server) importDefs(ctx context.Context, streams, tables, rules map[string]string) *importResult {
	res := &importResult{errs: map[string]map[string]string{}}
	for _, sec := range []struct {
		name string
		m    map[string]string
		kind streamKind
		n    *int
	}{{"streams", streams, kindStream, &res.streams}, {"tables", tables, kindTable, &res.tables}} {
		for _, name := range sortedKeys(sec.m) {
			if err := s.importStream(ctx, sec.kind, name, sec.m[name]); err != nil {
				res.fail(sec.name, name, err)
				continue
			}
			*sec.n++
		}
	}
	for _, id := range sortedKeys(rules) {
		if err := s.importRule(ctx, id, rules[id]); err != nil {
			res.fail("rules", id, err)
			continue
		}
		res.rules++
	}
	return res
}

func parseImportStream(k streamKind, name, sql string) (*ast.CreateStreamStmt, error) {
	if err := validName(string(k.kind), name); err != nil {
		return nil, err
	}
	st, err := parser.ParseStatement(sql)
	if err != nil {
		return nil, badRequest("parse sql: %v", err)
	}
	cs, ok := st.(*ast.CreateStreamStmt)
	if !ok || cs.Kind != k.ast || cs.Name != name {
		return nil, badRequest("want CREATE %s %s", strings.ToUpper(string(k.kind)), name)
	}
	return cs, nil
}

func (s *Server) importStream(ctx context.Context, k streamKind, name, sql string) error {
	cs, err := parseImportStream(k, name, sql)
	if err != nil {
		return err
	}
	if err := s.checkStreamFiles(cs); err != nil {
		return err
	}
	if sql, err = s.restoreStreamSQL(name, sql); err != nil {
		return err
	}
	if s.opts.Streams != nil {
		if err := s.opts.Streams.CheckStream(ctx, cs); err != nil {
			return badRequest("%v", err)
		}
	}
	if _, err := s.cat.PutStream(ctx, catalog.Stream{Name: name, Kind: k.kind, SQL: sql}, catalog.Upsert); err != nil {
		return err
	}
	return nil
}

// importRule creates or replaces a rule from an import. As in eKuiper,
// triggered defaults to true: an imported rule runs unless its JSON says
// "triggered": false, also when it replaces a stopped rule.
func (s *Server) importRule(ctx context.Context, id, js string) error {
	def, err := s.parseRuleForPath([]byte(js), id)
	if err != nil {
		return err
	}
	if !def.TriggeredSet {
		def.Triggered, def.TriggeredSet = true, true
	}
	if old, err := s.rules.Def(id); err == nil && sameRule(def, old) {
		// Re-importing an unchanged rule changes at most its wanted state.
		st, err := s.rules.Status(id)
		if err != nil {
			return err
		}
		switch running := st.Wanted == catalog.RuleRunning; {
		case def.Triggered && !running:
			return s.rules.Start(ctx, id)
		case !def.Triggered && running:
			return s.rules.Stop(ctx, id)
		}
		return nil
	}
	_, err = s.rules.Upsert(ctx, def)
	return err
}

// sameRule reports whether def, once its masked secrets are restored from
// old, has the same content as old apart from triggered.
func sameRule(def, old *rule.Def) bool {
	d := *def
	d.Actions = slices.Clone(def.Actions)
	if d.RestoreSecrets(old) != nil {
		return false
	}
	return canonicalRule(d.Raw) == canonicalRule(old.Raw)
}

func canonicalRule(raw []byte) string {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return string(raw)
	}
	delete(m, "triggered")
	b, _ := json.Marshal(m)
	return string(b)
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func (s *Server) exportData(w http.ResponseWriter, r *http.Request) error {
	var ids []string
	if r.Method == http.MethodPost {
		if err := decodeStrict(r, &ids); err != nil {
			return err
		}
		if ids == nil {
			ids = []string{}
		}
	}
	rs, err := s.ruleset(ids)
	if err != nil {
		return err
	}
	doc := DataExport{
		Streams: rs.Streams, Tables: rs.Tables, Rules: rs.Rules,
		NativePlugins: map[string]string{}, PortablePlugins: map[string]string{},
		Service: map[string]string{}, Schema: map[string]string{}, Uploads: map[string]string{}, Scripts: map[string]string{},
	}
	if doc.Scripts, err = s.exportJSFunctions(r.Context()); err != nil {
		return err
	}
	if doc.Schema, err = s.exportSchemas(); err != nil {
		return err
	}
	if doc.SourceConfig, err = s.exportConfKeys(catalog.ConfSource); err != nil {
		return err
	}
	if doc.SinkConfig, err = s.exportConfKeys(catalog.ConfSink); err != nil {
		return err
	}
	if doc.ConnectionConfig, err = s.exportConfKeys(catalog.ConfConnection); err != nil {
		return err
	}
	attach(w)
	return writeJSON(w, http.StatusOK, doc)
}

func (s *Server) exportConfKeys(c catalog.ConfCategory) (map[string]string, error) {
	byType := map[string]map[string]any{}
	for _, k := range s.cat.ConfKeys(c, "") {
		if byType[k.Type] == nil {
			byType[k.Type] = map[string]any{}
		}
		byType[k.Type][k.Key] = rule.MaskPropsOf(k.Type, nonNil(k.Props))
	}
	out := map[string]string{}
	for typ, keys := range byType {
		b, err := json.Marshal(keys)
		if err != nil {
			return nil, fmt.Errorf("export conf keys %s: %w", typ, err)
		}
		out[typ] = string(b)
	}
	return out, nil
}

// importData imports a DataExport document. Without partial=1 it first
// removes every rule, stream, table, confKey, schema and JavaScript
// function (eKuiper's full import).
// The response lists per-item errors; stop=1 is accepted and ignored.
func (s *Server) importData(w http.ResponseWriter, r *http.Request) error {
	d, partial, err := s.importRequest(r)
	if err != nil {
		return err
	}
	resp, err := s.applyImport(r.Context(), d, partial)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{"ErrorMsg": "", "ConfigResponse": resp})
}

// importRequest reads the document and the partial flag of a data import.
func (s *Server) importRequest(r *http.Request) (*DataExport, bool, error) {
	doc, err := s.importContent(r.Context(), r)
	if err != nil {
		return nil, false, err
	}
	var d DataExport
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, false, ekuiperError(codeUndefined, "configuration unmarshal with error %v", err)
	}
	partial, _ := strconv.ParseBool(r.URL.Query().Get("partial"))
	return &d, partial, nil
}

// applyImport checks and applies an import; it returns eKuiper's
// per-section answer, which GET /data/import/status shows until the next
// import. A failed item is an importFailed error carrying the same answer.
func (s *Server) applyImport(ctx context.Context, d *DataExport, partial bool) (map[string]map[string]string, error) {
	resp, err := s.importItems(ctx, d, partial)
	if err != nil {
		var f importFailed
		if errors.As(err, &f) {
			s.imports.setStatus(f.resp)
		}
		return nil, err
	}
	s.imports.setStatus(resp)
	return resp, nil
}

func (s *Server) importItems(ctx context.Context, d *DataExport, partial bool) (map[string]map[string]string, error) {
	// Everything is checked before anything changes: a full import that
	// would fail leaves the catalog as it was.
	res, schemas := s.checkImport(d, partial)
	if res.first != nil {
		return nil, res.failure()
	}
	// A cancel (a client gone, POST /async/task/{id}/cancel) is honoured
	// up to here; once the catalog changes, the import is completed so
	// that it never stops half applied.
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("import cancelled before it changed anything: %w", err)
	}
	ctx = context.WithoutCancel(ctx)
	if !partial {
		if err := s.resetAll(ctx); err != nil {
			return nil, fmt.Errorf("reset before import: %w", err)
		}
	}
	res = &importResult{errs: map[string]map[string]string{}}
	for _, sec := range confSections(d) {
		for _, typ := range sortedKeys(sec.m) {
			var keys map[string]map[string]any
			if err := json.Unmarshal([]byte(sec.m[typ]), &keys); err != nil {
				res.fail(sec.name, typ, badRequest("decode confKeys: %v", err))
				continue
			}
			for key, props := range keys {
				if err := s.storeConfKey(ctx, sec.cat, strings.ToLower(typ), key, normalizeProps(props)); err != nil {
					res.fail(sec.name, typ+"/"+key, err)
				}
			}
		}
	}
	s.importJSFunctions(ctx, d.Scripts, res)
	s.importSchemas(ctx, schemas, res)
	defs := s.importDefs(ctx, d.Streams, d.Tables, d.Rules)
	for sec, m := range defs.errs {
		for name, e := range m {
			res.fail(sec, name, errors.New(e))
		}
	}
	if res.first != nil {
		return nil, res.failure()
	}
	return res.configResponse(), nil
}

type confSection struct {
	name string
	m    map[string]string
	cat  string
}

func confSections(d *DataExport) []confSection {
	return []confSection{{"sourceConfig", d.SourceConfig, "sources"}, {"sinkConfig", d.SinkConfig, "sinks"}, {"connectionConfig", d.ConnectionConfig, "connections"}}
}

// configResponse is eKuiper's per-section map of item errors, with every
// section of eKuiper's answer (the plugin, service and upload sections are
// always empty here).
func (res *importResult) configResponse() map[string]map[string]string {
	resp := map[string]map[string]string{}
	for _, sec := range importSections {
		m := res.errs[sec]
		if m == nil {
			m = map[string]string{}
		}
		resp[sec] = m
	}
	return resp
}

// importFailed is a /data/import whose items failed: 400 with the JSON of
// the per-section errors as the message, sections in eKuiper's order,
// with eKuiper's code 1000.
type importFailed struct{ resp map[string]map[string]string }

// importSections are the sections of an import answer, in eKuiper's order.
var importSections = []string{"streams", "tables", "rules", "nativePlugins", "portablePlugins", "sourceConfig", "sinkConfig", "connectionConfig", "Service", schemaSection, "uploads", "scripts"}

func (e importFailed) Error() string {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, sec := range importSections {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(sec)
		v, _ := json.Marshal(e.resp[sec])
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.String()
}

// As lets renderError answer with eKuiper's code.
func (e importFailed) As(target any) bool {
	if re, ok := target.(**requestError); ok {
		*re = &requestError{code: codeUndefined, msg: e.Error()}
		return true
	}
	return false
}

func (e importFailed) Unwrap() error { return errBadRequest }

func (res *importResult) failure() error { return importFailed{res.configResponse()} }

// checkImport checks every item of an import without changing anything:
// confKey sections decode, statements parse and match their names, rules
// decode and read only streams and tables that the import (or, for a
// partial import, the catalog) has, schemas compile. It returns the
// schemas to store.
func (s *Server) checkImport(d *DataExport, partial bool) (*importResult, []catalog.Schema) {
	res := &importResult{errs: map[string]map[string]string{}}
	for _, sec := range confSections(d) {
		for _, typ := range sortedKeys(sec.m) {
			var keys map[string]map[string]any
			if err := json.Unmarshal([]byte(sec.m[typ]), &keys); err != nil {
				res.fail(sec.name, typ, badRequest("decode confKeys: %v", err))
			}
		}
	}
	known := map[string]bool{}
	for _, sec := range []struct {
		name string
		m    map[string]string
		kind streamKind
	}{{"streams", d.Streams, kindStream}, {"tables", d.Tables, kindTable}} {
		for _, name := range sortedKeys(sec.m) {
			// The engine's stream check waits for the apply phase: a
			// stream may use a confKey that the same import brings.
			if _, err := parseImportStream(sec.kind, name, sec.m[name]); err != nil {
				res.fail(sec.name, name, err)
				continue
			}
			known[name] = true
		}
	}
	for _, id := range sortedKeys(d.Rules) {
		def, err := s.parseRuleForPath([]byte(d.Rules[id]), id)
		if err != nil {
			res.fail("rules", id, err)
			continue
		}
		stmt, err := parser.ParseSelect(def.SQL)
		if err != nil {
			res.fail("rules", id, fmt.Errorf("%w: parse sql: %v", rule.ErrInvalid, err))
			continue
		}
		for _, n := range streamsRead(stmt) {
			if known[n] {
				continue
			}
			if _, err := s.cat.Stream(n); err == nil && partial {
				continue
			}
			res.fail("rules", id, fmt.Errorf("%w: stream or table %s is not found", rule.ErrInvalid, n))
			break
		}
	}
	s.checkImportJSFunctions(d.Scripts, res)
	schemas := s.importedSchemas(d.Schema, res)
	return res, schemas
}

func (s *Server) resetAll(ctx context.Context) error {
	for _, st := range s.rules.List() {
		if err := s.rules.Delete(ctx, st.ID); err != nil && !errors.Is(err, catalog.ErrNotFound) {
			return err
		}
	}
	for _, st := range s.cat.Streams("") {
		if err := s.cat.DeleteStream(ctx, st.Name); err != nil && !errors.Is(err, catalog.ErrNotFound) {
			return err
		}
	}
	if err := s.resetJSFunctions(ctx); err != nil {
		return err
	}
	if err := s.resetSchemas(ctx); err != nil {
		return err
	}
	for _, c := range []catalog.ConfCategory{catalog.ConfSource, catalog.ConfSink, catalog.ConfConnection} {
		for _, k := range s.cat.ConfKeys(c, "") {
			if err := s.cat.DeleteConfKey(ctx, c, k.Type, k.Key); err != nil && !errors.Is(err, catalog.ErrNotFound) {
				return err
			}
		}
	}
	return nil
}
