package sdk_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/sdk"
)

// recordSource is a source that keeps the properties its factory got.
type recordSource struct{ props map[string]any }

func (recordSource) Connect(context.Context) error              { return nil }
func (recordSource) Read(context.Context) (*api.Message, error) { return nil, errors.New("unused") }
func (recordSource) Close(context.Context) error                { return nil }
func (recordSource) Lookup(context.Context, map[string]any) ([]map[string]any, error) {
	return nil, nil
}

func specRegistry(t *testing.T) *sdk.Registry {
	t.Helper()
	spec := sdk.Spec{Props: []sdk.Prop{
		{Name: "method", Type: sdk.TypeString, Default: "get", Enum: []any{"GET", "POST"}},
		{Name: "timeout", Type: sdk.TypeDuration, Default: 1000, Max: "1m"},
		{Name: "topic", Type: sdk.TypeString, Required: true, Target: true},
		{Name: "password", Type: sdk.TypeString, Secret: true},
	}}
	r := sdk.NewRegistry()
	newSource := func(p map[string]any, _ sdk.Deps) (api.Source, error) { return recordSource{p}, nil }
	newSink := func(map[string]any, sdk.Deps) (api.Sink, error) { return nil, errors.New("the factory ran") }
	newLookup := func(p map[string]any, _ sdk.Deps) (sdk.LookupSource, error) { return recordSource{p}, nil }
	for _, err := range []error{
		r.RegisterSource("s", spec, newSource),
		r.RegisterSink("s", spec, newSink),
		r.RegisterLookup("s", spec, newLookup),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// TestSpecDrivesValidation checks that the sdk's spec types reach the
// engine's validation with their meaning: types, defaults, enum spelling,
// maxima, required properties.
func TestSpecDrivesValidation(t *testing.T) {
	r := specRegistry(t)
	src, err := r.NewSource("s", map[string]any{"topic": "t", "format": "json"}, sdk.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	got := src.(recordSource).props
	if got["method"] != "GET" || got["timeout"] != time.Second || got["topic"] != "t" || len(got) != 3 {
		t.Fatalf("validated props %v, want method GET, timeout 1s, topic t only", got)
	}
	lk, err := r.NewLookup("s", map[string]any{"topic": "t", "method": "post"}, sdk.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if m := lk.(recordSource).props["method"]; m != "POST" {
		t.Fatalf("lookup method %v, want POST", m)
	}
	if _, err := r.NewSink("s", map[string]any{"topic": "t"}, sdk.Deps{}); err == nil || !strings.Contains(err.Error(), "the factory ran") {
		t.Fatalf("sink with valid props: %v, want the factory's error", err)
	}
}

// TestErrInvalidProps checks that the sdk's own sentinel marks every
// validation failure coming out of the sdk, and nothing else.
func TestErrInvalidProps(t *testing.T) {
	r := specRegistry(t)
	bad := map[string]any{"method": "PUT", "timeout": "2m", "colour": "red"}
	for name, build := range map[string]func() error{
		"source": func() error { _, err := r.NewSource("s", bad, sdk.Deps{}); return err },
		"sink":   func() error { _, err := r.NewSink("s", bad, sdk.Deps{}); return err },
		"lookup": func() error { _, err := r.NewLookup("s", bad, sdk.Deps{}); return err },
		"spec": func() error {
			_, err := sdk.Spec{Props: []sdk.Prop{{Name: "n", Type: sdk.TypeInt}}}.Validate(map[string]any{"n": "x"})
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			err := build()
			if !errors.Is(err, sdk.ErrInvalidProps) {
				t.Fatalf("%v does not match sdk.ErrInvalidProps", err)
			}
			if name == "spec" {
				return
			}
			for _, want := range []string{`"topic" is required`, "PUT is not one of GET, POST", "exceeds the maximum", "unknown properties: colour"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
		})
	}
	if _, err := r.NewSink("s", map[string]any{"topic": "t"}, sdk.Deps{}); errors.Is(err, sdk.ErrInvalidProps) {
		t.Fatalf("a factory's own error %v matches ErrInvalidProps", err)
	}
	if _, err := r.NewSource("nope", nil, sdk.Deps{}); err == nil || errors.Is(err, sdk.ErrInvalidProps) {
		t.Fatalf("an unknown type gave %v, want an error that is not ErrInvalidProps", err)
	}
}

func TestSpecMaskAndPingProps(t *testing.T) {
	spec := sdk.Spec{Props: []sdk.Prop{
		{Name: "topic", Type: sdk.TypeString, Target: true},
		{Name: "key", Type: sdk.TypeString, Secret: true},
	}}
	if m := spec.Mask(map[string]any{"KEY": "abc", "topic": "t"}); m["KEY"] == "abc" || m["topic"] != "t" {
		t.Fatalf("masked %v: the secret is shown or the topic changed", m)
	}
	if p := spec.PingProps(map[string]any{}); p["topic"] == nil {
		t.Fatalf("ping props %v lack the target", p)
	}
	if !spec.Has("Topic") || spec.Has("other") {
		t.Fatal("Has does not match the declared names")
	}
}
