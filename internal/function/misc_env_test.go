package function

import (
	"strings"
	"testing"
	"time"
)

// miscTestEnv is the fake Env shared by the JSON, array, object, datetime
// and misc tests: a fixed clock in a fixed location.
type miscTestEnv struct {
	now time.Time
	loc *time.Location
}

func (e miscTestEnv) Now() time.Time { return e.now }

func (e miscTestEnv) Location() *time.Location {
	if e.loc == nil {
		return time.UTC
	}
	return e.loc
}

func (e miscTestEnv) RuleID() string { return "rule1" }

// miscCall looks name up in the built-in registry, checks the arity and
// calls it with args, as the evaluator would.
func miscCall(t *testing.T, env Env, name string, args ...any) (any, error) {
	t.Helper()
	d, ok := Builtins().Lookup(name)
	if !ok {
		t.Fatalf("function %s is not registered", name)
	}
	if err := d.CheckArity(len(args)); err != nil {
		t.Fatalf("arity: %v", err)
	}
	if d.Scalar == nil {
		t.Fatalf("function %s has no scalar implementation", name)
	}
	if args == nil {
		args = []any{}
	}
	return d.Scalar(env, args)
}

// miscCase is one call and its expected outcome: want, or an error
// containing wantErr when wantErr is set.
type miscCase struct {
	name    string
	fn      string
	args    []any
	want    any
	wantErr string
}

// miscRun runs cases, comparing results with reflect-like deep equality
// that keeps int64 and float64 distinct.
func miscRun(t *testing.T, env Env, cases []miscCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := miscCall(t, env, c.fn, c.args...)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("%s%v: got (%#v, %v), want error containing %q", c.fn, c.args, got, err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s%v: unexpected error %v", c.fn, c.args, err)
			}
			if !arraySame(got, c.want) || miscTypedNil(got) {
				t.Fatalf("%s%v = %#v, want %#v", c.fn, c.args, got, c.want)
			}
		})
	}
}

// miscTypedNil reports a nil slice or map boxed in an interface, which the
// evaluator would not treat as nil.
func miscTypedNil(v any) bool {
	switch x := v.(type) {
	case []any:
		return x == nil
	case map[string]any:
		return x == nil
	}
	return false
}
