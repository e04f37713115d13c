package value

import (
	"errors"
	"math"
	"testing"
)

func TestIntArithOverflow(t *testing.T) {
	const maxI, minI = int64(math.MaxInt64), int64(math.MinInt64)
	overflows := []struct {
		name string
		op   Op
		a, b int64
	}{
		{"max+1", Add, maxI, 1},
		{"min+-1", Add, minI, -1},
		{"max+max", Add, maxI, maxI},
		{"min-1", Sub, minI, 1},
		{"max--1", Sub, maxI, -1},
		{"0-min", Sub, 0, minI},
		{"max*2", Mul, maxI, 2},
		{"min*-1", Mul, minI, -1},
		{"-1*min", Mul, -1, minI},
		{"big*big", Mul, 1 << 32, 1 << 31},
		{"min/-1", Div, minI, -1},
	}
	for _, c := range overflows {
		t.Run(c.name, func(t *testing.T) {
			got, err := Arith(c.op, c.a, c.b)
			if !errors.Is(err, ErrOverflow) {
				t.Fatalf("%d %s %d = %v, %v; want ErrOverflow", c.a, c.op, c.b, got, err)
			}
		})
	}
	fits := []struct {
		name string
		op   Op
		a, b int64
		want int64
	}{
		{"max+0", Add, maxI, 0, maxI},
		{"max+min", Add, maxI, minI, -1},
		{"min+max", Add, minI, maxI, -1},
		{"-1+-1", Add, -1, -1, -2},
		{"min-0", Sub, minI, 0, minI},
		{"-1-max", Sub, -1, maxI, minI},
		{"max-max", Sub, maxI, maxI, 0},
		{"min*1", Mul, minI, 1, minI},
		{"0*min", Mul, 0, minI, 0},
		{"big*neg", Mul, 1 << 31, -(1 << 32), minI},
		{"-3*7", Mul, -3, 7, -21},
		{"min/1", Div, minI, 1, minI},
		{"7/-2", Div, 7, -2, -3},
		{"min%-1", Mod, minI, -1, 0},
		{"-7%3", Mod, -7, 3, -1},
	}
	for _, c := range fits {
		t.Run(c.name, func(t *testing.T) {
			got, err := Arith(c.op, c.a, c.b)
			if err != nil || got != c.want {
				t.Fatalf("%d %s %d = %v, %v; want %d", c.a, c.op, c.b, got, err, c.want)
			}
		})
	}
}

func TestFloatToInt(t *testing.T) {
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), 9223372036854775808.0, -9223372036854777856.0, 1e30} {
		if got, err := FloatToInt(f); !errors.Is(err, ErrOverflow) {
			t.Errorf("FloatToInt(%v) = %d, %v; want ErrOverflow", f, got, err)
		}
		if got, err := ToInt(f); !errors.Is(err, ErrOverflow) {
			t.Errorf("ToInt(%v) = %d, %v; want ErrOverflow", f, got, err)
		}
	}
	if got, err := ToInt("1e30"); !errors.Is(err, ErrOverflow) {
		t.Errorf(`ToInt("1e30") = %d, %v; want ErrOverflow`, got, err)
	}
	for f, want := range map[float64]int64{-9223372036854775808.0: math.MinInt64, 2.9: 2, -2.9: -2, 9223372036854774784.0: 9223372036854774784} {
		if got, err := FloatToInt(f); err != nil || got != want {
			t.Errorf("FloatToInt(%v) = %d, %v; want %d", f, got, err, want)
		}
	}
}

func TestNormalizeHugeUnsigned(t *testing.T) {
	if got := Normalize(uint64(math.MaxUint64)); got != float64(math.MaxUint64) {
		t.Errorf("Normalize(MaxUint64) = %T %v; want float64", got, got)
	}
	if got := Normalize(uint64(math.MaxInt64)); got != int64(math.MaxInt64) {
		t.Errorf("Normalize(MaxInt64 as uint64) = %T %v; want int64", got, got)
	}
}
