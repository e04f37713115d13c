package conformance

import (
	"fmt"
	"os"
	"regexp"
	"sort"

	"github.com/rekuiper/rekuiper/internal/function"
)

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Verdict is the outcome of one case under one option variant.
type Verdict int

const (
	Pass Verdict = iota
	Fail
	Skipped
	// QuirkDiffers: a quirk case where rekuiper deliberately differs and the
	// difference is documented.
	QuirkDiffers
	// Disputed: a case not marked quirk whose expectation rekuiper believes
	// wrong, with the reason documented (reported, never silently passed).
	Disputed
)

func (v Verdict) String() string {
	return [...]string{"PASS", "FAIL", "SKIP", "QUIRK", "DISPUTED"}[v]
}

// Result is one case run.
type Result struct {
	Case        *Case
	Variant     int
	Verdict     Verdict
	Err         error // replay error or *Mismatch
	ExactErrors bool
}

// Runner replays cases.
type Runner struct {
	Funcs *function.Registry
	// Documented lists quirk case IDs (suite/name) whose difference from
	// eKuiper is documented in docs/compatibility.md.
	Documented map[string]bool
}

// RunCase replays every option variant of c.
func (r *Runner) RunCase(c *Case) []Result {
	if c.Skip != "" {
		return []Result{{Case: c, Verdict: Skipped}}
	}
	variants := c.OptionVariants
	if len(variants) == 0 {
		variants = []map[string]any{c.Rule.Options}
	}
	var out []Result
	for i, v := range variants {
		res := Result{Case: c, Variant: i, ExactErrors: true}
		actual, err := Replay(c, v, r.Funcs)
		if err != nil {
			res.Verdict, res.Err = Fail, err
		} else if m, exact := Compare(c.Expected, actual); m != nil {
			res.Verdict, res.Err, res.ExactErrors = Fail, m, exact
		} else {
			res.ExactErrors = exact
		}
		if res.Verdict == Fail && r.Documented[c.ID()] {
			res.Verdict = QuirkDiffers
			if c.Quirk == "" {
				res.Verdict = Disputed
			}
		}
		out = append(out, res)
	}
	return out
}

var caseRef = regexp.MustCompile("`((?:Test|gen_|diff_|rand_)[A-Za-z0-9_]+/[A-Za-z0-9_.-]+)`")

// DocumentedQuirks reads the case IDs named in backquotes in a
// compatibility document.
func DocumentedQuirks(path string) (map[string]bool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read compatibility notes: %w", err)
	}
	out := map[string]bool{}
	for _, m := range caseRef.FindAllSubmatch(data, -1) {
		out[string(m[1])] = true
	}
	return out, nil
}

// Summary counts verdicts.
type Summary struct {
	Cases, Runs, Passed, Failed, Skipped, Quirks, Disputed, InexactErrors int
}

// Summarize counts results.
func Summarize(results []Result) Summary {
	var s Summary
	seen := map[*Case]bool{}
	for _, r := range results {
		if !seen[r.Case] {
			seen[r.Case] = true
			s.Cases++
		}
		switch r.Verdict {
		case Pass:
			s.Runs++
			s.Passed++
			if !r.ExactErrors {
				s.InexactErrors++
			}
		case Fail:
			s.Runs++
			s.Failed++
		case Skipped:
			s.Skipped++
		case QuirkDiffers:
			s.Runs++
			s.Quirks++
		case Disputed:
			s.Runs++
			s.Disputed++
		}
	}
	return s
}

// String formats the summary as the closing line runners read.
func (s Summary) String() string {
	return fmt.Sprintf("%d cases, %d runs: %d passed, %d failed, %d skipped, %d documented quirk differences, %d disputed cases (%d passing runs with error text differing from eKuiper)",
		s.Cases, s.Runs, s.Passed, s.Failed, s.Skipped, s.Quirks, s.Disputed, s.InexactErrors)
}
