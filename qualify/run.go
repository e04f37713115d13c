package qualify

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Config drives a whole qualification run (cmd/qualify).
type Config struct {
	Mode     string        // "short": every scenario; "soak": the soak only
	Duration time.Duration // per scenario in short mode; the soak's length in soak mode
	Rate     float64       // msg/s
	Root     string        // module checkout, for builds and git describe
	WorkDir  string        // scratch folder (daemons, brokers, builds)
	Bin      string        // kuiperd to qualify; built from Root when empty
	OldBin   string        // upgrade: the old build (REKUIPER_OLD_BIN); a second build of Root when empty
	NewBin   string        // upgrade: the new build (REKUIPER_NEW_BIN); Bin when empty
	Kills    int           // crash scenario kills per qos (default 10)
	// Partitions of the cluster scenario's input topic (default 6: the
	// rule runs as six tasks; 1: whole, on one node).
	Partitions int
	Outage     time.Duration // broker outage length (default 5 s)
	Interval   time.Duration // soak sampling period (default 1 min in soak mode)
	// Scenarios limits a short run to these of crash, outage, storage,
	// soak, upgrade, cluster (empty: all).
	Scenarios []string
	Logf      func(format string, args ...any)
}

// Run builds what it needs, runs the scenarios of cfg.Mode and returns the
// finished report. A scenario that cannot run to its end is recorded in
// Report.Errors and the run goes on with the next one; the error returned
// is only for a run that could not start at all.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	for _, sc := range cfg.Scenarios {
		if !slices.Contains([]string{"crash", "outage", "storage", "soak", "upgrade", "cluster"}, sc) {
			return nil, fmt.Errorf("scenario %q: want crash, outage, storage, soak, upgrade or cluster", sc)
		}
	}
	if cfg.Mode != "short" && cfg.Mode != "soak" {
		return nil, fmt.Errorf("mode %q: want short or soak", cfg.Mode)
	}
	if cfg.Rate <= 0 || cfg.Duration <= 0 {
		return nil, fmt.Errorf("rate %v and duration %s must be positive", cfg.Rate, cfg.Duration)
	}
	rep := &Report{Mode: cfg.Mode, Started: time.Now(), Timings: map[string]float64{}, Errors: map[string]string{},
		Params: map[string]any{"duration_seconds": cfg.Duration.Seconds(), "rate": cfg.Rate, "kills": cfg.Kills, "partitions": cfg.Partitions,
			"outage_seconds": cfg.Outage.Seconds(), "interval_seconds": cfg.Interval.Seconds(), "scenarios": cfg.Scenarios}}
	logf := cfg.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if err := os.MkdirAll(cfg.WorkDir, 0o755); err != nil {
		return nil, fmt.Errorf("create work folder: %w", err)
	}
	timed := func(name string, f func() error) {
		if name != "build" && cfg.Mode == "short" && len(cfg.Scenarios) > 0 && !slices.Contains(cfg.Scenarios, name) {
			return
		}
		t0 := time.Now()
		logf("%s: start", name)
		if err := f(); err != nil {
			rep.Errors[name] = err.Error()
			logf("%s: %v", name, err)
		}
		rep.Timings[name] = time.Since(t0).Seconds()
	}
	if cfg.Bin == "" {
		timed("build", func() error {
			var err error
			cfg.Bin, err = Build(ctx, cfg.Root, filepath.Join(cfg.WorkDir, "bin-new"))
			return err
		})
		if cfg.Bin == "" {
			rep.Finish()
			return rep, errors.New(rep.Errors["build"])
		}
	}
	rep.Hardware, rep.Versions = Describe(ctx, cfg.Root, cfg.WorkDir, cfg.Bin)
	env := func(name string) Env { return Env{Bin: cfg.Bin, Dir: filepath.Join(cfg.WorkDir, name), Logf: logf} }
	if cfg.Mode == "soak" {
		timed("soak", func() error {
			r, err := RunSoak(ctx, env("soak"), SoakParams{Rate: cfg.Rate, Duration: cfg.Duration, Interval: cfg.Interval})
			rep.Soak = &r
			return err
		})
		rep.Finish()
		return rep, nil
	}
	timed("crash", func() error {
		r, err := RunCrash(ctx, env("crash"), CrashParams{Kills: cfg.Kills, Rate: cfg.Rate, Duration: cfg.Duration, Seed: uint64(time.Now().UnixNano())})
		rep.Crash = r
		if err != nil {
			return err
		}
		// What a user gets without asking: rule qos 1, no session settings.
		r, err = RunCrash(ctx, env("crash-default-session"), CrashParams{Qos: []int{1}, Kills: cfg.Kills, Rate: cfg.Rate,
			Duration: cfg.Duration, Seed: uint64(time.Now().UnixNano()), DefaultSession: true})
		rep.Crash = append(rep.Crash, r...)
		return err
	})
	timed("outage", func() error {
		r, err := RunOutage(ctx, env("outage"), OutageParams{Rate: cfg.Rate, Duration: cfg.Duration, Outage: cfg.Outage})
		rep.Outage = r
		return err
	})
	timed("storage", func() error {
		r, err := RunStorage(ctx, env("storage"), StorageParams{Rate: cfg.Rate, Duration: cfg.Duration})
		rep.Storage = &r
		return err
	})
	timed("soak", func() error {
		interval := cfg.Interval
		if interval == 0 {
			interval = max(cfg.Duration/10, time.Second)
		}
		r, err := RunSoak(ctx, env("soak"), SoakParams{Rate: cfg.Rate, Duration: cfg.Duration, Interval: interval})
		rep.Soak = &r
		return err
	})
	timed("upgrade", func() error {
		oldBin, newBin, same := cfg.OldBin, cfg.NewBin, false
		if newBin == "" {
			newBin = cfg.Bin
		}
		if oldBin == "" {
			var err error
			if oldBin, err = Build(ctx, cfg.Root, filepath.Join(cfg.WorkDir, "bin-old")); err != nil {
				return err
			}
			same = true
		}
		r, err := RunUpgrade(ctx, env("upgrade"), UpgradeParams{OldBin: oldBin, NewBin: newBin, Rate: cfg.Rate, Phase: max(cfg.Duration/3, 2*time.Second)})
		r.SameBuild = same
		rep.Upgrade = &r
		return err
	})
	timed("cluster", func() error {
		// Each kill takes about the lease time, two checkpoints and the
		// restarted node taking its share back: feed the input long
		// enough for every kill to fall on it.
		feed := max(cfg.Duration, time.Duration(max(cfg.Kills, 1))*8*time.Second)
		p := ClusterParams{Kills: cfg.Kills, Partitions: cfg.Partitions, Rate: cfg.Rate, Records: int(cfg.Rate * feed.Seconds()), Seed: uint64(time.Now().UnixNano())}
		r, err := RunCluster(ctx, env("cluster"), p)
		rep.Cluster = r
		if err != nil {
			return err
		}
		p.Qos, p.SQLSink = []int{2}, true
		r, err = RunCluster(ctx, env("cluster-sql"), p)
		rep.Cluster = append(rep.Cluster, r...)
		return err
	})
	rep.Finish()
	return rep, nil
}
