// Package function holds rekuiper's built-in SQL functions: scalar,
// aggregate, analytic (stateful) and set-returning. Each family lives in its
// own file and registers itself through an explicit Register call; there is
// no init-time registration and no package-level mutable state.
package function

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/rekuiper/rekuiper/internal/sql/ast"
)

// Kind is the family a function belongs to; it decides where the planner may
// use it and how the evaluator calls it.
type Kind int

const (
	// Scalar functions map one row's argument values to one value.
	Scalar Kind = iota
	// Aggregate functions get, for each argument, the column of that
	// argument's values over all rows of a group ([]any per argument).
	Aggregate
	// Analytic functions keep state across rows for the rule's lifetime, per
	// call site and per OVER (PARTITION BY) key.
	Analytic
	// SRF (set-returning) functions return []any; the rule emits one row per
	// element (unnest) or merges an object into the row (extract).
	SRF
)

func (k Kind) String() string {
	return [...]string{"scalar", "aggregate", "analytic", "srf"}[k]
}

// Env is what a function may read from the engine. Implementations come from
// the runtime; functions must not read the wall clock or globals directly.
type Env interface {
	// Now is the engine clock's current time (virtual in tests).
	Now() time.Time
	// Location is the configured time zone (UTC unless set).
	Location() *time.Location
	// RuleID is the id of the rule evaluating the function.
	RuleID() string
}

// State is the per-call-site (and per-partition) state of an analytic
// function. Values stored must be of the value model (see package value) so
// that checkpoints can encode them.
type State map[string]any

// ScalarFunc evaluates a scalar function. args are already evaluated values.
type ScalarFunc func(env Env, args []any) (any, error)

// AggregateFunc evaluates an aggregate. cols[i] holds argument i's value for
// every row of the group in order; a `*` argument yields the rows themselves
// (map[string]any).
type AggregateFunc func(env Env, cols [][]any) (any, error)

// AnalyticFunc evaluates an analytic function against its state. valid is
// false when the OVER (WHEN ...) condition does not hold for this row: the
// function must then answer from its state without updating it.
type AnalyticFunc func(env Env, st State, valid bool, args []any) (any, error)

// Def describes one built-in function.
type Def struct {
	Name    string   // lower-case canonical name
	Aliases []string // other accepted names (documented names that differ)
	Kind    Kind
	// MinArgs and MaxArgs bound the argument count; MaxArgs -1 is unlimited.
	MinArgs, MaxArgs int
	// Validate checks arguments at rule creation (literal types, allowed
	// values). It may be nil. Errors are reported with the call's position.
	Validate func(args []ast.Expr) error
	// ReadsClock marks functions whose value depends on when they are
	// evaluated (the engine clock), not only on their arguments.
	ReadsClock bool
	// NilOnEmpty: a scalar whose result is nil, without calling it, when
	// any argument is nil, an empty array or an empty object (eKuiper's
	// rule for most of its functions; keys({}) is nil, not []).
	NilOnEmpty bool
	// EmptyIsNil: a scalar that is given nil in place of an empty array or
	// an empty object argument, so that it answers what it answers for nil
	// (eKuiper's rule for the functions that give false or 0 for nil:
	// startswith("", [])-style calls are false, numbytes({}) is 0).
	EmptyIsNil bool
	// Builtin is set on the functions Builtins registers: they compute
	// from their arguments (and the Env) alone and keep none of them after
	// returning, outside the analytic State they are given. Extension and
	// JavaScript functions are not marked: they may keep what they are
	// given.
	Builtin bool
	// Exactly one of these is set, according to Kind.
	Scalar    ScalarFunc
	Aggregate AggregateFunc
	Analytic  AnalyticFunc
	// Accumulate, for an aggregate that can fold row by row, returns a fresh
	// Accumulator equivalent to Aggregate (nil otherwise).
	Accumulate func() Accumulator
	// SRF functions use Scalar and must return []any (unnest) or
	// map[string]any (extract).
}

// Registry maps lower-case function names to definitions.
type Registry struct {
	defs    map[string]*Def
	resolve Resolver
}

// Resolver finds a function that is not registered, such as a user-defined
// JavaScript function stored in the catalog. It must be safe for concurrent
// use. It may return a fresh *Def on every call: a caller that keeps the
// Def it looked up (a compiled call site) keeps that function's state.
type Resolver func(name string) (*Def, bool)

// SetResolver makes Lookup ask res for names not registered. Registered
// names always win, so a resolver cannot shadow a built-in. Call it before
// the registry is shared.
func (r *Registry) SetResolver(res Resolver) { r.resolve = res }

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{defs: make(map[string]*Def)} }

// ErrDuplicate is returned when a name is registered twice.
var ErrDuplicate = errors.New("function already registered")

// Add registers d under its name and aliases. Empty names and duplicates are
// refused.
func (r *Registry) Add(d *Def) error {
	if d.Name == "" {
		return errors.New("register function: empty name")
	}
	names := append([]string{d.Name}, d.Aliases...)
	for _, n := range names {
		if _, ok := r.defs[strings.ToLower(n)]; ok {
			return fmt.Errorf("register function %s: %w", n, ErrDuplicate)
		}
	}
	for _, n := range names {
		r.defs[strings.ToLower(n)] = d
	}
	return nil
}

// MustAdd is Add for the built-in tables, which are known to be consistent.
func (r *Registry) MustAdd(defs ...*Def) {
	for _, d := range defs {
		if err := r.Add(d); err != nil {
			panic(err)
		}
	}
}

// Lookup finds a function by name, case-insensitively, then asks the
// resolver (see SetResolver) with the name as written.
func (r *Registry) Lookup(name string) (*Def, bool) {
	d, ok := r.defs[strings.ToLower(name)]
	if !ok && r.resolve != nil {
		return r.resolve(name)
	}
	return d, ok
}

// Registered finds a registered function by name, case-insensitively,
// without asking the resolver.
func (r *Registry) Registered(name string) (*Def, bool) {
	d, ok := r.defs[strings.ToLower(name)]
	return d, ok
}

// Names lists every registered name (aliases included), sorted.
func (r *Registry) Names() []string {
	out := make([]string, 0, len(r.defs))
	for n := range r.defs {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// CheckArity validates the argument count of a call against d.
func (d *Def) CheckArity(n int) error {
	if n < d.MinArgs || (d.MaxArgs >= 0 && n > d.MaxArgs) {
		switch {
		case d.MinArgs == d.MaxArgs:
			return fmt.Errorf("the arguments for %s should be %d", d.Name, d.MinArgs)
		case d.MaxArgs < 0:
			return fmt.Errorf("the arguments for %s should be at least %d", d.Name, d.MinArgs)
		default:
			return fmt.Errorf("the arguments for %s should be %d to %d", d.Name, d.MinArgs, d.MaxArgs)
		}
	}
	return nil
}

// Builtins returns a registry with every built-in function family.
func Builtins() *Registry {
	r := NewRegistry()
	for _, register := range families {
		register(r)
	}
	for _, d := range r.defs {
		d.Builtin = true
	}
	for _, name := range nilOnEmpty {
		if d, ok := r.Lookup(name); ok && d.Kind == Scalar {
			d.NilOnEmpty = true
		}
	}
	for _, name := range emptyIsNil {
		if d, ok := r.Lookup(name); ok && d.Kind == Scalar {
			d.EmptyIsNil = true
		}
	}
	return r
}

// emptyIsNil lists the scalar functions eKuiper answers false or 0 for
// when an argument is nil, an empty array or an empty object.
var emptyIsNil = []string{"endswith", "numbytes", "regexp_matches", "startswith"}

// nilOnEmpty lists the scalar functions eKuiper answers nil for when an
// argument is nil, an empty array or an empty object.
var nilOnEmpty = []string{
	"abs", "acos", "array_distinct", "array_flatten", "array_intersect", "array_join", "array_map",
	"array_max", "array_min", "array_sort", "asin", "atan", "atan2", "bitand", "bitnot", "bitor",
	"bitxor", "cast", "ceiling", "chr", "conv", "convert_tz", "cos", "cosh", "cot", "crc32", "dec2hex",
	"decode", "degrees", "element_at", "encode", "erase", "exp", "floor", "format", "format_time",
	"from_days", "from_unix_time", "hex2dec", "items", "keys", "kvpair_array_to_obj", "ln", "log",
	"lower", "lpad", "ltrim", "md5", "mod", "obj_to_kvpair_array", "object", "power", "radians",
	"regexp_replace", "regexp_substr", "repeat", "reverse", "round", "rpad", "rtrim", "sequence",
	"sha1", "sha256", "sha384", "sha512", "sign", "sin", "sinh", "split_value", "sqrt", "substring",
	"tan", "tanh", "to_json", "to_seconds", "trim", "trunc", "upper", "values", "zip",
}

// families lists the registration function of each family file.
var families = []func(*Registry){
	registerMath,
	registerString,
	registerConv,
	registerHash,
	registerJson,
	registerArray,
	registerObject,
	registerDatetime,
	registerMisc,
	registerAggregate,
	registerAnalytic,
	registerTestOnly,
}
