// Command qualify runs rekuiper's reliability qualification (package
// qualify) against a kuiperd it builds from this checkout or is given,
// writes the JSON report and prints a one-screen summary. It exits 1 when
// a scenario failed to run or a promise was broken.
//
//	go run ./cmd/qualify -mode short -duration 10s -rate 100 -report target/qualification_results.json
//	go run ./cmd/qualify -mode soak -duration 24h -rate 100 -report /var/log/rekuiper_soak_24h.json
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/rekuiper/rekuiper/qualify"
)

func main() { os.Exit(run()) }

// run returns the exit code: 0 pass, 1 a broken promise or a scenario
// that failed, 2 a run that could not start.
func run() int {
	fs := flag.NewFlagSet("qualify", flag.ExitOnError)
	mode := fs.String("mode", "short", "short (every scenario) or soak (the soak only)")
	duration := fs.Duration("duration", 10*time.Second, "per scenario in short mode; the soak's length in soak mode")
	rate := fs.Float64("rate", 100, "records per second")
	report := fs.String("report", "target/qualification_results.json", "JSON report path")
	bin := fs.String("bin", "", "kuiperd to qualify (default: build ./cmd/kuiperd)")
	work := fs.String("work", "", "scratch folder (default: a new temporary folder, removed unless -keep)")
	keep := fs.Bool("keep", false, "keep the scratch folder (daemon logs, data)")
	kills := fs.Int("kills", 10, "SIGKILLs per qos level in the crash and cluster scenarios")
	partitions := fs.Int("partitions", 6, "partitions of the cluster scenario's input topic (1: the rule runs whole, on one node)")
	outage := fs.Duration("outage", 5*time.Second, "broker outage length")
	interval := fs.Duration("interval", 0, "soak sampling period (default 1m in soak mode, duration/10 in short mode)")
	only := fs.String("scenarios", "", "short mode: comma-separated subset of crash,outage,storage,soak,upgrade,cluster (default all)")
	fs.Parse(os.Args[1:]) //nolint:errcheck // ExitOnError

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root, err := moduleRoot()
	if err != nil {
		fmt.Fprintf(os.Stderr, "qualify: %v\n", err)
		return 2
	}
	dir := *work
	if dir == "" {
		if dir, err = os.MkdirTemp("", "rekuiper-qualify-"); err != nil {
			fmt.Fprintf(os.Stderr, "qualify: %v\n", err)
			return 2
		}
		if !*keep {
			defer os.RemoveAll(dir)
		}
	}
	if *mode == "soak" && *interval == 0 {
		*interval = time.Minute
	}
	start := time.Now()
	cfg := qualify.Config{Mode: *mode, Duration: *duration, Rate: *rate, Root: root, WorkDir: dir, Bin: *bin,
		OldBin: os.Getenv("REKUIPER_OLD_BIN"), NewBin: os.Getenv("REKUIPER_NEW_BIN"),
		Kills: *kills, Partitions: *partitions, Outage: *outage, Interval: *interval, Scenarios: splitList(*only),
		Logf: func(format string, args ...any) {
			fmt.Fprintf(os.Stderr, "[%6.1fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
		}}
	rep, err := qualify.Run(ctx, cfg)
	if rep != nil {
		if werr := rep.WriteJSON(*report); werr != nil {
			fmt.Fprintf(os.Stderr, "qualify: %v\n", werr)
		}
		rep.Summary(os.Stdout)
		fmt.Printf("report: %s\n", *report)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "qualify: %v\n", err)
		return 2
	}
	if !rep.Pass {
		return 1
	}
	return 0
}

// moduleRoot is the folder of the main module's go.mod.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("not inside the rekuiper module")
	}
	return filepath.Dir(mod), nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
