package function

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/value"
)

// TestAccumulatorMatchesAggregate folds random columns through each
// accumulator, with a checkpoint round trip at a random row, and compares
// with the Aggregate over the whole column: same value, same error text.
func TestAccumulatorMatchesAggregate(t *testing.T) {
	reg := Builtins()
	rng := rand.New(rand.NewPCG(1, 2))
	pools := map[string][]any{
		"ints":    {int64(1), int64(-7), int64(300), int64(1 << 40), nil},
		"numbers": {int64(2), 1.5, -0.25, int64(1000), nil, 3.0},
		"mixed":   {int64(1), 2.5, "x", true, nil, time.Unix(5, 0).UTC(), map[string]any{"a": int64(1)}},
		"strings": {"b", "a", "zz", nil, ""},
		"times":   {time.Unix(1, 0).UTC(), time.Unix(9, 0).UTC(), nil},
	}
	for _, name := range []string{"count", "sum", "avg", "max", "min"} {
		def, ok := reg.Lookup(name)
		if !ok || def.Accumulate == nil {
			t.Fatalf("%s: no accumulator", name)
		}
		for pool, vals := range pools {
			for trial := range 200 {
				n := rng.IntN(12)
				col := make([]any, n)
				for i := range col {
					col[i] = vals[rng.IntN(len(vals))]
				}
				want, wantErr := def.Aggregate(nil, [][]any{col})
				acc := def.Accumulate()
				cut := rng.IntN(n + 1)
				for i, v := range col {
					if i == cut {
						acc = roundTrip(t, def, acc)
					}
					acc.Add([]any{v})
				}
				if cut == n {
					acc = roundTrip(t, def, acc)
				}
				got, gotErr := acc.Result()
				ctx := fmt.Sprintf("%s over %s #%d %v", name, pool, trial, col)
				if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
					t.Fatalf("%s: error %v, want %v", ctx, gotErr, wantErr)
				}
				if wantErr == nil && !reflect.DeepEqual(got, want) {
					t.Fatalf("%s: %#v, want %#v", ctx, got, want)
				}
			}
		}
	}
}

func roundTrip(t *testing.T, def *Def, acc Accumulator) Accumulator {
	t.Helper()
	buf := acc.AppendState(nil)
	fresh := def.Accumulate()
	r := value.NewReader(buf)
	fresh.ReadState(r)
	if r.Err() != nil || r.Len() != 0 {
		t.Fatalf("%s: restore: err %v, %d bytes left", def.Name, r.Err(), r.Len())
	}
	return fresh
}

// TestAccumulatorArgumentErrorWins: an argument that failed to evaluate is
// the result even when a refused value came first, as the Aggregate
// evaluates whole columns before folding.
func TestAccumulatorArgumentErrorWins(t *testing.T) {
	def, _ := Builtins().Lookup("sum")
	acc := def.Accumulate()
	acc.Add([]any{int64(1)})
	acc.Add([]any{"x"})
	argErr := errors.New("invalid operation")
	acc.Fail(argErr)
	acc.Fail(errors.New("second"))
	if _, err := acc.Result(); err != argErr {
		t.Fatalf("error %v, want %v", err, argErr)
	}
	acc = roundTrip(t, def, acc)
	if _, err := acc.Result(); err == nil || err.Error() != argErr.Error() {
		t.Fatalf("after restore: error %v, want %v", err, argErr)
	}
}
