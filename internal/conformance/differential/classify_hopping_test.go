package differential

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/rekuiper/rekuiper/internal/conformance"
	"github.com/rekuiper/rekuiper/internal/function"
)

// TestHoppingLostRows: the differences of the recorded cases where
// eKuiper loses rows of an event-time hopping window are put down to that
// quirk, and cases where it loses none are not.
func TestHoppingLostRows(t *testing.T) {
	funcs := function.Builtins()
	dir := filepath.Join("..", "testdata", "differential")
	for _, name := range []string{
		"diff_eventtime/hop_gap_lost", "diff_eventtime/hop_gap_lost_tol", "diff_eventtime/hop_lost_rows",
		"diff_eventtime/hop_lost_error_window", "diff_join/hop_right_lost", "diff_join/hop_full_lost",
	} {
		t.Run(name, func(t *testing.T) {
			c, err := conformance.Load(filepath.Join(dir, name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			if len(ekuiperLostHoppingRows(c)) == 0 {
				t.Fatal("no lost row found")
			}
			o := Check(c, funcs)
			if o.Kind != Differs {
				t.Fatalf("kind %v, want a difference", o.Kind)
			}
			if got := Classify(o, false, funcs); !strings.HasPrefix(got, "hopping-lost-rows") {
				t.Errorf("class %q, want hopping-lost-rows", got)
			}
		})
	}
	// The timeline steps of the rows eKuiper loses in cases both engines
	// agree on: none, or only rows whose windows never close.
	for name, want := range map[string][]int{
		"diff_eventtime/tumble_gap": nil, "diff_eventtime/hop_42": nil, "diff_eventtime/hopping_late_tolerance": nil,
		"diff_eventtime/hop_where": {9}, "diff_eventtime/hop_grouped": {9},
	} {
		t.Run(name, func(t *testing.T) {
			c, err := conformance.Load(filepath.Join(dir, name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			for step, f := range ekuiperLostHoppingRows(c) {
				if f == lost {
					got = append(got, step)
				}
			}
			sort.Ints(got)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("lost rows at steps %v, want %v", got, want)
			}
		})
	}
}

// TestHoppingLostRowsStrict: on a strictly validated stream the rows
// validation refuses take no part in eKuiper's watermark, and without them
// eKuiper loses other rows than with them.
func TestHoppingLostRowsStrict(t *testing.T) {
	funcs := function.Builtins()
	c, err := conformance.Load(filepath.Join("..", "testdata", "differential", "diff_eventtime", "hop_lost_strict.json"))
	if err != nil {
		t.Fatal(err)
	}
	tc, changed := asEKuiperReads(c, true, false)
	if !changed {
		t.Fatal("no BIGINT fraction cut off")
	}
	refused, ok := refusedRows(tc, funcs)
	if !ok {
		t.Fatal("refused rows not found")
	}
	var steps []int
	for i := range refused {
		steps = append(steps, i)
	}
	sort.Ints(steps)
	if fmt.Sprint(steps) != "[1 4 6 7 8 10]" {
		t.Errorf("refused steps %v, want [1 4 6 7 8 10]", steps)
	}
	got := map[int]fate{}
	for i, f := range ekuiperLostHoppingRowsRefusing(tc, refused) {
		got[i] = f
	}
	if want := map[int]fate{2: lost, 3: late, 9: lost}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("fates %v, want %v", got, want)
	}
	// Counting the refused rows, eKuiper would lose other rows.
	if all := ekuiperLostHoppingRows(tc); fmt.Sprint(all) == fmt.Sprint(got) {
		t.Errorf("the refused rows change nothing: %v", all)
	}
	o := Check(c, funcs)
	if got := Classify(o, false, funcs); !strings.HasPrefix(got, "bigint-fraction+hopping-lost-rows") {
		t.Errorf("class %q, want bigint-fraction+hopping-lost-rows", got)
	}
}
