package differential

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/rekuiper/rekuiper/internal/conformance"
	"github.com/rekuiper/rekuiper/internal/function"
)

// Pool compares batches of cases with eKuiper on several oracles at once:
// each worker owns one Runner (an oracle with a root of its own) and runs
// one batch on it at a time. The outcome of a case depends only on the
// case, never on which worker ran it or when, so a run split over N
// workers gives the verdicts of a run on one (eKuiper's own variance
// aside, which the Variance rerun reports as such).
//
// Folders under Work: ekuiper-<b> holds eKuiper's outputs of batch b
// (numbered from 1), rerun-<b> the second outputs of its differing cases,
// errors-<b> the outputs, with errors sent, of its unexplained differences
// of rules that do not send errors; in/ and shrink/ hold scratch inputs.
// kuiperdiff -recorded reads the same layout.
type Pool struct {
	Oracles []Runner
	Funcs   *function.Registry
	Work    string
	// Variance reruns every differing case through eKuiper once more; a
	// case whose two eKuiper outputs differ is eKuiper's variance.
	Variance bool
	// Shrink makes every unexplained difference smaller (shrink.go).
	Shrink bool
}

type batchResult struct {
	index int
	outs  []Outcome
	err   error
}

// Run compares the batches. done receives each batch's outcomes, in the
// order of the batch's cases, on the calling goroutine and in batch order,
// whatever order the workers finish in. Run returns the first error of any
// batch; batches after it are not reported.
func (p *Pool) Run(ctx context.Context, batches [][]*conformance.Case, done func(batch int, outs []Outcome)) error {
	if len(p.Oracles) == 0 {
		return errors.New("differential pool: no oracle")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan int)
	results := make(chan batchResult)
	var wg sync.WaitGroup
	for _, r := range p.Oracles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				outs, err := p.batch(ctx, r, i, batches[i])
				results <- batchResult{i, outs, err}
			}
		}()
	}
	go func() {
		defer close(jobs)
		for i := range batches {
			select {
			case jobs <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() {
		wg.Wait()
		close(results)
	}()
	pending := map[int][]Outcome{}
	next := 0
	var firstErr error
	for res := range results {
		if res.err != nil {
			if firstErr == nil {
				firstErr = res.err
				cancel()
			}
			continue
		}
		pending[res.index] = res.outs
		for firstErr == nil {
			outs, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			done(next, outs)
			next++
		}
	}
	if firstErr == nil && next < len(batches) {
		firstErr = ctx.Err()
	}
	return firstErr
}

// batch runs one batch through r and compares every case with rekuiper.
func (p *Pool) batch(ctx context.Context, r Runner, i int, cases []*conformance.Case) ([]Outcome, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	name := strconv.Itoa(i + 1)
	in := filepath.Join(p.Work, "in", name)
	out := filepath.Join(p.Work, "ekuiper-"+name)
	if err := runCases(ctx, r, in, out, cases); err != nil {
		return nil, fmt.Errorf("batch %s: %w", name, err)
	}
	outs := make([]Outcome, len(cases))
	var differing []*conformance.Case
	for j, c := range cases {
		res, err := conformance.Load(filepath.Join(out, caseFile(c)))
		if err != nil {
			return nil, fmt.Errorf("batch %s: %w", name, err)
		}
		outs[j] = Check(res, p.Funcs)
		if outs[j].IsDifference() {
			differing = append(differing, c)
		}
	}
	varied := map[string]bool{}
	if p.Variance && len(differing) > 0 {
		rerun := filepath.Join(p.Work, "rerun-"+name)
		if err := runCases(ctx, r, filepath.Join(p.Work, "in", name+"-rerun"), rerun, differing); err != nil {
			return nil, fmt.Errorf("batch %s rerun: %w", name, err)
		}
		for _, c := range differing {
			varied[c.ID()] = OutputsDiffer(filepath.Join(out, caseFile(c)), filepath.Join(rerun, caseFile(c)))
		}
	}
	var hidden []*conformance.Case
	for j := range outs {
		if !outs[j].IsDifference() {
			continue
		}
		outs[j].Class = Classify(outs[j], varied[outs[j].Case.ID()], p.Funcs)
		if outs[j].Class == Unexplained && !sendsErrors(cases[j]) {
			hidden = append(hidden, WithErrorsSent(cases[j]))
		}
	}
	if len(hidden) > 0 {
		// With errors not sent, a row eKuiper fails on is just missing;
		// the same case with errors sent shows why.
		errs := filepath.Join(p.Work, "errors-"+name)
		if err := runCases(ctx, r, filepath.Join(p.Work, "in", name+"-errors"), errs, hidden); err != nil {
			return nil, fmt.Errorf("batch %s with errors sent: %w", name, err)
		}
		for j := range outs {
			if outs[j].Class == Unexplained {
				outs[j].Class = ClassifyErrorsSent(outs[j], filepath.Join(errs, caseFile(cases[j])), p.Funcs)
			}
		}
	}
	if p.Shrink {
		for j := range outs {
			if outs[j].Class != Unexplained {
				continue
			}
			s := Shrink(ctx, outs[j], r, p.Funcs, filepath.Join(p.Work, "shrink"))
			s.Class = Classify(s, false, p.Funcs)
			if s.Class != Unexplained {
				// The smaller case differs another way; keep the original.
				s = outs[j]
			}
			outs[j] = s
		}
	}
	return outs, ctx.Err()
}

func sendsErrors(c *conformance.Case) bool {
	v, ok := c.Rule.Options["sendError"].(bool)
	return !ok || v
}

// WithErrorsSent is c with the rule option sendError on.
func WithErrorsSent(c *conformance.Case) *conformance.Case {
	d := cloneCase(c)
	d.Rule.Options = map[string]any{}
	for k, v := range c.Rule.Options {
		d.Rule.Options[k] = v
	}
	d.Rule.Options["sendError"] = true
	d.OptionVariants = []map[string]any{d.Rule.Options}
	return d
}

// ClassifyErrorsSent classifies an unexplained difference by the oracle
// output, at path, of its case with errors sent: the class of that case's
// difference when a quirk explains it, else Unexplained.
func ClassifyErrorsSent(o Outcome, path string, funcs *function.Registry) string {
	res, err := conformance.Load(path)
	if err != nil {
		return Unexplained
	}
	e := Check(res, funcs)
	if !e.IsDifference() {
		return Unexplained
	}
	return Classify(e, false, funcs)
}

// runCases writes cases into in, runs them through r into out and removes
// in.
func runCases(ctx context.Context, r Runner, in, out string, cases []*conformance.Case) error {
	if err := os.RemoveAll(in); err != nil {
		return err
	}
	if err := WriteCases(in, cases); err != nil {
		return err
	}
	if err := r.Run(ctx, in, out); err != nil {
		return err
	}
	return os.RemoveAll(in)
}

func caseFile(c *conformance.Case) string { return c.Suite + "." + c.Name + ".json" }

// OutputsDiffer reports whether two oracle outputs of one case differ in
// what eKuiper emitted or refused (both files are written by the same
// driver, so equal outputs are equal bytes). A missing second output is
// not a difference.
func OutputsDiffer(first, second string) bool {
	a, err1 := os.ReadFile(first)
	b, err2 := os.ReadFile(second)
	if err1 != nil || err2 != nil {
		return false
	}
	return !bytes.Equal(a, b)
}
