package function

import (
	"testing"

	"github.com/rekuiper/rekuiper/internal/sql/ast"
)

// validateCase is one call of a function's Validate on literal arguments.
type validateCase struct {
	name    string
	fn      string
	args    []ast.Expr
	wantErr bool
}

// runValidateCases runs each case as a subtest: the function must be
// registered with a validator, which must fail exactly when wantErr is set.
func runValidateCases(t *testing.T, cases []validateCase) {
	t.Helper()
	reg := Builtins()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			d, ok := reg.Lookup(tt.fn)
			if !ok || d.Validate == nil {
				t.Fatalf("%s: no validator", tt.fn)
			}
			if err := d.Validate(tt.args); (err != nil) != tt.wantErr {
				t.Fatalf("%s: Validate = %v, wantErr %v", tt.fn, err, tt.wantErr)
			}
		})
	}
}

// checkRegisteredAs checks that every name is registered with kind and that,
// of the Scalar, Aggregate and Analytic functions, only kind's own is set.
func checkRegisteredAs(t *testing.T, kind Kind, names []string) {
	t.Helper()
	reg := Builtins()
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			d, ok := reg.Lookup(name)
			if !ok {
				t.Fatalf("%s not registered", name)
			}
			set := map[Kind]bool{Scalar: d.Scalar != nil, Aggregate: d.Aggregate != nil, Analytic: d.Analytic != nil}
			for k, isSet := range set {
				if d.Kind != kind || isSet != (k == kind) {
					t.Fatalf("%s: kind %v with wrong function set", name, d.Kind)
				}
			}
		})
	}
}
