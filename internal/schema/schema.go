// Package schema is the schema registry behind /schemas and the SCHEMAID of
// streams: it validates schema names, compiles .proto text with
// protocompile and resolves "schema.Message" to a message descriptor, and
// compiles JSON schemas (jsonschema.go) that JSON streams validate their
// records against.
//
// Schemas come from two places. Those registered over REST live in the
// catalog. Files under etc/schemas/protobuf/<name>.proto (where eKuiper
// keeps its schemas) and etc/schemas/json/<name>.json are read-only
// baselines: they are found by name unless the catalog holds a schema of
// the same type and name, which wins.
// Compiled schemas are cached by name and content, so a replaced schema is
// compiled again on its next use; one that imports other schemas is
// compiled on every use (decoders resolve it once, when a rule starts).
package schema

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/rekuiper/rekuiper/internal/catalog"
)

// Schema types.
const (
	TypeProtobuf = "protobuf"
	TypeJSON     = "json"
	TypeCustom   = "custom"
)

// Types are the schema types the registry holds.
var Types = []string{TypeProtobuf, TypeJSON}

// fileExt is the extension of a type's schema files under etc.
var fileExt = map[string]string{TypeProtobuf: ".proto", TypeJSON: ".json"}

// ErrInvalid marks a bad schema name, type or text.
var ErrInvalid = errors.New("invalid schema")

// ErrReadOnly marks a change to a schema that comes from a file under etc.
var ErrReadOnly = errors.New("schema file is read-only")

// Entry is one schema with where it comes from.
type Entry struct {
	catalog.Schema
	// FromFile is the etc file the schema comes from ("" for the catalog).
	FromFile string
}

// Registry resolves schemas. It is safe for concurrent use.
type Registry struct {
	cat *catalog.Catalog
	etc string // etc folder; "" reads no files

	// overlay holds schemas seen before the catalog (see WithOverlay),
	// by type/name.
	overlay map[string]catalog.Schema

	mu        sync.Mutex
	cache     map[string]compiled
	jsonCache map[string]compiledJSON
}

type compiled struct {
	content string
	file    protoreflect.FileDescriptor
}

// New returns a registry over cat and the schema files of the etc folder.
func New(cat *catalog.Catalog, etc string) *Registry {
	return &Registry{cat: cat, etc: etc, cache: map[string]compiled{}, jsonCache: map[string]compiledJSON{}}
}

// WithOverlay returns a view of the registry in which schemas are found
// first, before the catalog and the etc files: an import checks its
// schemas, which may import each other, before it stores any. The view
// has its own caches.
func (r *Registry) WithOverlay(schemas []catalog.Schema) *Registry {
	v := New(r.cat, r.etc)
	v.overlay = make(map[string]catalog.Schema, len(schemas))
	for _, sc := range schemas {
		v.overlay[sc.Type+"/"+sc.Name] = sc
	}
	return v
}

// ValidateName refuses names that are empty, too long, or could leave a
// folder: path separators, "..", a leading dot, control characters; and
// names that are not valid UTF-8.
func ValidateName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty name", ErrInvalid)
	case len(name) > 128:
		return fmt.Errorf("%w: name longer than 128 bytes", ErrInvalid)
	case strings.ContainsAny(name, `/\:`) || strings.Contains(name, ".."):
		return fmt.Errorf("%w: name %q contains a path separator or \"..\"", ErrInvalid, name)
	case strings.HasPrefix(name, "."):
		return fmt.Errorf("%w: name %q starts with a dot", ErrInvalid, name)
	case strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return fmt.Errorf("%w: name %q contains a control character", ErrInvalid, name)
	case !utf8.ValidString(name) || strings.ContainsRune(name, utf8.RuneError):
		// U+FFFD is what a JSON decoder leaves of invalid UTF-8.
		return fmt.Errorf("%w: name %q is not valid UTF-8", ErrInvalid, name)
	}
	return nil
}

// ValidateType accepts protobuf and json and refuses custom (it needs
// native plugins) and anything else.
func ValidateType(typ string) error {
	switch typ {
	case TypeProtobuf, TypeJSON:
		return nil
	case TypeCustom:
		return fmt.Errorf("%w: schema type custom needs native plugins, which rekuiper does not load; use protobuf or json", ErrInvalid)
	}
	return fmt.Errorf("%w: unknown schema type %q; the types are protobuf and json", ErrInvalid, typ)
}

// Check compiles the text of schema typ/name, so that a schema that
// cannot be used is refused when it is registered; the error carries the
// compiler's position or reason.
func (r *Registry) Check(ctx context.Context, typ, name, content string) error {
	if err := ValidateType(typ); err != nil {
		return err
	}
	if typ == TypeJSON {
		_, _, err := r.compileJSON(name, content)
		return err
	}
	_, err := r.Compile(ctx, name, content)
	return err
}

// Compile compiles the .proto text of schema name and returns its file.
// Imports of the well-known types (google/protobuf/*.proto) and of other
// protobuf schemas by "<name>.proto" resolve; an error carries the
// position (name.proto:line:col).
func (r *Registry) Compile(ctx context.Context, name, content string) (protoreflect.FileDescriptor, error) {
	path := name + ".proto"
	c := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
			Accessor: func(p string) (io.ReadCloser, error) {
				if p == path {
					return io.NopCloser(strings.NewReader(content)), nil
				}
				dep, ok := strings.CutSuffix(p, ".proto")
				if !ok || ValidateName(dep) != nil || dep == name {
					return nil, fmt.Errorf("import %q: %w", p, os.ErrNotExist)
				}
				e, err := r.Get(TypeProtobuf, dep)
				if err != nil {
					return nil, fmt.Errorf("import %q: %w", p, os.ErrNotExist)
				}
				return io.NopCloser(strings.NewReader(e.Content)), nil
			},
		}),
	}
	files, err := c.Compile(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return files[0], nil
}

// Get returns schema typ/name from the catalog or, failing that, its etc
// file. A missing schema wraps catalog.ErrNotFound.
func (r *Registry) Get(typ, name string) (Entry, error) {
	if err := ValidateName(name); err != nil {
		return Entry{}, err
	}
	if s, ok := r.overlay[typ+"/"+name]; ok {
		return Entry{Schema: s}, nil
	}
	s, err := r.cat.Schema(typ, name)
	if err == nil {
		return Entry{Schema: s}, nil
	}
	if !errors.Is(err, catalog.ErrNotFound) {
		return Entry{}, err
	}
	if f := r.file(typ, name); f != "" {
		if b, ferr := os.ReadFile(f); ferr == nil {
			return Entry{Schema: catalog.Schema{Type: typ, Name: name, Content: string(b), File: f}, FromFile: f}, nil
		}
	}
	return Entry{}, fmt.Errorf("schema %s/%s: %w", typ, name, catalog.ErrNotFound)
}

// List returns the schemas of typ, catalog and files merged, by name.
func (r *Registry) List(typ string) []Entry {
	seen := map[string]bool{}
	var out []Entry
	for _, s := range r.cat.Schemas(typ) {
		seen[s.Name] = true
		out = append(out, Entry{Schema: s})
	}
	if dir := r.dir(typ); dir != "" {
		ents, _ := os.ReadDir(dir)
		for _, de := range ents {
			name, ok := strings.CutSuffix(de.Name(), fileExt[typ])
			if !ok || de.IsDir() || seen[name] || ValidateName(name) != nil {
				continue
			}
			if e, err := r.Get(typ, name); err == nil {
				out = append(out, e)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (r *Registry) dir(typ string) string {
	if r.etc == "" || fileExt[typ] == "" {
		return ""
	}
	return filepath.Join(r.etc, "schemas", typ)
}

func (r *Registry) file(typ, name string) string {
	if d := r.dir(typ); d != "" {
		return filepath.Join(d, name+fileExt[typ])
	}
	return ""
}

// ProtoMessage resolves schemaID "schema.Message" (the message may be
// package-qualified or nested: "schema.pkg.Outer.Inner").
func (r *Registry) ProtoMessage(schemaID string) (protoreflect.MessageDescriptor, error) {
	name, msg, ok := strings.Cut(schemaID, ".")
	if !ok || name == "" || msg == "" {
		return nil, fmt.Errorf("SCHEMAID %q: want \"schema.Message\"", schemaID)
	}
	e, err := r.Get(TypeProtobuf, name)
	if err != nil {
		return nil, fmt.Errorf("SCHEMAID %q: %w", schemaID, err)
	}
	fd, err := r.compiled(name, e.Content)
	if err != nil {
		return nil, fmt.Errorf("SCHEMAID %q: %w", schemaID, err)
	}
	if md := findMessage(fd, msg); md != nil {
		return md, nil
	}
	var names []string
	for i := range fd.Messages().Len() {
		names = append(names, string(fd.Messages().Get(i).Name()))
	}
	return nil, fmt.Errorf("SCHEMAID %q: schema %s has no message %q; its messages are %s",
		schemaID, name, msg, strings.Join(names, ", "))
}

func (r *Registry) compiled(name, content string) (protoreflect.FileDescriptor, error) {
	r.mu.Lock()
	c, ok := r.cache[name]
	r.mu.Unlock()
	if ok && c.content == content {
		return c.file, nil
	}
	fd, err := r.Compile(context.Background(), name, content)
	if err != nil {
		return nil, err
	}
	if importsSchemas(fd) {
		// The cache key is this schema's text only; a schema it imports
		// may change, so compile it again on every use.
		return fd, nil
	}
	r.mu.Lock()
	r.cache[name] = compiled{content: content, file: fd}
	r.mu.Unlock()
	return fd, nil
}

// importsSchemas reports whether fd imports anything besides the
// well-known types.
func importsSchemas(fd protoreflect.FileDescriptor) bool {
	imps := fd.Imports()
	for i := range imps.Len() {
		if !strings.HasPrefix(imps.Get(i).Path(), "google/protobuf/") {
			return true
		}
	}
	return false
}

func findMessage(fd protoreflect.FileDescriptor, msg string) protoreflect.MessageDescriptor {
	if pkg := string(fd.Package()); pkg != "" {
		msg = strings.TrimPrefix(msg, pkg+".")
	}
	parts := strings.Split(msg, ".")
	md := fd.Messages().ByName(protoreflect.Name(parts[0]))
	for _, p := range parts[1:] {
		if md == nil {
			return nil
		}
		md = md.Messages().ByName(protoreflect.Name(p))
	}
	return md
}
