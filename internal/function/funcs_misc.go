package function

import (
	"fmt"

	"github.com/rekuiper/rekuiper/internal/sql/ast"
)

// registerMisc adds isnull, coalesce, newuuid, tstamp, bypass,
// get_keyed_state, delay and the set-returning unnest and extract.
//
// meta, mqtt, window_*, event_time, rule_id, rule_start, last_*_hit_*,
// row_number and props are implemented by the evaluator and are not
// registered here.
func registerMisc(r *Registry) {
	r.MustAdd(
		&Def{Name: "isnull", Kind: Scalar, MinArgs: 1, MaxArgs: 1, Scalar: miscIsNull},
		&Def{Name: "coalesce", Kind: Scalar, MinArgs: 1, MaxArgs: -1, Scalar: miscCoalesce},
		&Def{Name: "newuuid", Kind: Scalar, MinArgs: 0, MaxArgs: 0, Scalar: miscNewUUID},
		&Def{Name: "tstamp", Kind: Scalar, MinArgs: 0, MaxArgs: 0, Scalar: miscTstamp, ReadsClock: true},
		&Def{Name: "bypass", Kind: Scalar, MinArgs: 1, MaxArgs: 1, Scalar: miscBypass},
		&Def{Name: "get_keyed_state", Kind: Scalar, MinArgs: 3, MaxArgs: 3,
			Validate: miscValidateKeyedState, Scalar: miscGetKeyedState},
		&Def{Name: "delay", Kind: Scalar, MinArgs: 2, MaxArgs: 2, Scalar: miscDelay},
		&Def{Name: "unnest", Kind: SRF, MinArgs: 1, MaxArgs: 1, Scalar: miscUnnest},
		&Def{Name: "extract", Kind: SRF, MinArgs: 1, MaxArgs: 1, Scalar: miscExtract},
	)
}

func miscIsNull(_ Env, args []any) (any, error) { return args[0] == nil, nil }

// miscCoalesce returns its first non-nil argument, or nil.
func miscCoalesce(_ Env, args []any) (any, error) {
	for _, a := range args {
		if a != nil {
			return a, nil
		}
	}
	return nil, nil
}

// miscNewUUID returns a random (version 4) UUID string. eKuiper returns a
// time-based version 1 UUID; both are 36-character canonical strings.
func miscNewUUID(_ Env, _ []any) (any, error) {
	return miscUUIDv4()
}

// miscTstamp is the engine clock in epoch milliseconds.
func miscTstamp(env Env, _ []any) (any, error) { return env.Now().UnixMilli(), nil }

// miscBypass returns its argument unchanged.
func miscBypass(_ Env, args []any) (any, error) { return args[0], nil }

// miscKeyedStateType reports whether t is a type name get_keyed_state
// accepts.
func miscKeyedStateType(t string) bool {
	switch t {
	case "bigint", "float", "string", "boolean", "datetime":
		return true
	}
	return false
}

func miscValidateKeyedState(args []ast.Expr) error {
	if lit, ok := args[1].(*ast.StringLit); ok && !miscKeyedStateType(lit.Val) {
		return fmt.Errorf("expect one of bigint, float, string, boolean, datetime for parameter 2, got %q", lit.Val)
	}
	return nil
}

// miscGetKeyedState would read key from the external keyed-state store.
// rekuiper has no such store yet, so it always returns the default
// (args[2]).
func miscGetKeyedState(_ Env, args []any) (any, error) {
	if t, ok := args[1].(string); !ok || !miscKeyedStateType(t) {
		return nil, fmt.Errorf("invalid state type %v: expect bigint, float, string, boolean or datetime", args[1])
	}
	return args[2], nil
}

// miscDelay returns args[1] immediately. eKuiper sleeps args[0] ms on the
// wall clock, blocking the operator; rekuiper never blocks an operator on
// the wall clock, so the delay is ignored.
func miscDelay(_ Env, args []any) (any, error) { return args[1], nil }

// miscUnnest returns its array argument unchanged (the rule emits one row
// per element); nil gives nil.
func miscUnnest(_ Env, args []any) (any, error) {
	switch x := args[0].(type) {
	case nil:
		return nil, nil
	case []any:
		return x, nil
	}
	return nil, fmt.Errorf("the argument for the unnest function should be array")
}

// miscExtract returns its object argument unchanged (the rule merges it into
// the row); nil gives nil.
func miscExtract(_ Env, args []any) (any, error) {
	switch x := args[0].(type) {
	case nil:
		return nil, nil
	case map[string]any:
		return x, nil
	}
	return nil, fmt.Errorf("extract should use map")
}
