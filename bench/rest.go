package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// REST is a small client of kuiperd's REST API with a connection pool
// large enough for concurrent callers.
type REST struct {
	Base string
	hc   *http.Client
}

// NewREST returns a client of the daemon at base (http://host:port).
func NewREST(base string) *REST {
	tr := &http.Transport{MaxIdleConns: 64, MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second}
	return &REST{Base: base, hc: &http.Client{Transport: tr, Timeout: 60 * time.Second}}
}

// Do sends a request with a JSON body (nil for none) and decodes a JSON
// answer into out (nil to ignore it). A status of 300 or more is an error
// carrying the body.
func (r *REST) Do(method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("encode %s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, r.Base+path, rd)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, strings.TrimSpace(string(data)))
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("%s %s: decode %q: %w", method, path, data, err)
		}
	}
	return nil
}

// Goroutines returns the daemon's goroutine count from its profiler
// (basic.pprof mounted on the REST port).
func (r *REST) Goroutines() (int, error) {
	resp, err := r.hc.Get(r.Base + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		return 0, fmt.Errorf("goroutine profile: %w", err)
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil {
		return 0, fmt.Errorf("goroutine profile: %w", err)
	}
	var n int
	if _, err := fmt.Sscanf(line, "goroutine profile: total %d", &n); err != nil {
		return 0, fmt.Errorf("goroutine profile: first line %q: %w", strings.TrimSpace(line), err)
	}
	return n, nil
}

// CreateStream posts a CREATE STREAM statement.
func (r *REST) CreateStream(sql string) error {
	return r.Do(http.MethodPost, "/streams", map[string]string{"sql": sql}, nil)
}

// CreateRule posts a rule definition.
func (r *REST) CreateRule(rule map[string]any) error {
	return r.Do(http.MethodPost, "/rules", rule, nil)
}

// StatusAll returns GET /rules/status/all: rule id → status text.
func (r *REST) StatusAll() (map[string]string, error) {
	var all map[string]struct {
		Status string `json:"status"`
	}
	if err := r.Do(http.MethodGet, "/rules/status/all", nil, &all); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(all))
	for id, s := range all {
		out[id] = s.Status
	}
	return out, nil
}

// WaitRunning polls /rules/status/all every poll until n rules are
// running, and returns the time it took. A rule "stopped by error" fails
// the wait at once.
func (r *REST) WaitRunning(n int, poll, timeout time.Duration) (time.Duration, error) {
	t0 := time.Now()
	for {
		all, err := r.StatusAll()
		if err != nil {
			return 0, err
		}
		running := 0
		for id, s := range all {
			switch s {
			case "running":
				running++
			case "stopped by error":
				var st map[string]any
				r.Do(http.MethodGet, "/v2/rules/"+id+"/status", nil, &st) //nolint:errcheck // best effort detail
				return 0, fmt.Errorf("rule %s stopped by error: %v", id, st["message"])
			}
		}
		if running >= n {
			return time.Since(t0), nil
		}
		if time.Since(t0) > timeout {
			return 0, fmt.Errorf("%d of %d rules running after %s", running, n, timeout)
		}
		time.Sleep(poll)
	}
}

// RuleMetrics returns the numeric metrics of GET /v2/rules/{id}/status.
func (r *REST) RuleMetrics(id string) (map[string]float64, error) {
	var st map[string]any
	if err := r.Do(http.MethodGet, "/v2/rules/"+id+"/status", nil, &st); err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for k, v := range st {
		if f, ok := v.(float64); ok {
			out[k] = f
		}
	}
	return out, nil
}

// HeapStats is the daemon's Go memory as its runtime reports it (the
// runtime.MemStats trailer of /debug/pprof/heap?debug=1), in bytes.
type HeapStats struct {
	HeapAlloc    int64 // live heap objects (after a forced collection: what is reachable)
	HeapInuse    int64 // heap spans in use
	HeapReleased int64 // heap returned to the OS
	StackInuse   int64 // goroutine stacks
	Sys          int64 // everything the runtime got from the OS
	NumGC        int64
}

// Live is the reachable heap plus goroutine stacks: after a forced
// collection it does not depend on when the collector last ran.
func (h HeapStats) Live() int64 { return h.HeapAlloc + h.StackInuse }

// HeapStats reads the daemon's MemStats from its profiler. With gc set
// the profiler runs a full collection first (?gc=1), so HeapAlloc is the
// live heap.
func (r *REST) HeapStats(gc bool) (HeapStats, error) {
	url := r.Base + "/debug/pprof/heap?debug=1"
	if gc {
		url += "&gc=1"
	}
	resp, err := r.hc.Get(url)
	if err != nil {
		return HeapStats{}, fmt.Errorf("heap profile: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return HeapStats{}, fmt.Errorf("heap profile: status %d", resp.StatusCode)
	}
	return parseMemStats(resp.Body)
}

// parseMemStats reads the "# Name = value" lines of a debug=1 heap
// profile.
func parseMemStats(rd io.Reader) (HeapStats, error) {
	var h HeapStats
	fields := map[string]*int64{
		"HeapAlloc": &h.HeapAlloc, "HeapInuse": &h.HeapInuse, "HeapReleased": &h.HeapReleased,
		"Sys": &h.Sys, "NumGC": &h.NumGC,
	}
	seen := 0
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, val, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "# "), " = ")
		if !ok {
			continue
		}
		if name == "Stack" { // "Stack = inuse / sys"
			in, _, _ := strings.Cut(val, " / ")
			if n, err := strconv.ParseInt(in, 10, 64); err == nil {
				h.StackInuse = n
				seen++
			}
			continue
		}
		if dst, ok := fields[name]; ok {
			if n, err := strconv.ParseInt(val, 10, 64); err == nil {
				*dst = n
				seen++
			}
		}
	}
	if err := sc.Err(); err != nil {
		return HeapStats{}, fmt.Errorf("heap profile: %w", err)
	}
	if seen < len(fields)+1 {
		return HeapStats{}, fmt.Errorf("heap profile: runtime.MemStats trailer incomplete (%d of %d fields)", seen, len(fields)+1)
	}
	return h, nil
}

// SaveProfile writes the answer of a profiler path (e.g.
// /debug/pprof/heap?gc=1) to file.
func (r *REST) SaveProfile(path, file string) error {
	resp, err := r.hc.Get(r.Base + path)
	if err != nil {
		return fmt.Errorf("profile %s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("profile %s: status %d", path, resp.StatusCode)
	}
	f, err := os.Create(file)
	if err != nil {
		return fmt.Errorf("profile %s: %w", path, err)
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return fmt.Errorf("profile %s: write %s: %w", path, file, err)
	}
	return f.Close()
}

// StartCPUProfile starts a CPU profile of the daemon over the next
// seconds and returns the function that waits for it and writes it to
// file.
func (r *REST) StartCPUProfile(file string, seconds int) (wait func() error) {
	done := make(chan error, 1)
	go func() {
		done <- r.SaveProfile("/debug/pprof/profile?seconds="+strconv.Itoa(seconds), file)
	}()
	return func() error { return <-done }
}
