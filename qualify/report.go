package qualify

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"
)

// Hardware describes the machine a qualification ran on.
type Hardware struct {
	OS          string  `json:"os"`
	Arch        string  `json:"arch"`
	CPUModel    string  `json:"cpu_model"`
	Cores       int     `json:"cores"`
	MemoryMB    float64 `json:"memory_mb"`
	DataDir     string  `json:"data_dir"`
	DiskFS      string  `json:"disk_filesystem,omitempty"`
	DiskTotalGB float64 `json:"disk_total_gb"`
	DiskFreeGB  float64 `json:"disk_free_gb"`
}

// Versions are the versions of what was qualified and with what.
type Versions struct {
	Go        string `json:"go"`
	Git       string `json:"git_describe"`
	Kuiperd   string `json:"kuiperd"`
	Mosquitto string `json:"mosquitto"`
	SQLite3   string `json:"sqlite3,omitempty"`
}

// Report is target/qualification_results.json.
type Report struct {
	Mode       string             `json:"mode"`
	Params     map[string]any     `json:"params"`
	Started    time.Time          `json:"started"`
	Finished   time.Time          `json:"finished"`
	Hardware   Hardware           `json:"hardware"`
	Versions   Versions           `json:"versions"`
	Timings    map[string]float64 `json:"timings_seconds"`
	Crash      []CrashResult      `json:"crash,omitempty"`
	Outage     []OutageResult     `json:"outage,omitempty"`
	Storage    *StorageResult     `json:"storage,omitempty"`
	Soak       *SoakResult        `json:"soak,omitempty"`
	Upgrade    *UpgradeResult     `json:"upgrade,omitempty"`
	Cluster    []ClusterResult    `json:"cluster,omitempty"`
	Errors     map[string]string  `json:"errors,omitempty"` // scenario → why it could not run to the end
	Violations []string           `json:"violations"`
	Pass       bool               `json:"pass"`
}

// Finish collects the violations of every scenario and sets Pass.
func (r *Report) Finish() {
	r.Finished = time.Now()
	r.Violations = nil
	for _, c := range r.Crash {
		r.Violations = append(r.Violations, c.Violations()...)
	}
	for _, o := range r.Outage {
		r.Violations = append(r.Violations, o.Violations()...)
	}
	if r.Storage != nil {
		r.Violations = append(r.Violations, r.Storage.Violations()...)
	}
	if r.Soak != nil {
		r.Violations = append(r.Violations, r.Soak.Violations()...)
	}
	if r.Upgrade != nil {
		r.Violations = append(r.Violations, r.Upgrade.Violations()...)
	}
	for _, c := range r.Cluster {
		r.Violations = append(r.Violations, c.Violations()...)
	}
	if r.Violations == nil {
		r.Violations = []string{}
	}
	r.Pass = len(r.Violations) == 0 && len(r.Errors) == 0
}

// WriteJSON writes the report, creating the folder.
func (r *Report) WriteJSON(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create report folder: %w", err)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// Summary writes the one-screen human summary.
func (r *Report) Summary(w io.Writer) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	verdict := "PASS"
	if !r.Pass {
		verdict = "FAIL"
	}
	p("rekuiper qualification (%s) %s  %s, %.0fs", r.Mode, verdict, r.Versions.Git, r.Finished.Sub(r.Started).Seconds())
	p("host: %s, %d cores, %.0f MB RAM, data disk %s %.0f GB (%.0f GB free); %s; %s",
		r.Hardware.CPUModel, r.Hardware.Cores, r.Hardware.MemoryMB, r.Hardware.DiskFS, r.Hardware.DiskTotalGB, r.Hardware.DiskFreeGB, r.Versions.Go, r.Versions.Mosquitto)
	if len(r.Crash) > 0 {
		p("crash (kill -9, MQTT source):   qos  session   kills      sent      lost      dup  reorder  restart(mean)")
		for _, c := range r.Crash {
			session := "explicit"
			if c.DefaultSession {
				session = "default"
			}
			p("                                %3d  %-8s  %5d  %8d  %8d  %7d  %7d  %.3fs", c.Qos, session, c.Kills, c.Counts.Sent, c.Counts.Lost, c.Counts.Duplicated, c.Counts.Reordered, c.Restarts.Mean)
		}
	}
	if len(r.Outage) > 0 {
		p("broker outage (sink cache):     variant         outage      sent   lost   dup  reorder  resent  recover")
		for _, o := range r.Outage {
			p("                                %-14s %6.1fs  %8d  %5d  %4d  %7d  %6d  %.1fs", o.Name, o.OutageSeconds, o.Counts.Sent, o.Counts.Lost, o.Counts.Duplicated, o.Counts.Reordered, o.Counts.Resent, o.RecoverSeconds)
		}
	}
	if s := r.Storage; s != nil {
		p("storage full (tmpfs %s):        writes %s, reads %s, after free %d, integrity %s, backup restore %d streams/%d rules",
			s.TmpfsSize, codes(s.WritesWhileFull), codes(s.ReadsWhileFull), s.WriteAfterFree, s.Integrity, len(s.RestoredStreams), len(s.RestoredRules))
		for _, rule := range s.Rules {
			p("                                rule qos %d: %s while full, %d delivered while full, lost %d", rule.Qos, rule.StatusWhileFull, rule.DeliveredFull, rule.Counts.Lost)
		}
	}
	if s := r.Soak; s != nil {
		judged := "not judged: run too short"
		if s.RSSJudged {
			judged = fmt.Sprintf("threshold %.0f MB/h", s.MaxRSSSlope)
		}
		p("soak %.0fs at %.0f msg/s:        sent %d lost %d dup %d; RSS max %.1f MB slope %.2f MB/h (%s); goroutines %+d, fds %+d; CPU %.1f%% (%.0f us/msg); %d samples",
			s.DurationSeconds, s.Rate, s.Counts.Sent, s.Counts.Lost, s.Counts.Duplicated, s.RSSMaxMB, s.RSSSlope, judged, s.GoroutineGrowth, s.FDGrowth, s.CPUPercentMean, s.CPUMicrosPerMsg, len(s.Samples))
	}
	if u := r.Upgrade; u != nil {
		var steps []string
		for _, s := range u.Steps {
			steps = append(steps, fmt.Sprintf("%s %d/%d rules running (ready %.2fs)", s.Name, s.Running, len(s.Rules), s.ReadySeconds))
		}
		line := fmt.Sprintf("upgrade/rollback:               %s", strings.Join(steps, "; "))
		if len(u.Counts) > 1 {
			line += fmt.Sprintf("; qos0 lost %d, qos1 lost %d dup %d", u.Counts[0].Lost, u.Counts[1].Lost, u.Counts[1].Duplicated)
		}
		if u.SameBuild {
			line += " (two builds of one tree)"
		}
		p("%s", line)
	}
	if len(r.Cluster) > 0 {
		p("cluster (kill -9 of a node): qos  sink   nodes  tasks  kills  windows  exact  missing  dup  moved  not-restored  failover(mean/p99/max)")
		for _, c := range r.Cluster {
			p("                              %3d  %-5s  %5d  %5d  %5d  %7d  %5d  %7d  %3d  %5d  %12d  %.2fs/%.2fs/%.2fs (lease %.0fs: p99 %s)", c.Qos, c.Sink, c.Nodes, c.Tasks, c.Kills,
				c.Windows.Expected, c.Windows.Exact, c.Windows.Missing, c.Windows.Duplicates, c.TakeOvers, c.NotRestored, c.Failover.Mean, c.FailoverP99, c.Failover.Max, c.LeaseSeconds,
				c.failoverVerdict())
		}
	}
	for name, err := range r.Errors {
		p("ERROR %s: %s", name, firstLine(err))
	}
	for _, v := range r.Violations {
		p("VIOLATION %s", v)
	}
}

func codes(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, ",")
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// Describe fills Hardware and Versions. root is the module checkout (for
// git describe), dataDir the folder whose disk is reported, bin the kuiperd
// binary.
func Describe(ctx context.Context, root, dataDir, bin string) (Hardware, Versions) {
	h := Hardware{OS: runtime.GOOS, Arch: runtime.GOARCH, Cores: runtime.NumCPU(), DataDir: dataDir}
	h.CPUModel = procField("/proc/cpuinfo", "model name")
	if mem := procField("/proc/meminfo", "MemTotal"); mem != "" {
		var kb float64
		fmt.Sscanf(mem, "%f", &kb) //nolint:errcheck // best effort
		h.MemoryMB = kb / 1024
	}
	if total, free, err := diskOf(dataDir); err == nil {
		h.DiskTotalGB, h.DiskFreeGB = float64(total)/1e9, float64(free)/1e9
	}
	h.DiskFS = mountFS(dataDir)
	v := Versions{Go: runtime.Version()}
	v.Go = strings.TrimPrefix(output(ctx, "", "go", "version"), "go version ")
	v.Git = output(ctx, root, "git", "describe", "--always", "--dirty", "--tags")
	v.Mosquitto = firstLine(output(ctx, "", "mosquitto", "-h"))
	v.SQLite3 = firstLine(output(ctx, "", "sqlite3", "-version"))
	v.Kuiperd = bin
	return h, v
}

func output(ctx context.Context, dir, name string, args ...string) string {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	out, _ := cmd.CombinedOutput() // mosquitto -h exits non-zero
	return strings.TrimSpace(string(out))
}

// procField returns the value of the first "key: value" line of a /proc file.
func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// mountFS is the file system type of the longest mount point holding path.
func mountFS(path string) string {
	b, err := os.ReadFile("/proc/mounts")
	if err != nil {
		return ""
	}
	abs, _ := filepath.Abs(path)
	best, fs := "", ""
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		if (abs == f[1] || strings.HasPrefix(abs, strings.TrimSuffix(f[1], "/")+"/")) && len(f[1]) > len(best) {
			best, fs = f[1], f[2]+" on "+f[0]
		}
	}
	return fs
}
