//go:build rekuiper_testfuncs

package function

import "fmt"

// registerTestOnly adds functions that process-level tests use to provoke
// failures no valid input should reach. Only binaries built with
// -tags rekuiper_testfuncs have them.
//
// test_panic(x) panics when x is the string "panic" and returns x
// otherwise, as a buggy extension function would.
func registerTestOnly(r *Registry) {
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
