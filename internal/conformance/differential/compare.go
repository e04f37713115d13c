package differential

import (
	"fmt"
	"sort"
	"strings"

	"github.com/rekuiper/rekuiper/internal/conformance"
	"github.com/rekuiper/rekuiper/internal/function"
)

// Kind is how the two engines compare on one case.
type Kind int

const (
	// Same: equal emissions (error rows match error rows).
	Same Kind = iota
	// Differs: both ran the rule and emitted different things.
	Differs
	// EKuiperRefused: eKuiper refused the rule, rekuiper ran it.
	EKuiperRefused
	// RekuiperRefused: rekuiper refused the rule, eKuiper ran it.
	RekuiperRefused
	// BothRefused: neither engine ran the rule.
	BothRefused
)

func (k Kind) String() string {
	return [...]string{"same", "differs", "ekuiper-refused", "rekuiper-refused", "both-refused"}[k]
}

// Outcome is one case compared.
type Outcome struct {
	Case   *conformance.Case
	Kind   Kind
	Detail string // the mismatch or the refusal
}

// Check replays c (whose Expected or OracleError came from eKuiper)
// through rekuiper with the case's rule options.
func Check(c *conformance.Case, funcs *function.Registry) Outcome {
	actual, err := conformance.Replay(c, c.Rule.Options, funcs)
	switch {
	case c.OracleError != "" && err != nil:
		return Outcome{Case: c, Kind: BothRefused, Detail: fmt.Sprintf("ekuiper: %s; rekuiper: %v", c.OracleError, err)}
	case c.OracleError != "":
		return Outcome{Case: c, Kind: EKuiperRefused, Detail: "ekuiper: " + c.OracleError + "; rekuiper emitted " + conformance.Show(actual)}
	case err != nil:
		return Outcome{Case: c, Kind: RekuiperRefused, Detail: fmt.Sprintf("rekuiper: %v", err)}
	}
	if m, _ := conformance.Compare(c.Expected, actual); m != nil {
		return Outcome{Case: c, Kind: Differs, Detail: m.Error()}
	}
	return Outcome{Case: c, Kind: Same}
}

// Category is the group a case reports under: its suite.
func Category(c *conformance.Case) string { return c.Suite }

// Report counts outcomes per category and kind.
type Report struct {
	counts map[string]map[Kind]int
}

// Add counts one outcome.
func (r *Report) Add(o Outcome) {
	if r.counts == nil {
		r.counts = map[string]map[Kind]int{}
	}
	cat := Category(o.Case)
	if r.counts[cat] == nil {
		r.counts[cat] = map[Kind]int{}
	}
	r.counts[cat][o.Kind]++
}

// Total is the number of outcomes of a kind (all categories).
func (r *Report) Total(k Kind) int {
	n := 0
	for _, m := range r.counts {
		n += m[k]
	}
	return n
}

// String renders one line per category: rules run and counts per kind.
func (r *Report) String() string {
	cats := make([]string, 0, len(r.counts))
	for c := range r.counts {
		cats = append(cats, c)
	}
	sort.Strings(cats)
	var b strings.Builder
	fmt.Fprintf(&b, "%-28s %6s %6s %8s %9s %9s %6s\n", "category", "rules", "same", "differs", "ek-refuse", "rk-refuse", "both")
	var tot [5]int
	for _, c := range cats {
		m := r.counts[c]
		n := 0
		for k := Same; k <= BothRefused; k++ {
			n += m[k]
			tot[k] += m[k]
		}
		fmt.Fprintf(&b, "%-28s %6d %6d %8d %9d %9d %6d\n", c, n, m[Same], m[Differs], m[EKuiperRefused], m[RekuiperRefused], m[BothRefused])
	}
	fmt.Fprintf(&b, "%-28s %6d %6d %8d %9d %9d %6d\n", "total", tot[0]+tot[1]+tot[2]+tot[3]+tot[4], tot[0], tot[1], tot[2], tot[3], tot[4])
	return b.String()
}
