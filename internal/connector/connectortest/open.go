package connectortest

import (
	"context"
	"testing"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/connector"
)

// Registry returns a registry holding the connector types that register
// adds; it fails the test when registering fails.
func Registry(t testing.TB, register func(*connector.Registry) error) *connector.Registry {
	t.Helper()
	r := connector.NewRegistry()
	if err := register(r); err != nil {
		t.Fatal(err)
	}
	return r
}

// OpenSource builds the source of type typ from props and deps, in a
// registry holding register's types, connects it and closes it at the end
// of the test; it fails the test when building or connecting fails.
func OpenSource(t testing.TB, register func(*connector.Registry) error, typ string, props map[string]any, deps connector.Deps) api.Source {
	t.Helper()
	return open(t, func() (api.Source, error) { return Registry(t, register).NewSource(typ, props, deps) })
}

// OpenSink is OpenSource for a sink.
func OpenSink(t testing.TB, register func(*connector.Registry) error, typ string, props map[string]any, deps connector.Deps) api.Sink {
	t.Helper()
	return open(t, func() (api.Sink, error) { return Registry(t, register).NewSink(typ, props, deps) })
}

// OpenLookup is OpenSource for a lookup source.
func OpenLookup(t testing.TB, register func(*connector.Registry) error, typ string, props map[string]any, deps connector.Deps) api.LookupSource {
	t.Helper()
	return open(t, func() (api.LookupSource, error) { return Registry(t, register).NewLookup(typ, props, deps) })
}

// open builds a connector with build, connects it and closes it at the end
// of the test.
func open[C interface {
	Connect(context.Context) error
	Close(context.Context) error
}](t testing.TB, build func() (C, error)) C {
	t.Helper()
	c, err := build()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}
