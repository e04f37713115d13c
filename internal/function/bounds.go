package function

import (
	"fmt"

	"github.com/rekuiper/rekuiper/internal/sql/ast"
)

// Bounds of the functions that build values, so that one row cannot make
// the daemon allocate gigabytes (docs/limits.md lists them).
const (
	// MaxBuiltElements bounds the arrays repeat and sequence build.
	MaxBuiltElements = arrayMaxSequence
	// MaxPadLength bounds the padding lpad and rpad add, in characters.
	MaxPadLength = 1_000_000
	// MaxLagOffset bounds lag's offset: the rule keeps that many values.
	MaxLagOffset = 1_000_000
)

// boundedArg wraps validate with a check that argument i, when it is an
// integer literal, is at most max: a rule whose SQL asks for more is
// refused at creation.
func boundedArg(validate func([]ast.Expr) error, fn, what string, i int, max int64) func([]ast.Expr) error {
	return func(args []ast.Expr) error {
		if validate != nil {
			if err := validate(args); err != nil {
				return err
			}
		}
		if i < len(args) {
			if lit, ok := args[i].(*ast.IntegerLit); ok && lit.Val > max {
				return boundError(fn, what, lit.Val, max)
			}
		}
		return nil
	}
}

func boundError(fn, what string, v, max int64) error {
	return fmt.Errorf("%s: %s %d exceeds the limit of %d", fn, what, v, max)
}
