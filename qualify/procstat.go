package qualify

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// ErrNoProc is returned where /proc is not available (not Linux).
var ErrNoProc = errors.New("/proc not available")

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat; it
// is 100 on every Linux architecture Go supports.
const clockTicks = 100

// ProcSample is one reading of a process's resources.
type ProcSample struct {
	At      time.Time `json:"at"`
	Elapsed float64   `json:"elapsed_seconds"`
	RSSMB   float64   `json:"rss_mb"`
	Threads int       `json:"threads"`
	FDs     int       `json:"open_fds"`
	CPUSecs float64   `json:"cpu_seconds"` // utime + stime since start
	// Goroutines is go_goroutines from the daemon's Prometheus endpoint
	// (-1 when it is not exposed).
	Goroutines int     `json:"goroutines"`
	CPUPct     float64 `json:"cpu_percent"` // over the previous interval
	Received   int64   `json:"received"`    // validator count at that moment
}

// ReadProc samples /proc/PID/status (VmRSS, Threads), /proc/PID/fd and
// /proc/PID/stat (utime + stime).
func ReadProc(pid int) (ProcSample, error) {
	s := ProcSample{At: time.Now()}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, fmt.Errorf("%w: %v", ErrNoProc, err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		switch fields[0] {
		case "VmRSS:":
			kb, _ := strconv.ParseFloat(fields[1], 64)
			s.RSSMB = kb / 1024
		case "Threads:":
			s.Threads, _ = strconv.Atoi(fields[1])
		}
	}
	if fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
		s.FDs = len(fds)
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, fmt.Errorf("read stat: %w", err)
	}
	// The command name may hold spaces; fields are counted after its ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return s, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	f := strings.Fields(string(stat[i+1:]))
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return s, fmt.Errorf("parse /proc/%d/stat: %d fields", pid, len(f))
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	s.CPUSecs = (ut + st) / clockTicks
	return s, nil
}

// Slope is the least-squares slope of ys over xs (0 with fewer than two
// distinct xs).
func Slope(xs, ys []float64) float64 {
	n := float64(len(xs))
	if len(xs) < 2 || len(xs) != len(ys) {
		return 0
	}
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
		sxx += xs[i] * xs[i]
		sxy += xs[i] * ys[i]
	}
	den := n*sxx - sx*sx
	if den == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / den
}

// ReadGoroutines reads go_goroutines from a Prometheus text endpoint.
func ReadGoroutines(metricsURL string) (int, error) {
	client := http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(metricsURL)
	if err != nil {
		return -1, fmt.Errorf("get metrics: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return -1, fmt.Errorf("read metrics: %w", err)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "go_goroutines "); ok {
			n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return -1, fmt.Errorf("parse go_goroutines %q: %w", v, err)
			}
			return int(n), nil
		}
	}
	return -1, fmt.Errorf("no go_goroutines at %s (HTTP %d)", metricsURL, resp.StatusCode)
}
