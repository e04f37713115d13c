package server

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rekuiper/rekuiper/internal/catalog"
	access "github.com/rekuiper/rekuiper/internal/guard"
	"github.com/rekuiper/rekuiper/internal/rule"
	"github.com/rekuiper/rekuiper/internal/schema"
	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/sql/parser"
)

// schemaRoutes serves eKuiper's /schemas/{type} routes, for the types
// protobuf and json. Schemas registered here live in the catalog;
// etc/schemas/protobuf/*.proto and etc/schemas/json/*.json files are
// listed and described too, but are read-only.
func (s *Server) schemaRoutes() {
	s.schemas = schema.New(s.cat, s.opts.Config.Paths.Etc)
	s.handle("GET /schemas/{type}", s.listSchemas)
	s.handle("POST /schemas/{type}", s.createSchema)
	s.handle("GET /schemas/{type}/{name}", s.describeSchema)
	s.handle("PUT /schemas/{type}/{name}", s.updateSchema)
	s.handle("DELETE /schemas/{type}/{name}", s.deleteSchema)
}

// schemaBody is the JSON of POST and PUT.
type schemaBody struct {
	Name    string `json:"name"`
	Content string `json:"content"`
	File    string `json:"file"`
	SoFile  string `json:"soFile"`
	Version string `json:"version"`
}

func schemaErr(err error) error {
	if errors.Is(err, schema.ErrInvalid) || errors.Is(err, schema.ErrReadOnly) {
		return badRequest("%v", err)
	}
	return err
}

func (s *Server) listSchemas(w http.ResponseWriter, r *http.Request) error {
	typ := r.PathValue("type")
	if err := schema.ValidateType(typ); err != nil {
		if typ == schema.TypeCustom {
			return writeJSON(w, http.StatusOK, []string{})
		}
		return schemaErr(err)
	}
	names := []string{}
	for _, e := range s.schemas.List(typ) {
		names = append(names, e.Name)
	}
	return writeJSON(w, http.StatusOK, names)
}

// schemaAt is the schema of the path's type and name, the name checked
// first.
func (s *Server) schemaAt(r *http.Request) (typ, name string, e schema.Entry, err error) {
	typ, name = r.PathValue("type"), r.PathValue("name")
	if err := schema.ValidateName(name); err != nil {
		return typ, name, e, schemaErr(err)
	}
	if e, err = s.schemas.Get(typ, name); err != nil {
		return typ, name, e, schemaErr(err)
	}
	return typ, name, e, nil
}

func (s *Server) describeSchema(w http.ResponseWriter, r *http.Request) error {
	_, _, e, err := s.schemaAt(r)
	if err != nil {
		return err
	}
	v := map[string]any{"type": e.Type, "name": e.Name, "content": e.Content, "file": e.File}
	if e.Version != "" {
		v["version"] = e.Version
	}
	return writeJSON(w, http.StatusOK, v)
}

func (s *Server) createSchema(w http.ResponseWriter, r *http.Request) error {
	typ := r.PathValue("type")
	var b schemaBody
	if err := decodeStrict(r, &b); err != nil {
		return err
	}
	sc, err := s.checkSchema(r, typ, b)
	if err != nil {
		return err
	}
	if e, err := s.schemas.Get(typ, b.Name); err == nil {
		return fmt.Errorf("%s schema %s (%s): %w", typ, b.Name, schemaOrigin(e), catalog.ErrConflict)
	}
	if _, err := s.cat.PutSchema(r.Context(), sc, catalog.Create); err != nil {
		return fmt.Errorf("create %s schema %s: %w", typ, b.Name, err)
	}
	return writeText(w, http.StatusCreated, "%s schema %s is created", typ, b.Name)
}

func (s *Server) updateSchema(w http.ResponseWriter, r *http.Request) error {
	typ, name := r.PathValue("type"), r.PathValue("name")
	var b schemaBody
	if err := decodeStrict(r, &b); err != nil {
		return err
	}
	if b.Name == "" {
		b.Name = name
	}
	if b.Name != name {
		return badRequest("body name %q does not match the path's %q", b.Name, name)
	}
	sc, err := s.checkSchema(r, typ, b)
	if err != nil {
		return err
	}
	old, err := s.schemas.Get(typ, name)
	switch {
	case err == nil && old.FromFile != "":
		return badRequest("%v: %s schema %s comes from %s; edit the file", schema.ErrReadOnly, typ, name, old.FromFile)
	case err == nil && (old.Version != "" || sc.Version != "") && sc.Version <= old.Version:
		return fmt.Errorf("%s schema %s: version %q is not newer than %q: %w", typ, name, sc.Version, old.Version, catalog.ErrConflict)
	case err != nil && !errors.Is(err, catalog.ErrNotFound):
		return err
	}
	if _, err := s.cat.PutSchema(r.Context(), sc, catalog.Upsert); err != nil {
		return fmt.Errorf("update %s schema %s: %w", typ, name, err)
	}
	return writeText(w, http.StatusOK, "%s schema %s is updated", typ, name)
}

func (s *Server) deleteSchema(w http.ResponseWriter, r *http.Request) error {
	typ, name, e, err := s.schemaAt(r)
	if err != nil {
		return err
	}
	if e.FromFile != "" {
		return badRequest("%v: %s schema %s comes from %s; remove the file", schema.ErrReadOnly, typ, name, e.FromFile)
	}
	if refs := s.schemaUsers(typ, name); len(refs) > 0 {
		return fmt.Errorf("%s schema %s is used by %s: %w", typ, name, strings.Join(refs, ", "), errReferenced)
	}
	if err := s.cat.DeleteSchema(r.Context(), typ, name); err != nil {
		return fmt.Errorf("delete %s schema %s: %w", typ, name, err)
	}
	return writeText(w, http.StatusOK, "%s schema %s is deleted", typ, name)
}

// checkSchema validates a POST or PUT body and compiles its schema text,
// so a schema that cannot be used is refused with the compiler's error
// (protobuf: file:line:col).
func (s *Server) checkSchema(r *http.Request, typ string, b schemaBody) (catalog.Schema, error) {
	if err := schema.ValidateType(typ); err != nil {
		return catalog.Schema{}, schemaErr(err)
	}
	if err := schema.ValidateName(b.Name); err != nil {
		return catalog.Schema{}, schemaErr(err)
	}
	if b.SoFile != "" {
		return catalog.Schema{}, badRequest("soFile: rekuiper does not load native plugins; a protobuf schema needs only its .proto text")
	}
	content := b.Content
	switch {
	case b.Content != "" && b.File != "":
		return catalog.Schema{}, badRequest("give either content or file, not both")
	case b.File != "":
		var err error
		if content, err = s.readSchemaFile(b.File); err != nil {
			return catalog.Schema{}, err
		}
	case strings.TrimSpace(b.Content) == "":
		return catalog.Schema{}, badRequest("content or file is required")
	}
	if err := s.schemas.Check(r.Context(), typ, b.Name, content); err != nil {
		return catalog.Schema{}, schemaErr(err)
	}
	return catalog.Schema{Type: typ, Name: b.Name, Content: content, File: b.File, Version: b.Version}, nil
}

// maxSchemaFile bounds a schema file read from disk.
const maxSchemaFile = 4 << 20

// readSchemaFile reads a file:// URL under the data folder's uploads
// directory (where /config/uploads puts files). Other places and http(s)
// URLs are refused: the REST API must not read arbitrary files of the host
// nor fetch from the network on a client's behalf.
func (s *Server) readSchemaFile(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "file" {
		return "", badRequest("file %q: only file:// URLs of files under data/uploads are read; upload the file first or send its text as content", raw)
	}
	dir, g, err := s.uploadDir()
	if err != nil {
		return "", err
	}
	p := filepath.Clean(u.Path)
	if rel, err := filepath.Rel(dir, p); err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return "", badRequest("file %q is not under %s", raw, dir)
	}
	// Opened through the uploads folder's guard: a symbolic link on the
	// way (a folder of data/uploads linked to /etc) is refused, and what is
	// checked below is the file read.
	f, err := g.OpenFile("file", p, os.O_RDONLY, 0)
	if errors.Is(err, access.ErrOutside) {
		return "", badRequest("file %q: %v", raw, err)
	} else if err != nil {
		return "", badRequest("file %q: not a regular file", raw)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return "", badRequest("file %q: not a regular file", raw)
	}
	if fi.Size() > maxSchemaFile {
		return "", badRequest("file %q: larger than %d bytes", raw, maxSchemaFile)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxSchemaFile+1))
	if err != nil {
		return "", badRequest("file %q: %v", raw, err)
	}
	if len(b) > maxSchemaFile {
		return "", badRequest("file %q: larger than %d bytes", raw, maxSchemaFile)
	}
	return string(b), nil
}

// schemaUsers lists the streams, tables and rule actions whose SCHEMAID
// or schemaId names schema typ/name: a protobuf schema by "name.Message"
// in a protobuf definition, a JSON schema by its name in a JSON one.
func (s *Server) schemaUsers(typ, name string) []string {
	uses := func(format, id string) bool {
		if format == "" {
			format = schema.TypeJSON
		}
		if !strings.EqualFold(format, typ) {
			return false
		}
		if typ == schema.TypeJSON {
			return id == name
		}
		n, _, _ := strings.Cut(id, ".")
		return n == name
	}
	var refs []string
	for _, k := range []catalog.StreamKind{catalog.KindStream, catalog.KindTable} {
		for _, st := range s.cat.Streams(k) {
			parsed, err := parser.ParseStatement(st.SQL)
			if err != nil {
				continue
			}
			if cs, ok := parsed.(*ast.CreateStreamStmt); ok {
				f, _ := cs.Option("FORMAT")
				if id, ok := cs.Option("SCHEMAID"); ok && uses(f, id) {
					refs = append(refs, string(k)+" "+st.Name)
				}
			}
		}
	}
	for _, id := range s.rulesWhere(func(def *rule.Def) bool {
		return slices.ContainsFunc(def.Actions, func(a rule.Action) bool {
			f, _ := a.Props["format"].(string)
			id, ok := a.Props["schemaId"].(string)
			return ok && uses(f, id)
		})
	}) {
		refs = append(refs, "rule "+id)
	}
	return refs
}

func schemaOrigin(e schema.Entry) string {
	if e.FromFile != "" {
		return "file " + e.FromFile
	}
	return "registered"
}
