package schema

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/rekuiper/rekuiper/internal/catalog"
)

// jsonBase is the base URL of the registered JSON schemas: schema name is
// jsonBase+name+".json", so a "$ref": "other.json" names the registered
// JSON schema "other". Nothing else is loaded: no file, no network.
const jsonBase = "rekuiper:///schemas/json/"

type compiledJSON struct {
	content string
	schema  *jsonschema.Schema
}

// jsonValidator is a compiled JSON schema. It is safe for concurrent use.
type jsonValidator struct {
	name   string
	schema *jsonschema.Schema
}

// validate checks payload: a JSON object, or an array whose every element
// is checked on its own (a payload that is an array carries one record per
// element). The error names the schema and, briefly, what did not validate
// and where.
func (v *jsonValidator) validate(payload []byte) error {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(payload))
	if err != nil {
		return fmt.Errorf("json schema %s: %w", v.name, err)
	}
	if arr, ok := doc.([]any); ok {
		for i, el := range arr {
			if err := v.schema.Validate(el); err != nil {
				return fmt.Errorf("json schema %s: record %d: %s", v.name, i, briefValidation(err))
			}
		}
		return nil
	}
	if err := v.schema.Validate(doc); err != nil {
		return fmt.Errorf("json schema %s: %s", v.name, briefValidation(err))
	}
	return nil
}

// briefValidation is the innermost causes of a validation error on one
// line, such as "at '/a': got string, want integer".
func briefValidation(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	var parts []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			msg := strings.ReplaceAll(e.Error(), "\n", " ")
			if i := strings.Index(msg, "- at "); i >= 0 {
				msg = msg[i+2:]
			}
			parts = append(parts, msg)
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	if len(parts) > 5 {
		parts = append(parts[:5], fmt.Sprintf("and %d more", len(parts)-5))
	}
	return strings.Join(parts, "; ")
}

// JSONValidator resolves the SCHEMAID of a JSON stream, the name of a JSON
// schema, to a function that checks one payload (see format.JSONSchemas);
// the function is safe for concurrent use. A missing or broken schema is
// an error naming it.
func (r *Registry) JSONValidator(schemaID string) (func(payload []byte) error, error) {
	e, err := r.Get(TypeJSON, schemaID)
	if err != nil {
		return nil, fmt.Errorf("SCHEMAID %q: %w", schemaID, err)
	}
	r.mu.Lock()
	c, ok := r.jsonCache[schemaID]
	r.mu.Unlock()
	if ok && c.content == e.Content {
		return (&jsonValidator{name: schemaID, schema: c.schema}).validate, nil
	}
	sch, refs, err := r.compileJSON(schemaID, e.Content)
	if err != nil {
		return nil, fmt.Errorf("SCHEMAID %q: %w", schemaID, err)
	}
	if !refs {
		// The cache key is this schema's text only; one that refers to
		// other schemas, which may change, is compiled on every use.
		r.mu.Lock()
		r.jsonCache[schemaID] = compiledJSON{content: e.Content, schema: sch}
		r.mu.Unlock()
	}
	return (&jsonValidator{name: schemaID, schema: sch}).validate, nil
}

// compileJSON compiles the JSON schema text of schema name. refs reports
// whether it refers to other registered JSON schemas.
func (r *Registry) compileJSON(name, content string) (sch *jsonschema.Schema, refs bool, err error) {
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(content))
	if err != nil {
		return nil, false, fmt.Errorf("%w: json schema %s is not JSON: %w", ErrInvalid, name, err)
	}
	c := jsonschema.NewCompiler()
	loader := &jsonLoader{r: r, self: name}
	c.UseLoader(loader)
	loc := jsonBase + url.PathEscape(name) + ".json"
	if err := c.AddResource(loc, doc); err != nil {
		return nil, false, fmt.Errorf("%w: json schema %s: %w", ErrInvalid, name, err)
	}
	sch, err = c.Compile(loc)
	if err != nil {
		return nil, false, fmt.Errorf("%w: json schema %s: %s", ErrInvalid, name, strings.ReplaceAll(err.Error(), jsonBase, ""))
	}
	return sch, loader.loaded, nil
}

// jsonLoader resolves "$ref"s to other registered JSON schemas and refuses
// every other URL (a file of the host, the network).
type jsonLoader struct {
	r      *Registry
	self   string
	loaded bool
}

func (l *jsonLoader) Load(u string) (any, error) {
	rest, ok := strings.CutPrefix(u, jsonBase)
	name, isJSON := strings.CutSuffix(rest, ".json")
	if !ok || !isJSON {
		return nil, fmt.Errorf("only other registered json schemas (\"<name>.json\") can be referred to")
	}
	name, err := url.PathUnescape(name)
	if err != nil || ValidateName(name) != nil || name == l.self {
		return nil, fmt.Errorf("%q is not a json schema name", name)
	}
	e, err := l.r.Get(TypeJSON, name)
	if errors.Is(err, catalog.ErrNotFound) {
		return nil, fmt.Errorf("json schema %s is not registered", name)
	}
	if err != nil {
		return nil, err
	}
	l.loaded = true
	return jsonschema.UnmarshalJSON(strings.NewReader(e.Content))
}
