package differential

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/rekuiper/rekuiper/internal/conformance"
	"github.com/rekuiper/rekuiper/internal/function"
)

// shrinkRounds bounds the oracle runs spent on one difference.
const shrinkRounds = 8

// Shrink makes a differing case smaller while it still differs the same
// way: each round tries every case with one record or one selected field
// fewer, runs them all through eKuiper at once, and keeps the first that
// still shows the difference. It returns the smallest outcome found (o
// itself when nothing smaller differs, or when the oracle fails).
func Shrink(ctx context.Context, o Outcome, oracle Runner, funcs *function.Registry, work string) Outcome {
	best := o
	for round := range shrinkRounds {
		cands := candidates(best.Case)
		if len(cands) == 0 || ctx.Err() != nil {
			break
		}
		in := filepath.Join(work, fmt.Sprintf("%s-%d-in", o.Case.Name, round))
		out := filepath.Join(work, fmt.Sprintf("%s-%d-out", o.Case.Name, round))
		for i, c := range cands {
			c.Name = fmt.Sprintf("%s_r%d_%d", o.Case.Name, round, i)
		}
		if WriteCases(in, cands) != nil || oracle.Run(ctx, in, out) != nil {
			break
		}
		found := false
		for _, c := range cands {
			res, err := conformance.Load(filepath.Join(out, c.Suite+"."+c.Name+".json"))
			if err != nil {
				continue
			}
			if next := Check(res, funcs); next.Kind == o.Kind {
				res.Name = o.Case.Name
				next.Case = res
				best, found = next, true
				break
			}
		}
		_ = os.RemoveAll(in)
		if !found {
			break
		}
	}
	return best
}

// candidates lists the cases one step smaller than c.
func candidates(c *conformance.Case) []*conformance.Case {
	var out []*conformance.Case
	if fields := selectFields(c.Rule.SQL); len(fields) > 1 {
		for i := range fields {
			rest := append(append([]string{}, fields[:i]...), fields[i+1:]...)
			d := cloneCase(c)
			d.Rule.SQL = replaceSelect(c.Rule.SQL, rest)
			out = append(out, d)
		}
	}
	if len(c.Timeline) > 1 {
		for i := range c.Timeline {
			out = append(out, withoutStep(c, i))
		}
	}
	return out
}

func cloneCase(c *conformance.Case) *conformance.Case {
	d := *c
	d.Inputs = map[string][]conformance.Event{}
	for s, evs := range c.Inputs {
		d.Inputs[s] = append([]conformance.Event(nil), evs...)
	}
	d.Timeline = append([]conformance.Step(nil), c.Timeline...)
	d.Expected, d.RawExpected, d.OracleError = nil, nil, ""
	return &d
}

// withoutStep drops timeline step i and its record.
func withoutStep(c *conformance.Case, i int) *conformance.Case {
	d := cloneCase(c)
	st := c.Timeline[i]
	evs := d.Inputs[st.Stream]
	d.Inputs[st.Stream] = append(evs[:st.Index:st.Index], evs[st.Index+1:]...)
	d.Timeline = append(d.Timeline[:i:i], d.Timeline[i+1:]...)
	for j := range d.Timeline {
		if d.Timeline[j].Stream == st.Stream && d.Timeline[j].Index > st.Index {
			d.Timeline[j].Index--
		}
	}
	if n := len(d.Timeline); n > 0 {
		d.EndTime = d.Timeline[n-1].At
	}
	return d
}

// selectFields splits the select list of "SELECT ... FROM" at top-level
// commas.
func selectFields(sql string) []string {
	lo := len("SELECT ")
	hi := strings.Index(sql, " FROM ")
	if !strings.HasPrefix(sql, "SELECT ") || hi < lo {
		return nil
	}
	var out []string
	depth, start := 0, lo
	var quote byte
	for i := lo; i < hi; i++ {
		ch := sql[i]
		switch {
		case quote != 0:
			if ch == quote {
				quote = 0
			}
		case ch == '"' || ch == '\'' || ch == '`':
			quote = ch
		case ch == '(' || ch == '[':
			depth++
		case ch == ')' || ch == ']':
			depth--
		case ch == ',' && depth == 0:
			out = append(out, strings.TrimSpace(sql[start:i]))
			start = i + 1
		}
	}
	return append(out, strings.TrimSpace(sql[start:hi]))
}

func replaceSelect(sql string, fields []string) string {
	return "SELECT " + strings.Join(fields, ", ") + sql[strings.Index(sql, " FROM "):]
}
