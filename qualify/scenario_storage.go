package qualify

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// ErrNoTmpfs is returned by RunStorage when a size-capped tmpfs cannot be
// mounted (not Linux, not root, or mount refused); tests skip on it.
var ErrNoTmpfs = errors.New("cannot mount a size-capped tmpfs (needs Linux and root)")

// StorageParams configure the storage-fault scenario.
type StorageParams struct {
	TmpfsSize string        // default "8m"
	Rate      float64       // default 100
	Duration  time.Duration // publishing time (default 8 s; the disk is full for the middle third)
}

func (p StorageParams) withDefaults() StorageParams {
	if p.TmpfsSize == "" {
		p.TmpfsSize = "8m"
	}
	if p.Rate == 0 {
		p.Rate = 100
	}
	if p.Duration < 6*time.Second {
		p.Duration = 8 * time.Second
	}
	return p
}

// StorageRule is what one rule did while the data folder was full.
type StorageRule struct {
	Rule            string         `json:"rule"`
	Qos             int            `json:"qos"`
	StatusWhileFull string         `json:"status_while_full"`
	DeliveredFull   int64          `json:"delivered_while_full"` // new sequence numbers seen while full
	Counts          SeqCounts      `json:"counts"`
	Checkpoints     map[string]any `json:"checkpoint_metrics,omitempty"`
}

// StorageResult is the account of the storage-fault scenario.
type StorageResult struct {
	TmpfsSize       string         `json:"tmpfs_size"`
	FillerBytes     int64          `json:"filler_bytes"`
	FullSeconds     float64        `json:"full_seconds"`
	WritesWhileFull map[string]int `json:"writes_while_full"` // REST write → HTTP status
	ReadsWhileFull  map[string]int `json:"reads_while_full"`  // REST read → HTTP status
	WriteAfterFree  int            `json:"write_after_free"`
	RecoverSeconds  float64        `json:"write_recover_seconds"` // space freed → first successful write
	Integrity       string         `json:"integrity_check"`
	BackupMethod    string         `json:"backup_method"`
	BackupBytes     int64          `json:"backup_bytes"`
	RestoredStreams []string       `json:"restored_streams"`
	RestoredRules   []string       `json:"restored_rules"`
	RestoredRunning int            `json:"restored_rules_running"`
	Rules           []StorageRule  `json:"rules"`
	Seconds         float64        `json:"seconds"`
}

// Violations lists broken promises: catalog writes answer 500 while the
// disk is full and succeed after; reads answer; running rules keep running
// and the qos 0 rule keeps delivering; nothing committed is corrupted; the
// online backup restores the whole catalog; qos >= 1 loses nothing.
func (r StorageResult) Violations() []string {
	var v []string
	for k, code := range r.WritesWhileFull {
		if code != http.StatusInternalServerError {
			v = append(v, fmt.Sprintf("storage: %s answered %d with the disk full, want 500", k, code))
		}
	}
	for k, code := range r.ReadsWhileFull {
		if code != http.StatusOK {
			v = append(v, fmt.Sprintf("storage: %s answered %d with the disk full, want 200", k, code))
		}
	}
	if r.WriteAfterFree < 200 || r.WriteAfterFree > 299 {
		v = append(v, fmt.Sprintf("storage: catalog write after freeing space answered %d", r.WriteAfterFree))
	}
	if r.Integrity != "ok" {
		v = append(v, fmt.Sprintf("storage: integrity_check says %q", r.Integrity))
	}
	for _, rule := range r.Rules {
		if rule.StatusWhileFull != "running" {
			v = append(v, fmt.Sprintf("storage: rule %s was %q with the disk full", rule.Rule, rule.StatusWhileFull))
		}
		if rule.Qos == 0 && rule.DeliveredFull == 0 {
			v = append(v, fmt.Sprintf("storage: qos 0 rule %s delivered nothing while the disk was full", rule.Rule))
		}
		if rule.Qos >= 1 && rule.Counts.Lost > 0 {
			v = append(v, fmt.Sprintf("storage: qos %d rule %s lost %d records (first %v)", rule.Qos, rule.Rule, rule.Counts.Lost, rule.Counts.FirstLost))
		}
	}
	if len(r.RestoredStreams) < 3 || len(r.RestoredRules) < len(r.Rules) || r.RestoredRunning < len(r.Rules) {
		v = append(v, fmt.Sprintf("storage: daemon on the online backup found streams %v, rules %v (%d running)", r.RestoredStreams, r.RestoredRules, r.RestoredRunning))
	}
	return v
}

// mountTmpfs mounts a tmpfs of size on dir and returns its unmount.
func mountTmpfs(dir, size string) (func(), error) {
	if runtime.GOOS != "linux" {
		return nil, ErrNoTmpfs
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%w: mount: %v: %s", ErrNoTmpfs, err, strings.TrimSpace(string(out)))
	}
	return func() { _ = exec.Command("umount", "-l", dir).Run() }, nil
}

// fill writes path until the file system answers ENOSPC and returns the
// bytes written.
func fill(path string) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, fmt.Errorf("create filler: %w", err)
	}
	defer f.Close()
	var n int64
	for _, chunk := range []int{1 << 20, 4096, 512} {
		buf := make([]byte, chunk)
		for {
			w, err := f.Write(buf)
			n += int64(w)
			if errors.Is(err, syscall.ENOSPC) {
				break
			}
			if err != nil {
				return n, fmt.Errorf("fill: %w", err)
			}
		}
	}
	return n, nil
}

// RunStorage puts kuiperd's data folder on a size-capped tmpfs, runs a
// qos 0 and a qos 1 MQTT rule under paced load, fills the file system,
// checks catalog writes (500), reads (200) and the rules, frees the space,
// checks that writes succeed again, takes an online backup of the catalog,
// stops the daemon, runs PRAGMA integrity_check and starts a second daemon
// on a copy made from the backup.
func RunStorage(ctx context.Context, env Env, p StorageParams) (StorageResult, error) {
	p = p.withDefaults()
	start := time.Now()
	res := StorageResult{TmpfsSize: p.TmpfsSize, WritesWhileFull: map[string]int{}, ReadsWhileFull: map[string]int{}}
	dir, br, d, err := env.stage("storage", env.Bin)
	if err != nil {
		return res, err
	}
	defer br.Stop()
	data := filepath.Join(d.Dir, "data")
	unmount, err := mountTmpfs(data, p.TmpfsSize)
	if err != nil {
		return res, err
	}
	defer unmount()
	if err := d.Start(ctx); err != nil {
		return res, err
	}
	defer d.Kill()
	type flow struct {
		spec PipelineSpec
		val  *Validator
		pub  *Publisher
	}
	var flows []*flow
	for _, q := range []int{0, 1} {
		tag := fmt.Sprintf("fault%d", q)
		f := &flow{spec: PipelineSpec{Stream: "s" + tag, Rule: tag, SourceServer: br.URL(), InTopic: "in/" + tag,
			SinkServer: br.URL(), OutTopic: "out/" + tag, RuleQos: q}}
		if f.val, err = createValidated(ctx, d, f.spec, "validator-"+tag, ""); err != nil {
			return res, err
		}
		defer f.val.Close()
		flows = append(flows, f)
	}
	for _, f := range flows {
		f.pub = StartPublisher(ctx, PublisherConfig{Server: br.URL(), ClientID: "publisher-" + f.spec.Rule,
			Topic: f.spec.InTopic, Rate: p.Rate, Duration: p.Duration})
	}
	third := p.Duration / 3
	time.Sleep(third)
	filler := filepath.Join(data, "filler")
	full := time.Now()
	if res.FillerBytes, err = fill(filler); err != nil {
		return res, err
	}
	before := make([]int64, len(flows))
	for i, f := range flows {
		before[i] = f.val.Unique()
	}
	res.WritesWhileFull["create_stream"], _ = d.Do(http.MethodPost, "/streams", map[string]any{
		"sql": `CREATE STREAM whilefull (a BIGINT) WITH (DATASOURCE="x", TYPE="mqtt", FORMAT="json")`}, nil)
	res.WritesWhileFull["create_rule"], _ = d.Do(http.MethodPost, "/rules", map[string]any{
		"id": "whilefull", "sql": "SELECT * FROM sfault0", "actions": []any{map[string]any{"log": map[string]any{}}}}, nil)
	res.WritesWhileFull["put_confkey"], _ = d.Do(http.MethodPut, "/metadata/sources/mqtt/confKeys/whilefull", map[string]any{"qos": 0}, nil)
	res.ReadsWhileFull["list_streams"], _ = d.Do(http.MethodGet, "/streams", nil, nil)
	res.ReadsWhileFull["list_rules"], _ = d.Do(http.MethodGet, "/rules", nil, nil)
	res.ReadsWhileFull["describe_stream"], _ = d.Do(http.MethodGet, "/streams/sfault0", nil, nil)
	res.ReadsWhileFull["rules_status_all"], _ = d.Do(http.MethodGet, "/rules/status/all", nil, nil)
	time.Sleep(time.Until(full.Add(third)))
	for i, f := range flows {
		st, _ := d.RuleStatus(f.spec.Rule)
		status, _ := st["status"].(string)
		res.Rules = append(res.Rules, StorageRule{Rule: f.spec.Rule, Qos: f.spec.RuleQos, StatusWhileFull: status,
			DeliveredFull: f.val.Unique() - before[i], Checkpoints: checkpointMetrics(st)})
	}
	if err := os.Remove(filler); err != nil {
		return res, fmt.Errorf("free space: %w", err)
	}
	freed := time.Now()
	res.FullSeconds = freed.Sub(full).Seconds()
	for time.Since(freed) < 10*time.Second {
		code, err := d.Do(http.MethodPost, "/streams", map[string]any{
			"sql": `CREATE STREAM afterfree (a BIGINT) WITH (DATASOURCE="x", TYPE="mqtt", FORMAT="json")`}, nil)
		res.WriteAfterFree = code
		if err == nil {
			res.RecoverSeconds = time.Since(freed).Seconds()
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for i, f := range flows {
		ps := f.pub.Wait()
		f.val.Drain(ctx, ps.Sent, 10*time.Second, time.Minute, time.Second)
		res.Rules[i].Counts = f.val.Counts(ps.Sent)
	}
	backup := filepath.Join(dir, "catalog-backup.db")
	if res.BackupMethod, err = OnlineBackup(ctx, CatalogFile(data), backup); err != nil {
		return res, err
	}
	if fi, err := os.Stat(backup); err == nil {
		res.BackupBytes = fi.Size()
	}
	d.Stop()
	if res.Integrity, err = IntegrityCheck(ctx, CatalogFile(data)); err != nil {
		return res, err
	}
	if err := checkRestored(ctx, env, backup, filepath.Join(dir, "restored"), &res); err != nil {
		return res, err
	}
	res.Seconds = time.Since(start).Seconds()
	env.logf("storage: writes while full %v, reads %v, after free %d, integrity %q, restored %d streams %d rules",
		res.WritesWhileFull, res.ReadsWhileFull, res.WriteAfterFree, res.Integrity, len(res.RestoredStreams), len(res.RestoredRules))
	return res, nil
}

func checkpointMetrics(st map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range st {
		if strings.HasPrefix(k, "checkpoint_") {
			out[k] = v
		}
	}
	return out
}

// checkRestored starts a daemon whose catalog is a copy of backup and
// lists what it finds.
func checkRestored(ctx context.Context, env Env, backup, dir string, res *StorageResult) error {
	d, err := NewDaemon(env.Bin, dir, "")
	if err != nil {
		return err
	}
	if err := copyFile(backup, CatalogFile(filepath.Join(dir, "data"))); err != nil {
		return fmt.Errorf("restore backup: %w", err)
	}
	if err := d.Start(ctx); err != nil {
		return fmt.Errorf("start on backup: %w", err)
	}
	defer d.Stop()
	res.RestoredStreams, err = listNames(d, "/streams")
	if err != nil {
		return err
	}
	var rules []map[string]any
	if _, err := d.Do(http.MethodGet, "/rules", nil, &rules); err != nil {
		return err
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, r := range rules {
		id, _ := r["id"].(string)
		res.RestoredRules = append(res.RestoredRules, id)
		for time.Now().Before(deadline) {
			if st, err := d.RuleStatus(id); err == nil && st["status"] == "running" {
				res.RestoredRunning++
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}

// listNames decodes a JSON array of names (GET /streams, /tables).
func listNames(d *Daemon, path string) ([]string, error) {
	var names []string
	if _, err := d.Do(http.MethodGet, path, nil, &names); err != nil {
		return nil, err
	}
	return names, nil
}
