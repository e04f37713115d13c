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
	// Actual is what rekuiper emitted (nil when it refused the rule).
	Actual [][]map[string]any
	// Class sorts a difference (Classify): a quirk rule's name, Variance
	// or Unexplained; empty for Same and BothRefused.
	Class string
}

// IsDifference reports whether the engines disagree: one refused what the
// other ran, or both ran the rule and emitted different things.
func (o Outcome) IsDifference() bool { return o.Kind != Same && o.Kind != BothRefused }

// Check replays c (whose Expected or OracleError came from eKuiper)
// through rekuiper with the case's rule options.
func Check(c *conformance.Case, funcs *function.Registry) Outcome {
	actual, err := conformance.Replay(c, c.Rule.Options, funcs)
	o := check(c, actual, err)
	o.Actual = actual
	return o
}

func check(c *conformance.Case, actual [][]map[string]any, err error) Outcome {
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
	counts  map[string]map[Kind]int
	classes map[string]int
	// Unexplained lists the differences no quirk rule or rerun explains,
	// in the order they were added.
	Unexplained []Outcome
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
	if !o.IsDifference() {
		return
	}
	if r.classes == nil {
		r.classes = map[string]int{}
	}
	class := o.Class
	if class == "" {
		class = Unexplained
	}
	r.classes[class]++
	if class == Unexplained {
		r.Unexplained = append(r.Unexplained, o)
	}
}

// Classes is the number of differences per class.
func (r *Report) Classes() map[string]int { return r.classes }

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
	if len(r.classes) == 0 {
		return b.String()
	}
	classes := make([]string, 0, len(r.classes))
	for c := range r.classes {
		classes = append(classes, c)
	}
	sort.Slice(classes, func(i, j int) bool {
		ci, cj := r.classes[classes[i]], r.classes[classes[j]]
		return ci > cj || ci == cj && classes[i] < classes[j]
	})
	fmt.Fprintf(&b, "\ndifferences by class (quirk rules name their entry in docs/compatibility.md):\n")
	for _, c := range classes {
		fmt.Fprintf(&b, "%6d  %s\n", r.classes[c], describeClass(c))
	}
	return b.String()
}
