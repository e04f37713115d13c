// Package conformancetest runs the public connector conformance kit
// (sdk/sdktest) on built-in connectors, which have the engine's specs,
// factories and Deps rather than the sdk's: each suite registers the
// connector under test in a connector.Registry, so that properties are
// validated as at rule creation, and hands sdktest a constructor over it.
// The checks themselves are sdktest's, the same that extensions run.
package conformancetest

import (
	"maps"
	"testing"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/sdk/sdktest"
)

// Timeout bounds every wait of the suites.
const Timeout = sdktest.Timeout

// The suites' helpers and cases are sdktest's.
type (
	InvalidCase = sdktest.InvalidCase
	Producer    = sdktest.Producer
	Reader      = sdktest.Reader
	Restarter   = sdktest.Restarter
)

// SourceFactory describes the source under test.
type SourceFactory struct {
	Spec connector.Spec
	New  connector.SourceFactory
	Deps connector.Deps
	// Props, UnreachableProps, Invalid and Seq are sdktest.Source's.
	Props            func(t *testing.T) map[string]any
	UnreachableProps map[string]any
	Invalid          []InvalidCase
	Seq              func(msg *api.Message) (int64, error)
}

// SinkFactory describes the sink under test.
type SinkFactory struct {
	Spec connector.Spec
	New  connector.SinkFactory
	Deps connector.Deps
	// Props, UnreachableProps and Invalid are sdktest.Sink's.
	Props            func(t *testing.T) map[string]any
	UnreachableProps map[string]any
	Invalid          []InvalidCase
}

// LookupFactory describes the lookup source under test: the engine's
// spec, factory and Deps, and the table and cases of the checks (Suite's
// New is set by RunLookupSuite).
type LookupFactory struct {
	Spec  connector.Spec
	New   connector.LookupFactory
	Deps  connector.Deps
	Suite sdktest.Lookup
}

// undertest is the type name the connector under test is registered as.
const undertest = "undertest"

// RunSourceSuite runs sdktest.RunSource on the source.
func RunSourceSuite(t *testing.T, f SourceFactory, p Producer) {
	t.Helper()
	reg := connector.NewRegistry()
	if err := reg.RegisterSource(undertest, f.Spec, f.New); err != nil {
		t.Fatalf("register source: %v", err)
	}
	sdktest.RunSource(t, sdktest.Source{
		New:   func(props map[string]any) (api.Source, error) { return reg.NewSource(undertest, props, f.Deps) },
		Props: f.Props, UnreachableProps: f.UnreachableProps, Invalid: f.Invalid, Seq: f.Seq,
	}, p)
}

// RunSinkSuite runs sdktest.RunSink on the sink.
func RunSinkSuite(t *testing.T, f SinkFactory, r Reader) {
	t.Helper()
	reg := connector.NewRegistry()
	if err := reg.RegisterSink(undertest, f.Spec, f.New); err != nil {
		t.Fatalf("register sink: %v", err)
	}
	sdktest.RunSink(t, sdktest.Sink{
		New:   func(props map[string]any) (api.Sink, error) { return reg.NewSink(undertest, props, f.Deps) },
		Props: f.Props, UnreachableProps: f.UnreachableProps, Invalid: f.Invalid,
	}, r)
}

// RunLookupSuite runs sdktest.RunLookup on the lookup source.
func RunLookupSuite(t *testing.T, f LookupFactory) {
	t.Helper()
	reg := connector.NewRegistry()
	if err := reg.RegisterLookup(undertest, f.Spec, f.New); err != nil {
		t.Fatalf("register lookup: %v", err)
	}
	l := f.Suite
	l.New = func(props map[string]any) (api.LookupSource, error) { return reg.NewLookup(undertest, props, f.Deps) }
	sdktest.RunLookup(t, l)
}

// Payload is sdktest.Payload.
func Payload(n int64) []byte { return sdktest.Payload(n) }

// Message is sdktest.Message.
func Message(n int64) *api.SinkMessage { return sdktest.Message(n) }

// DecodeSeq is sdktest.DecodeSeq.
func DecodeSeq(msg *api.Message) (int64, error) { return sdktest.DecodeSeq(msg) }

// With returns a copy of props with name set to v, or without name when v
// is nil: the properties of an InvalidCase made from valid ones.
func With(props map[string]any, name string, v any) map[string]any {
	m := maps.Clone(props)
	if m == nil {
		m = map[string]any{}
	}
	if v == nil {
		delete(m, name)
	} else {
		m[name] = v
	}
	return m
}
