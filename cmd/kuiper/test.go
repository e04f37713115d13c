package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/rekuiper/rekuiper/internal/conformance"
	"github.com/rekuiper/rekuiper/internal/function"
)

// The repository's conformance corpus and compatibility notes: `kuiper test`
// without a PATH, run from a checkout's root, replays them.
const (
	repoCorpus = "internal/conformance/testdata"
	repoCompat = "docs/compatibility.md"
)

// runTest implements `kuiper test [-v] [-compat FILE] [PATH...]`.
func runTest(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(stderr)
	verbose := fs.Bool("v", false, "print every case, not only failures")
	compat := fs.String("compat", "", "compatibility notes listing documented differences (case IDs in back-quotes)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: kuiper test [-v] [-compat FILE] [PATH...]")
		fmt.Fprintln(stderr, "Replays rule test files (or folders of them) on a virtual clock and compares the emissions.")
		fmt.Fprintf(stderr, "Without PATH, in a rekuiper checkout: the conformance corpus in %s, with -compat %s.\n", repoCorpus, repoCompat)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	args = fs.Args()
	if len(args) == 0 {
		if _, err := os.Stat(repoCorpus); err != nil {
			fmt.Fprintf(stderr, "kuiper test: no PATH given and no conformance corpus at ./%s (run it from a rekuiper checkout, or name test files)\n", repoCorpus)
			fs.Usage()
			return 2
		}
		args = []string{repoCorpus}
		if *compat == "" {
			*compat = repoCompat
		}
	}
	paths, err := conformance.Discover(args...)
	if err != nil {
		fmt.Fprintf(stderr, "kuiper test: %v\n", err)
		return 2
	}
	documented := map[string]bool{}
	if *compat != "" {
		if documented, err = conformance.DocumentedQuirks(*compat); err != nil {
			fmt.Fprintf(stderr, "kuiper test: %v\n", err)
			return 2
		}
	}
	r := &conformance.Runner{Funcs: function.Builtins(), Documented: documented}
	var all []conformance.Result
	for _, p := range paths {
		c, err := conformance.Load(p)
		if err != nil {
			fmt.Fprintf(stderr, "kuiper test: %v\n", err)
			all = append(all, conformance.Result{Case: &conformance.Case{Name: p}, Verdict: conformance.Fail, Err: err})
			continue
		}
		for _, res := range r.RunCase(c) {
			all = append(all, res)
			report(stdout, res, *verbose)
		}
	}
	s := conformance.Summarize(all)
	fmt.Fprintln(stdout, s)
	fmt.Fprintf(stdout, "%d passed, %d failed, %d skipped\n", s.Passed, s.Failed, s.Skipped)
	if s.Failed > 0 {
		return 1
	}
	return 0
}

func report(w io.Writer, res conformance.Result, verbose bool) {
	c := res.Case
	switch res.Verdict {
	case conformance.Fail:
		fmt.Fprintf(w, "FAIL %s (variant %d, %s)\n", c.ID(), res.Variant, c.Path)
		fmt.Fprintf(w, "  rule: %s\n  %v\n", c.Rule.SQL, res.Err)
	case conformance.QuirkDiffers, conformance.Disputed:
		if verbose {
			fmt.Fprintf(w, "%s %s (variant %d): documented difference\n", res.Verdict, c.ID(), res.Variant)
		}
	default:
		if verbose {
			fmt.Fprintf(w, "%s %s (variant %d)\n", res.Verdict, c.ID(), res.Variant)
		}
	}
}
