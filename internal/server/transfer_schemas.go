package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/schema"
)

// schemaSection is the name of the schemas' section of /data/export and
// /data/import (eKuiper's capitalized "Schema").
const schemaSection = "Schema"

// exportedSchema is one item of the Schema section: eKuiper's schema info,
// keyed "<type>_<name>".
type exportedSchema struct {
	Type    string `json:"type"`
	Name    string `json:"name"`
	Content string `json:"content,omitempty"`
	File    string `json:"file,omitempty"`
	SoFile  string `json:"soFile,omitempty"`
	Version string `json:"version,omitempty"`
}

func schemaKey(typ, name string) string { return typ + "_" + name }

// exportSchemas is the Schema section: every schema registered in the
// catalog, with its text. Schemas of etc files are not exported: they are
// files of the installation, not of the catalog.
func (s *Server) exportSchemas() (map[string]string, error) {
	out := map[string]string{}
	for _, sc := range s.cat.Schemas("") {
		b, err := json.Marshal(exportedSchema{Type: sc.Type, Name: sc.Name, Content: sc.Content, File: sc.File, Version: sc.Version})
		if err != nil {
			return nil, fmt.Errorf("export schema %s/%s: %w", sc.Type, sc.Name, err)
		}
		out[schemaKey(sc.Type, sc.Name)] = string(b)
	}
	return out, nil
}

// importedSchemas decodes and checks the Schema section of an import as
// POST /schemas/{type} checks a body, failures recorded in res. Schemas of
// the section may import or refer to each other: each is compiled with
// the section's schemas seen before the catalog's.
func (s *Server) importedSchemas(section map[string]string, res *importResult) []catalog.Schema {
	var decoded []catalog.Schema
	for _, key := range sortedKeys(section) {
		sc, err := s.decodeImportedSchema(key, section[key])
		if err != nil {
			res.fail(schemaSection, key, err)
			continue
		}
		decoded = append(decoded, sc)
	}
	view := s.schemas.WithOverlay(decoded)
	var ok []catalog.Schema
	for _, sc := range decoded {
		if err := view.Check(context.Background(), sc.Type, sc.Name, sc.Content); err != nil {
			res.fail(schemaSection, schemaKey(sc.Type, sc.Name), schemaErr(err))
			continue
		}
		ok = append(ok, sc)
	}
	return ok
}

func (s *Server) decodeImportedSchema(key, js string) (catalog.Schema, error) {
	var e exportedSchema
	if err := decodeBytes([]byte(js), &e); err != nil {
		return catalog.Schema{}, err
	}
	if err := schema.ValidateType(e.Type); err != nil {
		return catalog.Schema{}, schemaErr(err)
	}
	if err := schema.ValidateName(e.Name); err != nil {
		return catalog.Schema{}, schemaErr(err)
	}
	if key != schemaKey(e.Type, e.Name) {
		return catalog.Schema{}, badRequest("key %q does not match the schema's type and name (want %q)", key, schemaKey(e.Type, e.Name))
	}
	if e.SoFile != "" {
		return catalog.Schema{}, badRequest("soFile: rekuiper does not load native plugins; a schema needs only its text")
	}
	if e.Content == "" && e.File != "" {
		content, err := s.readSchemaFile(e.File)
		if err != nil {
			return catalog.Schema{}, err
		}
		e.Content = content
	}
	if e.Content == "" {
		return catalog.Schema{}, badRequest("schema %s/%s has no content", e.Type, e.Name)
	}
	return catalog.Schema{Type: e.Type, Name: e.Name, Content: e.Content, File: e.File, Version: e.Version}, nil
}

// importSchemas stores the schemas that passed importedSchemas; a
// schema of the same type and name is replaced.
func (s *Server) importSchemas(ctx context.Context, schemas []catalog.Schema, res *importResult) {
	for _, sc := range schemas {
		if _, err := s.cat.PutSchema(ctx, sc, catalog.Upsert); err != nil {
			res.fail(schemaSection, schemaKey(sc.Type, sc.Name), err)
		}
	}
}

// resetSchemas deletes every registered schema (full /data/import, after
// the streams and rules are gone).
func (s *Server) resetSchemas(ctx context.Context) error {
	for _, sc := range s.cat.Schemas("") {
		if err := s.cat.DeleteSchema(ctx, sc.Type, sc.Name); err != nil && !errors.Is(err, catalog.ErrNotFound) {
			return err
		}
	}
	return nil
}
