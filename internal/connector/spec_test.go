package connector

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/rule"
)

func testSpec() Spec {
	return Spec{Kind: KindSource, Props: []Prop{
		{Name: "url", Type: TypeString, Required: true},
		{Name: "method", Type: TypeString, Default: "GET", Enum: []any{"GET", "POST"}},
		{Name: "qos", Type: TypeInt, Default: 1, Enum: []any{0, 1, 2}},
		{Name: "ratio", Type: TypeFloat, Default: 0.5},
		{Name: "loop", Type: TypeBool, Default: true},
		{Name: "interval", Type: TypeDuration, Default: "10s"},
		{Name: "headers", Type: TypeMap},
		{Name: "data", Type: TypeList},
		{Name: "password", Type: TypeString, Secret: true},
	}}
}

func TestValidate(t *testing.T) {
	s := testSpec()
	if err := s.check(); err != nil {
		t.Fatal(err)
	}
	defaults := map[string]any{
		"url": "http://x", "method": "GET", "qos": int64(1), "ratio": 0.5,
		"loop": true, "interval": 10 * time.Second,
	}
	with := func(kv ...any) map[string]any {
		m := map[string]any{}
		for k, v := range defaults {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	tests := []struct {
		name    string
		in      map[string]any
		want    map[string]any
		wantErr []string // substrings of the error
	}{
		{"defaults", map[string]any{"url": "http://x"}, defaults, nil},
		{"missing required", map[string]any{}, nil, []string{`"url" is required`}},
		{"enum folds case", map[string]any{"url": "http://x", "method": "post"}, with("method", "POST"), nil},
		{"enum rejects", map[string]any{"url": "http://x", "method": "PATCH"}, nil, []string{`"method"`, "not one of GET, POST"}},
		{"int from float64", map[string]any{"url": "http://x", "qos": float64(2)}, with("qos", int64(2)), nil},
		{"int from string", map[string]any{"url": "http://x", "qos": "0"}, with("qos", int64(0)), nil},
		{"int enum", map[string]any{"url": "http://x", "qos": 3}, nil, []string{"not one of 0, 1, 2"}},
		{"int not integral", map[string]any{"url": "http://x", "qos": 1.5}, nil, []string{"not an integer"}},
		{"float from int", map[string]any{"url": "http://x", "ratio": 2}, with("ratio", 2.0), nil},
		{"bool from string", map[string]any{"url": "http://x", "loop": "false"}, with("loop", false), nil},
		{"bool wrong type", map[string]any{"url": "http://x", "loop": 1.0}, nil, []string{`"loop"`, "float64 to bool"}},
		{"duration ms int", map[string]any{"url": "http://x", "interval": 1500}, with("interval", 1500*time.Millisecond), nil},
		{"duration string", map[string]any{"url": "http://x", "interval": "2m"}, with("interval", 2*time.Minute), nil},
		{"duration numeric string", map[string]any{"url": "http://x", "interval": "250"}, with("interval", 250*time.Millisecond), nil},
		{"duration negative", map[string]any{"url": "http://x", "interval": "-1s"}, nil, []string{"negative duration"}},
		{"map", map[string]any{"url": "http://x", "headers": map[string]string{"a": "b"}}, with("headers", map[string]any{"a": "b"}), nil},
		{"list", map[string]any{"url": "http://x", "data": []string{"a"}}, with("data", []any{"a"}), nil},
		{"list wrong type", map[string]any{"url": "http://x", "data": "a"}, nil, []string{"string to list"}},
		{"name case-insensitive", map[string]any{"URL": "http://x"}, defaults, nil},
		{"name twice", map[string]any{"URL": "http://x", "url": "http://y"}, nil, []string{"given twice"}},
		{"null means default", map[string]any{"url": "http://x", "qos": nil}, defaults, nil},
		{"engine props ignored", map[string]any{"url": "http://x", "format": "json", "datasource": "t"}, defaults, nil},
		{"unknown props named", map[string]any{"url": "http://x", "zeta": 1, "alpha": 2}, nil, []string{"unknown properties: alpha, zeta"}},
		{"all problems at once", map[string]any{"qos": "x", "bogus": 1}, nil, []string{"unknown properties: bogus", `"url" is required`, `"qos"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Validate(tc.in)
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("no error, got %v", got)
				}
				if !errors.Is(err, ErrInvalidProps) {
					t.Errorf("error %v does not wrap ErrInvalidProps", err)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got  %#v\nwant %#v", got, tc.want)
			}
		})
	}
}

func TestEnginePropsByKind(t *testing.T) {
	tests := []struct {
		kind    Kind
		prop    string
		allowed bool
	}{
		{KindSource, "format", true},
		{KindSource, "sendSingle", false},
		{KindSink, "sendSingle", true},
		{KindSink, "resendInterval", true},
		{KindSink, "decompression", false},
		{KindLookup, "cacheTtl", true},
		{0, "format", false},
	}
	for _, tc := range tests {
		t.Run(tc.kind.String()+"/"+tc.prop, func(t *testing.T) {
			_, err := Spec{Kind: tc.kind}.Validate(map[string]any{tc.prop: "x"})
			if (err == nil) != tc.allowed {
				t.Fatalf("err = %v, want allowed=%v", err, tc.allowed)
			}
		})
	}
}

// TestUnimplementedEnginePropsRefused checks that engine properties
// rekuiper does not implement for a connector are refused when set to
// anything but "off", and accepted when the connector declares them.
func TestUnimplementedEnginePropsRefused(t *testing.T) {
	for _, tc := range []struct {
		kind Kind
		prop string
		v    any
		want string // "" accepted
	}{
		{KindSource, "decompression", "gzip", `property "decompression": gzip is not supported`},
		{KindSource, "decompression", "", ""},
		{KindSource, "payloadFormat", "json", `property "payloadFormat"`},
		{KindSource, "mergeField", "id", `property "mergeField"`},
		{KindSink, "concurrency", int64(1), ""},
		{KindSink, "concurrency", 4, `property "concurrency": 4 is not supported`},
		{KindSink, "runAsync", false, ""},
		{KindSink, "runAsync", true, `property "runAsync"`},
		{KindSink, "batchSize", 10, `property "batchSize"`},
		{KindSink, "lingerInterval", "1s", `property "lingerInterval"`},
		{KindSource, "interval", int64(1000), `property "interval": 1000 is not supported (this source is not polled`},
		{KindSource, "interval", "0s", ""},
		{KindSource, "bufferLength", int64(1024), `property "bufferLength": 1024 is not supported (this source has no queue`},
		{KindLookup, "interval", "5s", `property "interval": 5s is not supported`},
		{KindLookup, "bufferLength", 10, `property "bufferLength": 10 is not supported`},
	} {
		t.Run(fmt.Sprintf("%s/%s=%v", tc.kind, tc.prop, tc.v), func(t *testing.T) {
			_, err := Spec{Kind: tc.kind}.Validate(map[string]any{tc.prop: tc.v})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
	declared := Spec{Kind: KindSink, Props: []Prop{{Name: "batchSize", Type: TypeInt}}}
	if _, err := declared.Validate(map[string]any{"batchSize": 10}); err != nil {
		t.Fatalf("declared batchSize refused: %v", err)
	}
	buffered := Spec{Kind: KindSource, Props: []Prop{{Name: "bufferLength", Type: TypeInt}}}
	if _, err := buffered.Validate(map[string]any{"bufferLength": 10}); err != nil {
		t.Fatalf("declared bufferLength refused: %v", err)
	}
}

func TestDeclaredBeatsEngineProp(t *testing.T) {
	s := Spec{Kind: KindSource, Props: []Prop{{Name: "interval", Type: TypeDuration, Default: 0}}}
	if err := s.check(); err != nil {
		t.Fatal(err)
	}
	got, err := s.Validate(map[string]any{"interval": "1s", "format": "json"})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"interval": time.Second}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestMask(t *testing.T) {
	s := testSpec()
	tests := []struct {
		name string
		in   map[string]any
		want map[string]any
	}{
		{"secret masked", map[string]any{"url": "u", "password": "pw"}, map[string]any{"url": "u", "password": MaskedValue}},
		{"case-insensitive", map[string]any{"Password": "pw"}, map[string]any{"Password": MaskedValue}},
		{"empty kept", map[string]any{"password": ""}, map[string]any{"password": ""}},
		{"unknown kept", map[string]any{"other": "x"}, map[string]any{"other": "x"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := map[string]any{}
			for k, v := range tc.in {
				in[k] = v
			}
			got := s.Mask(in)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			if !reflect.DeepEqual(in, tc.in) {
				t.Fatalf("Mask modified its input: %v", in)
			}
		})
	}
}

type fakeSource struct{ props map[string]any }

func (fakeSource) Connect(context.Context) error                 { return nil }
func (fakeSource) Read(context.Context) (*api.Message, error)    { return nil, nil }
func (fakeSource) Close(context.Context) error                   { return nil }
func newFake(p map[string]any, _ Deps) (api.Source, error)       { return fakeSource{p}, nil }
func (fakeSource) Write(context.Context, *api.SinkMessage) error { return nil }
func newFakeSink(map[string]any, Deps) (api.Sink, error)         { return fakeSource{}, nil }

func TestRegistry(t *testing.T) {
	r := NewRegistry()
	if err := r.RegisterSource("fake", testSpec(), newFake); err != nil {
		t.Fatal(err)
	}
	if err := r.RegisterSink("fake", Spec{}, newFakeSink); err != nil {
		t.Fatalf("same name as a sink: %v", err)
	}
	regTests := []struct {
		name string
		err  error
	}{
		{"empty name", r.RegisterSource(" ", Spec{}, newFake)},
		{"duplicate", r.RegisterSource("fake", Spec{}, newFake)},
		{"duplicate other case", r.RegisterSource("FAKE", Spec{}, newFake)},
		{"nil factory", r.RegisterSource("x", Spec{}, nil)},
		{"bad default", r.RegisterSource("y", Spec{Props: []Prop{{Name: "n", Type: TypeInt, Default: "x"}}}, newFake)},
		{"bad enum", r.RegisterSource("z", Spec{Props: []Prop{{Name: "n", Type: TypeInt, Enum: []any{"x"}}}}, newFake)},
		{"duplicate prop", r.RegisterSource("w", Spec{Props: []Prop{{Name: "n", Type: TypeInt}, {Name: "N", Type: TypeInt}}}, newFake)},
		{"unknown type", r.RegisterSource("v", Spec{Props: []Prop{{Name: "n", Type: "date"}}}, newFake)},
	}
	for _, tc := range regTests {
		t.Run("refuse "+tc.name, func(t *testing.T) {
			if tc.err == nil {
				t.Fatal("registration succeeded")
			}
		})
	}
	t.Run("names", func(t *testing.T) {
		if got := r.Names(KindSource); !reflect.DeepEqual(got, []string{"fake"}) {
			t.Fatalf("names = %v", got)
		}
	})
	t.Run("new validates", func(t *testing.T) {
		src, err := r.NewSource("Fake", map[string]any{"url": "u", "qos": "2"}, Deps{})
		if err != nil {
			t.Fatal(err)
		}
		if got := src.(fakeSource).props["qos"]; got != int64(2) {
			t.Fatalf("qos = %#v", got)
		}
		if _, err := r.NewSource("fake", map[string]any{}, Deps{}); !errors.Is(err, ErrInvalidProps) {
			t.Fatalf("err = %v, want ErrInvalidProps", err)
		}
	})
	t.Run("unknown type", func(t *testing.T) {
		if _, err := r.NewSource("nope", nil, Deps{}); !errors.Is(err, ErrUnknownType) {
			t.Fatalf("err = %v", err)
		}
		if _, err := r.NewLookup("fake", nil, Deps{}); !errors.Is(err, ErrUnknownType) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("mask via registry", func(t *testing.T) {
		got := r.Mask(KindSource, "fake", map[string]any{"password": "p"})
		if got["password"] != MaskedValue {
			t.Fatalf("got %v", got)
		}
	})
	t.Run("spec not shared with caller", func(t *testing.T) {
		s := testSpec()
		r2 := NewRegistry()
		if err := r2.RegisterSource("a", s, newFake); err != nil {
			t.Fatal(err)
		}
		if s.Props[2].Default != 1 || s.Props[2].Enum[0] != 0 {
			t.Fatalf("Register modified the caller's spec: %#v", s.Props[2])
		}
	})
}

func TestWait(t *testing.T) {
	t.Run("fires on virtual time", func(t *testing.T) {
		v := clock.NewVirtual(0)
		done := make(chan error, 1)
		go func() { done <- Wait(context.Background(), v, time.Second) }()
		// Advance until the waiter's timer exists and fires.
		for {
			v.AdvanceTo(v.Now().UnixMilli()+1000, nil)
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
				return
			case <-time.After(time.Millisecond):
			}
		}
	})
	t.Run("ctx cancels", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := Wait(ctx, clock.NewVirtual(0), time.Hour); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestMux(t *testing.T) {
	m := NewMux()
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
	if err := m.Handle("/a", h); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		err  error
	}{
		{"duplicate", m.Handle("/a", h)},
		{"no slash", m.Handle("a", h)},
		{"nil handler", m.Handle("/b", nil)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.err == nil {
				t.Fatal("Handle succeeded")
			}
		})
	}
	t.Run("serve and unhandle", func(t *testing.T) {
		rec := httptest.NewRecorder()
		m.ServeHTTP(rec, httptest.NewRequest("POST", "/a", nil))
		if rec.Code != http.StatusTeapot {
			t.Fatalf("code = %d", rec.Code)
		}
		m.Unhandle("/a")
		rec = httptest.NewRecorder()
		m.ServeHTTP(rec, httptest.NewRequest("POST", "/a", nil))
		if rec.Code != http.StatusNotFound {
			t.Fatalf("code after unhandle = %d", rec.Code)
		}
		if err := m.Handle("/a", h); err != nil {
			t.Fatalf("re-handle: %v", err)
		}
	})
}

func TestPropMax(t *testing.T) {
	s := Spec{Kind: KindSource, Props: []Prop{
		{Name: "bufferLength", Type: TypeInt, Default: 1024, Max: MaxBufferLength},
		{Name: "ratio", Type: TypeFloat, Max: 1},
		{Name: "timeout", Type: TypeDuration, Default: "5s", Max: "1h"},
	}}
	if err := s.check(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Validate(map[string]any{"bufferLength": MaxBufferLength, "ratio": 1, "timeout": "1h"}); err != nil {
		t.Fatalf("values at their bounds: %v", err)
	}
	for _, c := range []struct {
		props map[string]any
		want  string
	}{
		{map[string]any{"bufferLength": 1000000000000}, `property "bufferLength": 1000000000000 exceeds the maximum 1048576`},
		{map[string]any{"BUFFERLENGTH": "2000000"}, `property "bufferLength": 2000000 exceeds the maximum 1048576`},
		{map[string]any{"ratio": 1.5}, `property "ratio": 1.5 exceeds the maximum 1`},
		{map[string]any{"timeout": 7200000}, `property "timeout": 2h0m0s exceeds the maximum 1h0m0s`},
	} {
		_, err := s.Validate(c.props)
		if !errors.Is(err, ErrInvalidProps) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v; want %q", c.props, err, c.want)
		}
	}
	bad := Spec{Props: []Prop{{Name: "name", Type: TypeString, Max: 3}}}
	if err := bad.check(); err == nil {
		t.Error("Max on a string property accepted")
	}
}

func TestDurationOutOfRange(t *testing.T) {
	s := Spec{Kind: KindSource, Props: []Prop{{Name: "interval", Type: TypeDuration}}}
	for _, v := range []any{int64(9223372036854775807), 1e300, "9223372036854775807", -1} {
		if got, err := s.Validate(map[string]any{"interval": v}); err == nil {
			t.Errorf("interval %v accepted as %v", v, got["interval"])
		}
	}
	got, err := s.Validate(map[string]any{"interval": "1500"})
	if err != nil || got["interval"] != 1500*time.Millisecond {
		t.Errorf("interval \"1500\" = %v, %v", got["interval"], err)
	}
}

// TestDeclaredSecretsMaskedEverywhere: a property a spec declares secret is
// masked by the masker that REST responses and exports use for that
// connector type (rule.MaskPropsOf), not only by Spec.Mask, whatever its
// name; for other types the name means nothing (the sql sink's url is
// secret, a rest sink's url is not). Nested secrets and URL passwords are
// masked by Spec.Mask too.
func TestDeclaredSecretsMaskedEverywhere(t *testing.T) {
	const name = "plantVaultXyz" // not a name the built-in list knows
	if rule.IsSecretKey(name) {
		t.Fatalf("%s is a built-in secret name; pick another", name)
	}
	props := map[string]any{name: "s3cr3t", "url": "tcp://u:pw@host:1883", "nested": map[string]any{"token": "t"}}
	if got := rule.MaskPropsOf("credsink", props); got[name] != "s3cr3t" {
		t.Fatalf("masked before registration: %v", got)
	}
	r := NewRegistry()
	spec := Spec{Props: []Prop{{Name: name, Type: TypeString, Secret: true}, {Name: "url", Type: TypeString}, {Name: "nested", Type: TypeMap}}}
	if err := r.RegisterSink("credsink", spec, newFakeSink); err != nil {
		t.Fatal(err)
	}
	if !rule.HasSecretsOf("CREDSINK", map[string]any{strings.ToUpper(name): "x"}) {
		t.Fatal("a declared secret is not one of its type after registration")
	}
	for label, got := range map[string]map[string]any{
		"rule.MaskPropsOf": rule.MaskPropsOf("credsink", props),
		"Spec.Mask":        spec.Mask(props),
		"Registry.Mask":    r.Mask(KindSink, "credsink", props),
	} {
		if got[name] != MaskedValue || got["url"] != "tcp://u:"+MaskedValue+"@host:1883" || got["nested"].(map[string]any)["token"] != MaskedValue {
			t.Errorf("%s: %v", label, got)
		}
	}
	if got := rule.MaskPropsOf("othersink", props); got[name] != "s3cr3t" {
		t.Errorf("another type's property of that name was masked: %v", got)
	}
	if props[name] != "s3cr3t" {
		t.Fatal("masking changed its input")
	}
	// A url declared secret (the sql sink's) stays an endpoint, for its
	// type too: its credentials are masked, not the whole address, which
	// restoring a masked secret compares.
	if err := r.RegisterSink("dbsink", Spec{Props: []Prop{{Name: "url", Type: TypeString, Secret: true}}}, newFakeSink); err != nil {
		t.Fatal(err)
	}
	if got := rule.MaskPropsOf("rest", map[string]any{"url": "http://h/x"}); got["url"] != "http://h/x" {
		t.Errorf("a rest url was masked: %v", got)
	}
	if got := rule.MaskPropsOf("dbsink", map[string]any{"url": "postgres://u:pw@h/db"}); got["url"] != "postgres://u:"+MaskedValue+"@h/db" {
		t.Errorf("the declared url: %v", got)
	}
}

func TestPingProps(t *testing.T) {
	s := Spec{Kind: KindSink, Ping: true, Props: []Prop{
		{Name: "server", Type: TypeString, Required: true},
		{Name: "topic", Type: TypeString, Required: true, Target: true},
		{Name: "channels", Type: TypeList, Target: true},
	}}
	if err := s.check(); err != nil {
		t.Fatal(err)
	}
	in := map[string]any{"server": "tcp://h:1883"}
	got := s.PingProps(in)
	want := map[string]any{"server": "tcp://h:1883", "topic": PingTarget, "channels": []any{PingTarget}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("PingProps = %v, want %v", got, want)
	}
	if len(in) != 1 {
		t.Fatalf("PingProps changed its argument: %v", in)
	}
	if _, err := s.Validate(got); err != nil {
		t.Fatalf("completed props do not validate: %v", err)
	}
	given := s.PingProps(map[string]any{"server": "x", "Topic": "mine"})
	if given["Topic"] != "mine" || given["topic"] != nil {
		t.Fatalf("a given target was replaced: %v", given)
	}
	// The connection properties are still required.
	if _, err := s.Validate(s.PingProps(nil)); err == nil || !strings.Contains(err.Error(), `"server" is required`) {
		t.Fatalf("missing server: %v", err)
	}
	bad := Spec{Props: []Prop{{Name: "n", Type: TypeInt, Target: true}}}
	if err := bad.check(); err == nil {
		t.Fatal("Target on an int property accepted")
	}
}
