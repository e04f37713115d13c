// Command kuiperdiff is the differential test of rekuiper against eKuiper:
// it takes rule test cases (authored ones, or random ones from the seeded
// generator), runs them through eKuiper's rule test harness (the oracle
// scripts/ekuiper-oracle.sh builds) on several oracles at once, replays
// eKuiper's outputs through rekuiper, reports the differences per
// category and sorts each into a documented quirk, eKuiper's variance or
// unexplained (listed after the report). docs/compatibility.md describes
// the run and its figures.
//
//	kuiperdiff -oracle /tmp/ekuiper-oracle/oracle.test -cases DIR
//	kuiperdiff -oracle /tmp/ekuiper-oracle/oracle.test -seed 1 -n 5000 -workers 8 -keep diffs/
//	kuiperdiff -recorded WORK/  # sort an earlier run's differences again
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/rekuiper/rekuiper/internal/conformance"
	"github.com/rekuiper/rekuiper/internal/conformance/differential"
	"github.com/rekuiper/rekuiper/internal/function"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("kuiperdiff", flag.ContinueOnError)
	fs.SetOutput(stderr)
	oracle := fs.String("oracle", "", "eKuiper's compiled rule harness (DEST/oracle.test of scripts/ekuiper-oracle.sh)")
	cases := fs.String("cases", "", "a folder of case files to compare (their expected outputs are replaced by eKuiper's)")
	recorded := fs.String("recorded", "", "a folder of oracle outputs from an earlier run: compare rekuiper with them, without running eKuiper")
	seed := fs.Uint64("seed", 1, "generator seed")
	n := fs.Int("n", 0, "number of random cases to generate and compare")
	batch := fs.Int("batch", 100, "cases per oracle run")
	workers := fs.Int("workers", 4, "oracles run at once, each in a root of its own under the working folder")
	variance := fs.Bool("variance", true, "run every differing case through eKuiper twice: outputs that differ are eKuiper's variance")
	unexplained := fs.Int("list", 50, "list at most this many unexplained differences after the report (-1: all)")
	work := fs.String("work", "", "working folder (default: a new temporary folder)")
	keep := fs.String("keep", "", "write every case that differs, with eKuiper's outputs, into this folder")
	shrink := fs.Bool("shrink", true, "shrink unexplained differences of generated cases (fewer records, fewer fields) before keeping them")
	verbose := fs.Bool("v", false, "print every difference")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *workers < 1 {
		fmt.Fprintln(stderr, "kuiperdiff: -workers must be at least 1")
		return 2
	}
	if *batch < 1 {
		fmt.Fprintln(stderr, "kuiperdiff: -batch must be at least 1")
		return 2
	}
	if *recorded != "" {
		d := &differ{funcs: function.Builtins(), keep: *keep, verbose: *verbose, out: stdout}
		err := d.runRecorded(*recorded)
		d.printReport(*unexplained)
		if err != nil {
			fmt.Fprintf(stderr, "kuiperdiff: %v\n", err)
			return 1
		}
		return 0
	}
	if *oracle == "" || (*cases == "") == (*n == 0) {
		fmt.Fprintln(stderr, "kuiperdiff: -recorded, or -oracle and exactly one of -cases or -n, are required")
		fs.Usage()
		return 2
	}
	dir := *work
	if dir == "" {
		d, err := os.MkdirTemp("", "kuiperdiff-")
		if err != nil {
			fmt.Fprintf(stderr, "kuiperdiff: %v\n", err)
			return 2
		}
		dir = d
	}
	d := &differ{oracle: &differential.Oracle{Binary: *oracle}, funcs: function.Builtins(), work: dir,
		keep: *keep, shrink: *shrink, variance: *variance, verbose: *verbose, out: stdout}
	var err error
	if *cases != "" {
		err = d.runFolder(ctx, *cases)
	} else {
		err = d.runGenerated(ctx, *seed, *n, *batch, *workers)
	}
	d.printReport(*unexplained)
	if err != nil {
		fmt.Fprintf(stderr, "kuiperdiff: %v\n", err)
		return 1
	}
	return 0
}

type differ struct {
	oracle   *differential.Oracle
	funcs    *function.Registry
	work     string
	keep     string
	shrink   bool
	variance bool
	verbose  bool
	out      io.Writer
	report   differential.Report
	batchNo  int
}

// runFolder compares the cases of one folder (recursively).
func (d *differ) runFolder(ctx context.Context, folder string) error {
	paths, err := conformance.Discover(folder)
	if err != nil {
		return err
	}
	in := filepath.Join(d.work, "in")
	if err := os.RemoveAll(in); err != nil {
		return err
	}
	if err := os.MkdirAll(in, 0o755); err != nil {
		return err
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		c, err := conformance.Load(p)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(in, c.Suite+"."+c.Name+".json"), data, 0o644); err != nil {
			return err
		}
	}
	outs, err := d.runOracle(ctx, in)
	if err != nil {
		return err
	}
	for _, c := range outs {
		o := differential.Check(c, d.funcs)
		if o.IsDifference() {
			o.Class = differential.Classify(o, false, d.funcs)
		}
		d.record(o)
	}
	return nil
}

// runRecorded compares rekuiper with the oracle outputs under folder (a
// work folder of an earlier run, or any folder of oracle outputs). A
// case's second output, rerun-<b>/ beside ekuiper-<b>/, marks eKuiper's
// variance as in the run itself.
func (d *differ) runRecorded(folder string) error {
	paths, err := conformance.Discover(folder)
	if err != nil {
		return err
	}
	for _, p := range paths {
		rel, err := filepath.Rel(folder, p)
		if err != nil {
			return err
		}
		top := strings.SplitN(filepath.ToSlash(rel), "/", 2)[0]
		// Scratch inputs without eKuiper outputs, shrink rounds, reruns.
		if top == "in" || top == "shrink" || top == "oracles" || strings.HasPrefix(top, "rerun-") || strings.HasPrefix(top, "errors-") {
			continue
		}
		c, err := conformance.Load(p)
		if err != nil {
			return err
		}
		o := differential.Check(c, d.funcs)
		if o.IsDifference() {
			varied := false
			if b, ok := strings.CutPrefix(top, "ekuiper-"); ok {
				varied = differential.OutputsDiffer(p, filepath.Join(folder, "rerun-"+b, filepath.Base(p)))
			}
			o.Class = differential.Classify(o, varied, d.funcs)
			if b, ok := strings.CutPrefix(top, "ekuiper-"); ok && o.Class == differential.Unexplained {
				o.Class = differential.ClassifyErrorsSent(o, filepath.Join(folder, "errors-"+b, filepath.Base(p)), d.funcs)
			}
		}
		d.record(o)
	}
	return nil
}

// runGenerated generates n cases from seed, splits them into batches and
// compares them on workers oracles at once.
func (d *differ) runGenerated(ctx context.Context, seed uint64, n, batch, workers int) error {
	g := differential.NewGenerator(seed)
	var batches [][]*conformance.Case
	for done := 0; done < n; done += batch {
		cs := make([]*conformance.Case, min(batch, n-done))
		for i := range cs {
			cs[i] = g.Case()
		}
		batches = append(batches, cs)
	}
	pool := &differential.Pool{Funcs: d.funcs, Work: d.work, Variance: d.variance, Shrink: d.shrink}
	for w := range min(workers, len(batches)) {
		o, err := d.oracle.WorkerOracle(filepath.Join(d.work, "oracles", fmt.Sprint(w+1)))
		if err != nil {
			return err
		}
		pool.Oracles = append(pool.Oracles, o)
	}
	total := 0
	return pool.Run(ctx, batches, func(_ int, outs []differential.Outcome) {
		for _, o := range outs {
			d.record(o)
		}
		total += len(outs)
		fmt.Fprintf(d.out, "%d/%d cases: %d same, %d differ, %d refused by eKuiper only, %d by rekuiper only\n", total, n,
			d.report.Total(differential.Same), d.report.Total(differential.Differs),
			d.report.Total(differential.EKuiperRefused), d.report.Total(differential.RekuiperRefused))
	})
}

// runOracle runs the cases of folder in through eKuiper and loads its
// outputs.
func (d *differ) runOracle(ctx context.Context, in string) ([]*conformance.Case, error) {
	d.batchNo++
	out := filepath.Join(d.work, fmt.Sprintf("ekuiper-%d", d.batchNo))
	// A root of its own, so that a run beside another never shares
	// eKuiper's data folder.
	o, err := d.oracle.WorkerOracle(filepath.Join(d.work, "oracles", "1"))
	if err != nil {
		return nil, err
	}
	if err := o.Run(ctx, in, out); err != nil {
		return nil, err
	}
	paths, err := conformance.Discover(out)
	if err != nil {
		return nil, err
	}
	var cs []*conformance.Case
	for _, p := range paths {
		c, err := conformance.Load(p)
		if err != nil {
			return nil, err
		}
		cs = append(cs, c)
	}
	return cs, nil
}

// printReport prints the report and at most limit unexplained
// differences (all when limit is negative).
func (d *differ) printReport(limit int) {
	fmt.Fprint(d.out, d.report.String())
	un := d.report.Unexplained
	if len(un) == 0 {
		return
	}
	fmt.Fprintf(d.out, "\nunexplained differences (%d):\n", len(un))
	for i, o := range un {
		if limit >= 0 && i >= limit {
			fmt.Fprintf(d.out, "... %d more (-list -1 lists all)\n", len(un)-limit)
			break
		}
		fmt.Fprintf(d.out, "%s %s: %s\n  rule: %s\n  %s\n", o.Kind, o.Case.ID(), o.Case.Path, o.Case.Rule.SQL, indent(o.Detail))
	}
}

func indent(s string) string { return strings.ReplaceAll(s, "\n", "\n  ") }

func (d *differ) record(o differential.Outcome) {
	d.report.Add(o)
	if o.Kind == differential.Same || o.Kind == differential.BothRefused {
		return
	}
	if d.verbose {
		fmt.Fprintf(d.out, "%s [%s] %s: %s\n  rule: %s\n  %s\n", o.Kind, o.Class, o.Case.ID(), o.Case.Path, o.Case.Rule.SQL, indent(o.Detail))
	}
	if d.keep != "" {
		if err := differential.KeepCase(d.keep, o); err != nil {
			fmt.Fprintf(d.out, "keep %s: %v\n", o.Case.ID(), err)
		}
	}
}
