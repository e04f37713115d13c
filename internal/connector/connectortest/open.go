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
	s, err := Registry(t, register).NewSource(typ, props, deps)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

// OpenSink is OpenSource for a sink.
func OpenSink(t testing.TB, register func(*connector.Registry) error, typ string, props map[string]any, deps connector.Deps) api.Sink {
	t.Helper()
	s, err := Registry(t, register).NewSink(typ, props, deps)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}
