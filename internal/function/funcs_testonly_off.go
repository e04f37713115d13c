//go:build !rekuiper_testfuncs

package function

// registerTestOnly adds nothing: the test-only functions exist only in
// binaries built with -tags rekuiper_testfuncs (see funcs_testonly.go).
func registerTestOnly(*Registry) {}
