package jsudf

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/function"
)

func scalar(t *testing.T, id, script string, lim Limits) func(args ...any) (any, error) {
	t.Helper()
	f := catalog.JSFunction{ID: id, Script: script}
	if err := Check(f, function.Builtins(), lim); err != nil {
		t.Fatalf("check %s: %v", id, err)
	}
	d := Def(f, lim)
	if d.Kind != function.Scalar {
		t.Fatalf("kind %v, want scalar", d.Kind)
	}
	return func(args ...any) (any, error) { return d.Scalar(nil, args) }
}

func TestScalarValues(t *testing.T) {
	call := scalar(t, "shape", `
		function shape(a, b) {
			return {sum: a + b, half: a / 2, s: "x" + a, arr: [a, b, null], ok: a > b, nested: {k: [1.5]}};
		}`, DefaultLimits())
	got, err := call(int64(3), int64(1))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"sum": int64(4), "half": 1.5, "s": "x3", "arr": []any{int64(3), int64(1), nil}, "ok": true,
		"nested": map[string]any{"k": []any{1.5}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v\nwant %#v", got, want)
	}
	obj, err := scalar(t, "field", `function field(o) { return o.name + ":" + o.tags.length }`, DefaultLimits())(
		map[string]any{"name": "pump", "tags": []any{"a", "b"}})
	if err != nil || obj != "pump:2" {
		t.Fatalf("object argument: %v %v", obj, err)
	}
}

func TestAggregateGetsArrays(t *testing.T) {
	f := catalog.JSFunction{ID: "spread", IsAgg: true, Script: `
		function spread(xs, ys) {
			var max = -Infinity, min = Infinity;
			for (var i = 0; i < xs.length; i++) { max = Math.max(max, xs[i]); min = Math.min(min, xs[i]); }
			return (max - min) * ys.length;
		}`}
	if err := Check(f, nil, DefaultLimits()); err != nil {
		t.Fatal(err)
	}
	d := Def(f, DefaultLimits())
	if d.Kind != function.Aggregate {
		t.Fatalf("kind %v", d.Kind)
	}
	got, err := d.Aggregate(nil, [][]any{{int64(4), int64(9), int64(1)}, {"a", "b", "c"}})
	if err != nil || got != int64(24) {
		t.Fatalf("got %#v %v, want 24", got, err)
	}
}

func TestErrorsAreRowErrorsAndTheRuntimeRecovers(t *testing.T) {
	lim := DefaultLimits()
	// Generous: only the loop case reaches it, and a loaded machine must
	// not make the others time out.
	lim.Timeout = time.Second
	lim.MaxResultBytes = 1000
	call := scalar(t, "f", `
		var calls = 0;
		function deep(n) { return deep(n + 1) + 1 }
		function f(mode) {
			calls++;
			switch (mode) {
			case "loop": while (true) {}
			case "throw": throw new Error("bad mode " + mode);
			case "deep": return deep(0);
			case "big": return "x".repeat(2000);
			case "nan": return 0 / 0;
			case "fn": return function () {};
			case "sparse": var a = []; a[1e9] = 1; return a;
			case "getter": return {get x() { while (true) {} }};
			case "map": return new Map();
			}
			return calls;
		}`, lim)
	cases := []struct{ mode, want string }{
		{"loop", "time limit exceeded (1s)"},
		{"throw", "bad mode throw"},
		{"deep", "stack"},
		{"big", "result larger than the limit"},
		{"nan", "result is NaN"},
		{"fn", "cannot be a SQL value"},
		{"sparse", "result larger than the limit"},
		{"getter", "time limit exceeded"},
		{"map", "cannot be a SQL value"},
	}
	for _, c := range cases {
		t.Run(c.mode, func(t *testing.T) {
			_, err := call(c.mode)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "javascript function f") {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
			// The same runtime answers the next call, its globals intact.
			got, err := call("ok")
			if err != nil {
				t.Fatalf("call after %s: %v", c.mode, err)
			}
			if n, ok := got.(int64); !ok || n < 2 {
				t.Fatalf("call after %s: got %#v, want the call count", c.mode, got)
			}
		})
	}
}

func TestCheckRefuses(t *testing.T) {
	lim := DefaultLimits()
	lim.Timeout = time.Second
	cases := []struct {
		name string
		f    catalog.JSFunction
		want string
	}{
		{"syntax", catalog.JSFunction{ID: "f", Script: "function f( {"}, "compile script"},
		{"no function", catalog.JSFunction{ID: "f", Script: "function g() {}"}, "defines no function named f"},
		{"not a function", catalog.JSFunction{ID: "f", Script: "var f = 1"}, "defines no function named f"},
		{"top-level throw", catalog.JSFunction{ID: "f", Script: "throw 'boom'; function f() {}"}, "boom"},
		{"top-level loop", catalog.JSFunction{ID: "f", Script: "for (;;) {} function f() {}"}, "time limit exceeded"},
		{"built-in name", catalog.JSFunction{ID: "Abs", Script: "function Abs(x) { return x }"}, "built-in function"},
		{"engine function name", catalog.JSFunction{ID: "window_start", Script: "function window_start() { return 1 }"}, "built-in function"},
		{"bad id", catalog.JSFunction{ID: "a-b", Script: "function a() {}"}, "JavaScript identifier"},
		{"empty id", catalog.JSFunction{ID: "", Script: ""}, "JavaScript identifier"},
		{"huge script", catalog.JSFunction{ID: "f", Script: "function f() {}" + strings.Repeat(" ", MaxScriptBytes)}, "is larger than"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Check(c.f, function.Builtins(), lim)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want ErrInvalid containing %q", err, c.want)
			}
		})
	}
}

func TestLimitsValidate(t *testing.T) {
	if err := DefaultLimits().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, l := range []Limits{
		{Timeout: 0, MaxStackDepth: 1, MaxResultBytes: 1},
		{Timeout: time.Minute, MaxStackDepth: 1, MaxResultBytes: 1},
		{Timeout: time.Second, MaxStackDepth: 0, MaxResultBytes: 1},
		{Timeout: time.Second, MaxStackDepth: 1, MaxResultBytes: 0},
	} {
		if err := l.Validate(); err == nil {
			t.Errorf("%+v accepted", l)
		}
	}
}

type listSource []catalog.JSFunction

func (l listSource) ListJSFunctions(context.Context) ([]catalog.JSFunction, error) { return l, nil }

func TestResolverIgnoresCaseAndNeverShadowsBuiltins(t *testing.T) {
	r := function.Builtins()
	r.SetResolver(Resolver(listSource{
		{ID: "myDouble", Script: "function myDouble(x) { return x * 2 }"},
	}, DefaultLimits()))
	d, ok := r.Lookup("mydouble")
	if !ok {
		t.Fatal("mydouble not resolved")
	}
	if v, err := d.Scalar(nil, []any{int64(21)}); err != nil || v != int64(42) {
		t.Fatalf("got %v %v", v, err)
	}
	if _, ok := r.Lookup("nothing"); ok {
		t.Fatal("unknown name resolved")
	}
	if d, ok := r.Lookup("abs"); !ok || d.Name != "abs" {
		t.Fatal("built-in abs shadowed")
	}
}

// BenchmarkScalarCall is one call of a small scalar function through its
// SQL definition: argument conversion, the time-limit timer, the call and
// the result mapping.
func BenchmarkScalarCall(b *testing.B) {
	d := Def(catalog.JSFunction{ID: "f", Script: "function f(a, s) { return {v: a * 2, s: s + '!'} }"}, DefaultLimits())
	args := []any{int64(21), "x"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Scalar(nil, args); err != nil {
			b.Fatal(err)
		}
	}
}
