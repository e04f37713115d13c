package schema_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/schema"
)

func TestValidateName(t *testing.T) {
	for _, ok := range []string{"demo", "a-b_c", "v1.2", "x.proto"} {
		if err := schema.ValidateName(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "a/b", `a\b`, "..", "a..b", ".hidden", "c:x", "a\x00b", strings.Repeat("n", 129)} {
		if err := schema.ValidateName(bad); !errors.Is(err, schema.ErrInvalid) {
			t.Errorf("%q: err = %v, want ErrInvalid", bad, err)
		}
	}
}

func newRegistry(t *testing.T) (*schema.Registry, *catalog.Catalog, string) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	st, err := catalog.Open(ctx, filepath.Join(dir, "kv.db"), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cat, err := catalog.New(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	etc := filepath.Join(dir, "etc")
	return schema.New(cat, etc), cat, etc
}

func TestProtoMessage(t *testing.T) {
	r, cat, etc := newRegistry(t)
	ctx := context.Background()
	put := func(name, content string) {
		t.Helper()
		if _, err := cat.PutSchema(ctx, catalog.Schema{Type: "protobuf", Name: name, Content: content}, catalog.Upsert); err != nil {
			t.Fatal(err)
		}
	}
	put("pkg", `syntax = "proto3"; package a.b; message Outer { message Inner { int64 x = 1; } Inner in = 1; }`)
	put("base", `syntax = "proto3"; message Base { int64 v = 1; }`)
	put("user", `syntax = "proto3"; import "base.proto"; message User { Base b = 1; }`)
	if err := os.MkdirAll(filepath.Join(etc, "schemas", "protobuf"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(etc, "schemas", "protobuf", "file.proto"), []byte(`syntax = "proto3"; message F { string s = 1; }`), 0o644); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{
		"pkg.Outer": "a.b.Outer", "pkg.a.b.Outer": "a.b.Outer", "pkg.Outer.Inner": "a.b.Outer.Inner",
		"user.User": "User", "file.F": "F",
	} {
		md, err := r.ProtoMessage(id)
		if err != nil || string(md.FullName()) != want {
			t.Errorf("%s: %v, %v; want %s", id, md, err, want)
		}
	}
	for id, want := range map[string]string{
		"pkg":           `want "schema.Message"`,
		"pkg.Nope":      `schema pkg has no message "Nope"; its messages are Outer`,
		"nosuch.M":      "not found",
		"a/b.M":         "invalid schema",
		"../x.M":        `want "schema.Message"`,
		"pkg.Outer.Bad": `no message "Outer.Bad"`,
	} {
		if _, err := r.ProtoMessage(id); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", id, err, want)
		}
	}
	// A changed import is seen by the schema importing it.
	put("base", `syntax = "proto3"; message Base { int64 v = 1; string w = 2; }`)
	md, err := r.ProtoMessage("user.User")
	if err != nil {
		t.Fatal(err)
	}
	if md.Fields().Get(0).Message().Fields().ByName("w") == nil {
		t.Error("user.User still sees the old base.proto")
	}
	// A catalog schema hides the etc file of the same name.
	put("file", `syntax = "proto3"; message G { string s = 1; }`)
	if _, err := r.ProtoMessage("file.G"); err != nil {
		t.Errorf("catalog schema does not win over the file: %v", err)
	}
}

func TestJSONValidator(t *testing.T) {
	r, cat, etc := newRegistry(t)
	ctx := context.Background()
	put := func(name, content string) {
		t.Helper()
		if _, err := cat.PutSchema(ctx, catalog.Schema{Type: schema.TypeJSON, Name: name, Content: content}, catalog.Upsert); err != nil {
			t.Fatal(err)
		}
	}
	put("reading", `{"type":"object","required":["id"],"properties":{"id":{"type":"string"},"t":{"type":"number","maximum":100},"loc":{"$ref":"loc.json"}}}`)
	put("loc", `{"type":"object","properties":{"lat":{"type":"number"}}}`)
	if err := os.MkdirAll(filepath.Join(etc, "schemas", "json"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(etc, "schemas", "json", "filed.json"), []byte(`{"type":"object","required":["n"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	validate, err := r.JSONValidator("reading")
	if err != nil {
		t.Fatal(err)
	}
	for _, ok := range []string{`{"id":"a"}`, `{"id":"a","t":20.5,"loc":{"lat":1}}`, `[{"id":"a"},{"id":"b","t":3}]`} {
		if err := validate([]byte(ok)); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for payload, want := range map[string]string{
		`{"t":1}`:                         `json schema reading: at '': missing property 'id'`,
		`{"id":1}`:                        `at '/id': got number, want string`,
		`{"id":"a","t":101}`:              `at '/t': maximum: got 101, want 100`,
		`{"id":"a","loc":{"lat":"x"}}`:    `at '/loc/lat': got string, want number`,
		`[{"id":"a"},{"id":"b","t":"x"}]`: `json schema reading: record 1: at '/t'`,
		`{"id":`:                          `json schema reading:`,
	} {
		if err := validate([]byte(payload)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", payload, err, want)
		}
	}
	// A change of a referenced schema is seen by the schema referring to it.
	put("loc", `{"type":"object","properties":{"lat":{"type":"string"}}}`)
	if validate, err = r.JSONValidator("reading"); err != nil {
		t.Fatal(err)
	}
	if err := validate([]byte(`{"id":"a","loc":{"lat":"x"}}`)); err != nil {
		t.Errorf("reading still sees the old loc: %v", err)
	}
	// An etc file is found by name.
	if validate, err = r.JSONValidator("filed"); err != nil {
		t.Fatal(err)
	}
	if err := validate([]byte(`{}`)); err == nil {
		t.Error("the etc file's schema is not applied")
	}
	if _, err := r.JSONValidator("nosuch"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("unknown schema: %v", err)
	}
}

func TestCheckJSONSchema(t *testing.T) {
	r, _, _ := newRegistry(t)
	ctx := context.Background()
	secret := filepath.Join(t.TempDir(), "secret.json")
	if err := os.WriteFile(secret, []byte(`{"type":"string"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := r.Check(ctx, schema.TypeJSON, "ok", `{"type":"object"}`); err != nil {
		t.Errorf("valid schema refused: %v", err)
	}
	for content, want := range map[string]string{
		`{"type":`:                                   "is not JSON",
		`{"type":"nosuchtype"}`:                      "json schema bad",
		`{"$ref":"file://` + secret + `"}`:           "only other registered json schemas",
		`{"$ref":"http://127.0.0.1:1/x.json"}`:       "only other registered json schemas",
		`{"$ref":"missing.json"}`:                    "json schema missing is not registered",
		`{"properties":{"a":{"$ref":"a%2Fb.json"}}}`: `"a/b" is not a json schema name`,
		`{"$ref":"../x.json"}`:                       "only other registered json schemas",
	} {
		err := r.Check(ctx, schema.TypeJSON, "bad", content)
		if !errors.Is(err, schema.ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want ErrInvalid containing %q", content, err, want)
		}
	}
	if err := r.Check(ctx, "custom", "c", "{}"); !errors.Is(err, schema.ErrInvalid) {
		t.Errorf("custom: %v", err)
	}
}
