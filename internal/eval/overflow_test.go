package eval

import (
	"errors"
	"testing"

	"github.com/rekuiper/rekuiper/internal/function"
	"github.com/rekuiper/rekuiper/internal/row"
	"github.com/rekuiper/rekuiper/internal/value"
)

// TestIntegerOverflowIsARowError evaluates SQL expressions whose bigint
// result does not fit: each is an ErrOverflow error, never a wrapped number.
func TestIntegerOverflowIsARowError(t *testing.T) {
	m := map[string]any{"max": int64(9223372036854775807), "min": int64(-9223372036854775808), "big": 1e30}
	r := &row.Tuple{Emitter: "s", Message: m}
	c := NewCompiler(function.Builtins(), map[string]string{"s": "s"}, nil)
	eval := func(t *testing.T, src string) (any, error) { return evalOn(t, c, r, src) }
	for _, src := range []string{
		"max + 1", "min - 1", "max * 2", "min * -1", "min / -1", "-min", "0 - min",
		`cast(big, "bigint")`, "9223372036854775807 + 1", "abs(min)",
	} {
		t.Run(src, func(t *testing.T) {
			got, err := eval(t, src)
			if err == nil {
				t.Fatalf("%s = %v; want an overflow error", src, got)
			}
			if src != "abs(min)" && !errors.Is(err, value.ErrOverflow) {
				t.Fatalf("%s: error %v does not wrap ErrOverflow", src, err)
			}
		})
	}
	for src, want := range map[string]any{
		"max + min": int64(-1), "-max": int64(-9223372036854775807), "min % -1": int64(0),
		"max + 1.0": 9223372036854775808.0, "min / 1": int64(-9223372036854775808),
	} {
		t.Run(src, func(t *testing.T) {
			got, err := eval(t, src)
			if err != nil || got != want {
				t.Fatalf("%s = %v, %v; want %v", src, got, err, want)
			}
		})
	}
}
