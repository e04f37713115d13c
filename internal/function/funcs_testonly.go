//go:build rekuiper_testfuncs

package function

import (
	"fmt"
	"sync"
)

// registerTestOnly adds functions that process-level tests use to provoke
// failures no valid input should reach. Only binaries built with
// -tags rekuiper_testfuncs have them.
//
// test_panic(x) panics when x is the string "panic" and returns x
// otherwise, as a buggy extension function would. test_crash(x) does the
// same with a fatal error that no recover stops (the process dies, as
// after the runtime ran out of memory).
func registerTestOnly(r *Registry) {
	r.MustAdd(&Def{
		Name: "test_crash", Kind: Scalar, MinArgs: 1, MaxArgs: 1,
		Scalar: func(_ Env, args []any) (any, error) {
			if s, ok := args[0].(string); ok && s == "panic" {
				var mu sync.Mutex
				mu.Unlock() // fatal error: sync: unlock of unlocked mutex
			}
			return args[0], nil
		},
	})
	r.MustAdd(&Def{
		Name: "test_panic", Kind: Scalar, MinArgs: 1, MaxArgs: 1,
		Scalar: func(_ Env, args []any) (any, error) {
			if s, ok := args[0].(string); ok && s == "panic" {
				panic(fmt.Sprintf("test_panic called with %q", s))
			}
			return args[0], nil
		},
	})
}
