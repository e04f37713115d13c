package qualify

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// UpgradeParams configure the upgrade-and-rollback scenario.
type UpgradeParams struct {
	OldBin, NewBin string        // the two builds (REKUIPER_OLD_BIN, REKUIPER_NEW_BIN)
	Rate           float64       // default 100
	Phase          time.Duration // running time on each binary (default 3 s)
}

// UpgradeStep is one daemon start of the scenario.
type UpgradeStep struct {
	Name         string   `json:"name"` // "old", "new", "rollback"
	Bin          string   `json:"bin"`
	StartSeconds float64  `json:"start_seconds"` // process start → /ping
	ReadySeconds float64  `json:"ready_seconds"` // process start → every rule running and connected
	Streams      []string `json:"streams"`
	Rules        []string `json:"rules"`
	Running      int      `json:"rules_running"`
}

// UpgradeResult is the account of the scenario.
type UpgradeResult struct {
	OldBin       string        `json:"old_bin"`
	NewBin       string        `json:"new_bin"`
	SameBuild    bool          `json:"same_build"` // both builds of one tree (no second build given)
	Steps        []UpgradeStep `json:"steps"`
	BackupMethod string        `json:"backup_method"`
	Counts       []SeqCounts   `json:"counts"` // per rule qos, index = qos
	Seconds      float64       `json:"seconds"`
}

// Violations: a stream or rule missing or not running after the upgrade or
// the rollback, or a record lost by the qos 1 rule.
func (r UpgradeResult) Violations() []string {
	var v []string
	for _, s := range r.Steps {
		if !slices.Contains(s.Streams, "up0") || !slices.Contains(s.Streams, "up1") || len(s.Rules) < 2 || s.Running < 2 {
			v = append(v, fmt.Sprintf("upgrade %s: streams %v rules %v, %d running", s.Name, s.Streams, s.Rules, s.Running))
		}
	}
	if len(r.Counts) > 1 && r.Counts[1].Lost > 0 {
		v = append(v, fmt.Sprintf("upgrade: qos 1 rule lost %d of %d records (first %v)", r.Counts[1].Lost, r.Counts[1].Sent, r.Counts[1].FirstLost))
	}
	for i, c := range r.Counts {
		if c.Unexpected > 0 || c.Unreadable > 0 {
			v = append(v, fmt.Sprintf("upgrade: qos %d rule: %d unexpected and %d unreadable outputs", i, c.Unexpected, c.Unreadable))
		}
	}
	return v
}

// RunUpgrade populates a catalog on the old binary (two MQTT streams, a
// qos 0 and a qos 1 rule, running under paced load), takes an online
// catalog backup, stops the daemon (SIGTERM), copies data/ and etc/ as the
// pre-upgrade backup, starts the new binary on the same folders and checks
// the catalog and the rules, then rolls back: stops it, restores the
// backup and starts the old binary again. The load runs across all three
// phases; the validators check the output for gaps at the end.
func RunUpgrade(ctx context.Context, env Env, p UpgradeParams) (UpgradeResult, error) {
	if p.Rate == 0 {
		p.Rate = 100
	}
	if p.Phase == 0 {
		p.Phase = 3 * time.Second
	}
	start := time.Now()
	res := UpgradeResult{OldBin: p.OldBin, NewBin: p.NewBin}
	dir, br, d, err := env.stage("upgrade", p.OldBin)
	if err != nil {
		return res, err
	}
	defer br.Stop()
	home := d.Dir
	t0 := time.Now()
	if err := d.Start(ctx); err != nil {
		return res, err
	}
	oldStart := time.Since(t0).Seconds()
	var specs []PipelineSpec
	var vals []*Validator
	for _, q := range []int{0, 1} {
		tag := fmt.Sprintf("up%d", q)
		spec := PipelineSpec{Stream: tag, Rule: "rule" + tag, SourceServer: br.URL(), InTopic: "in/" + tag,
			SinkServer: br.URL(), OutTopic: "out/" + tag, RuleQos: q}
		val, err := createValidated(ctx, d, spec, "validator-"+tag, "")
		if err != nil {
			d.Kill()
			return res, err
		}
		defer val.Close()
		specs, vals = append(specs, spec), append(vals, val)
	}
	var pubs []*Publisher
	for _, s := range specs {
		pubs = append(pubs, StartPublisher(ctx, PublisherConfig{Server: br.URL(), ClientID: "publisher-" + s.Rule,
			Topic: s.InTopic, Rate: p.Rate, Duration: 3*p.Phase + 2*time.Second}))
	}
	step, err := inspect(ctx, d, "old", oldStart, time.Now(), specs)
	res.Steps = append(res.Steps, step)
	if err != nil {
		d.Kill()
		return res, err
	}
	time.Sleep(p.Phase)
	backup := filepath.Join(dir, "backup")
	if err := os.MkdirAll(backup, 0o755); err != nil {
		d.Kill()
		return res, err
	}
	if res.BackupMethod, err = OnlineBackup(ctx, CatalogFile(filepath.Join(home, "data")), filepath.Join(backup, "sqliteKV.online.db")); err != nil {
		d.Kill()
		return res, err
	}
	d.Stop()
	for _, sub := range []string{"data", "etc"} {
		if err := CopyTree(filepath.Join(home, sub), filepath.Join(backup, sub)); err != nil {
			return res, fmt.Errorf("back up %s: %w", sub, err)
		}
	}
	for _, phase := range []struct {
		name, bin string
		restore   bool
	}{{"new", p.NewBin, false}, {"rollback", p.OldBin, true}} {
		if phase.restore {
			if err := os.RemoveAll(filepath.Join(home, "data")); err != nil {
				return res, fmt.Errorf("roll back data: %w", err)
			}
			if err := CopyTree(filepath.Join(backup, "data"), filepath.Join(home, "data")); err != nil {
				return res, fmt.Errorf("roll back data: %w", err)
			}
		}
		nd, err := NewDaemon(phase.bin, home, "")
		if err != nil {
			return res, err
		}
		t0 := time.Now()
		if err := nd.Start(ctx); err != nil {
			return res, fmt.Errorf("start %s binary: %w", phase.name, err)
		}
		step, err := inspect(ctx, nd, phase.name, time.Since(t0).Seconds(), t0, specs)
		step.Bin = phase.bin
		res.Steps = append(res.Steps, step)
		if err != nil {
			nd.Kill()
			return res, err
		}
		time.Sleep(p.Phase)
		if phase.restore {
			for i, pub := range pubs {
				ps := pub.Wait()
				vals[i].Drain(ctx, ps.Sent, 10*time.Second, time.Minute, time.Second)
				res.Counts = append(res.Counts, vals[i].Counts(ps.Sent))
			}
		}
		nd.Stop()
	}
	res.Steps[0].Bin = p.OldBin
	res.Seconds = time.Since(start).Seconds()
	env.logf("upgrade: steps %d, qos0 lost %d, qos1 lost %d duplicated %d",
		len(res.Steps), res.Counts[0].Lost, res.Counts[1].Lost, res.Counts[1].Duplicated)
	return res, nil
}

// inspect lists the catalog of a started daemon and waits until every rule
// of specs runs with its source connected.
func inspect(ctx context.Context, d *Daemon, name string, startSecs float64, t0 time.Time, specs []PipelineSpec) (UpgradeStep, error) {
	s := UpgradeStep{Name: name, StartSeconds: startSecs}
	var err error
	if s.Streams, err = listNames(d, "/streams"); err != nil {
		return s, err
	}
	var rules []map[string]any
	if _, err := d.Do(http.MethodGet, "/rules", nil, &rules); err != nil {
		return s, err
	}
	for _, r := range rules {
		id, _ := r["id"].(string)
		s.Rules = append(s.Rules, id)
	}
	var all map[string]any
	if _, err := d.Do(http.MethodGet, "/rules/status/all", nil, &all); err != nil {
		return s, fmt.Errorf("health check /rules/status/all: %w", err)
	}
	for _, spec := range specs {
		if err := WaitRuleConnected(ctx, d, spec.Rule, spec.Stream, 30*time.Second); err != nil {
			return s, err
		}
		s.Running++
	}
	s.ReadySeconds = time.Since(t0).Seconds()
	return s, nil
}
