package server

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/format"
	"github.com/rekuiper/rekuiper/internal/function"
)

// The metadata routes the eKuiper Manager UI reads. Everything here is
// generated from the connector property specs and the function registry,
// so it cannot drift from what the engine accepts.
func (s *Server) metadataRoutes() {
	for _, k := range []struct {
		path string
		kind connector.Kind
	}{{"sources", connector.KindSource}, {"sinks", connector.KindSink}, {"lookups", connector.KindLookup}} {
		s.handle("GET /metadata/"+k.path, s.listConnectorMeta(k.kind))
		s.handle("GET /metadata/"+k.path+"/{type}", s.connectorMeta(k.kind))
		s.handle("POST /metadata/"+k.path+"/connection/{type}", s.pingConnector(k.kind))
	}
	s.handle("GET /metadata/functions", s.functionMeta)
	s.handle("GET /metadata/formats", s.formatMeta)
}

// metaLanguage is eKuiper's {"en": ..., "zh": ...} text.
type metaLanguage struct {
	English string `json:"en"`
	Chinese string `json:"zh"`
}

func text(s string) *metaLanguage { return &metaLanguage{English: s, Chinese: s} }

type metaAbout struct {
	Trial       bool          `json:"trial"`
	Installed   bool          `json:"installed"`
	Description *metaLanguage `json:"description"`
}

type metaField struct {
	Name              string        `json:"name"`
	Default           any           `json:"default"`
	Type              string        `json:"type"`
	Control           string        `json:"control"`
	ConnectionRelated bool          `json:"connection_related"`
	Optional          bool          `json:"optional"`
	Values            any           `json:"values,omitempty"`
	Hint              *metaLanguage `json:"hint"`
	Label             *metaLanguage `json:"label"`
}

func aboutOf(kind connector.Kind, typ string) *metaAbout {
	return &metaAbout{Installed: true, Description: text(fmt.Sprintf("the built-in %s %s", typ, kind))}
}

// fieldsOf turns a property spec into the UI's field list.
func fieldsOf(spec connector.Spec) []metaField {
	out := make([]metaField, 0, len(spec.Props))
	for _, p := range spec.Props {
		f := metaField{
			Name: p.Name, Default: p.Default, Optional: !p.Required,
			Hint: text(p.Doc), Label: text(p.Name),
		}
		switch p.Type {
		case connector.TypeInt, connector.TypeDuration:
			f.Type, f.Control = "int", "text"
		case connector.TypeFloat:
			f.Type, f.Control = "float", "text"
		case connector.TypeBool:
			f.Type, f.Control = "bool", "radio"
		case connector.TypeList:
			f.Type, f.Control = "list_object", "list"
		case connector.TypeMap:
			f.Type, f.Control = "object", "textarea"
		default:
			f.Type, f.Control = "string", "text"
		}
		if p.Secret {
			f.Control = "password"
		}
		if len(p.Enum) > 0 {
			f.Control, f.Values = "select", p.Enum
		}
		out = append(out, f)
	}
	return out
}

func (s *Server) listConnectorMeta(kind connector.Kind) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		out := []map[string]any{}
		for _, name := range s.opts.Connectors.Names(kind) {
			out = append(out, map[string]any{"name": name, "about": aboutOf(kind, name), "type": "internal"})
		}
		return writeJSON(w, http.StatusOK, out)
	}
}

func (s *Server) connectorMeta(kind connector.Kind) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		typ := strings.ToLower(r.PathValue("type"))
		spec, err := s.opts.Connectors.Spec(kind, typ)
		if err != nil {
			return notFound(err)
		}
		out := map[string]any{"about": aboutOf(kind, typ), "libs": []string{}, "node": nil, "type": "internal"}
		if kind == connector.KindSink {
			out["properties"] = fieldsOf(spec)
		} else {
			out["properties"] = map[string]any{"default": fieldsOf(spec)}
		}
		return writeJSON(w, http.StatusOK, out)
	}
}

// errNotFound marks things other than catalog entries that are not there.
var errNotFound = errors.New("not found")

func notFound(err error) error { return fmt.Errorf("%w: %w", errNotFound, err) }

// functionMeta lists the built-in functions grouped by kind, in the shape
// of eKuiper's function metadata ({name, about, functions: [...]}), then
// the JavaScript functions of /udf/javascript in a group "javascript".
func (s *Server) functionMeta(w http.ResponseWriter, r *http.Request) error {
	groups := map[function.Kind][]map[string]any{}
	for _, name := range s.opts.Functions.Names() {
		d, _ := s.opts.Functions.Lookup(name)
		if d.Name != name { // an alias: listed under its definition
			continue
		}
		args := d.MaxArgs
		groups[d.Kind] = append(groups[d.Kind], map[string]any{
			"name": d.Name, "aliases": nonNilStrings(d.Aliases), "type": d.Kind.String(),
			"aggregate": d.Kind == function.Aggregate, "minArgs": d.MinArgs, "maxArgs": args,
		})
	}
	out := []map[string]any{}
	for _, k := range []function.Kind{function.Scalar, function.Aggregate, function.Analytic, function.SRF} {
		fs := groups[k]
		if fs == nil {
			fs = []map[string]any{}
		}
		out = append(out, map[string]any{
			"name": k.String(), "about": &metaAbout{Installed: true, Description: text(k.String() + " functions")},
			"functions": fs,
		})
	}
	js, err := s.jsFunctionMeta(r.Context())
	if err != nil {
		return err
	}
	out = append(out, map[string]any{
		"name": "javascript", "about": &metaAbout{Installed: true, Description: text("JavaScript functions (/udf/javascript)")},
		"functions": js,
	})
	return writeJSON(w, http.StatusOK, out)
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return slices.Clone(s)
}

// formatMeta lists the payload formats the engine decodes and encodes.
func (s *Server) formatMeta(w http.ResponseWriter, r *http.Request) error {
	out := []map[string]any{}
	for _, f := range []string{format.JSON, format.Binary, format.Delimited, format.URLEncoded} {
		out = append(out, map[string]any{"name": f, "schema": false})
	}
	return writeJSON(w, http.StatusOK, out)
}
