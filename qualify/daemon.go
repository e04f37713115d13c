// Package qualify is rekuiper's process-level qualification harness: it
// runs kuiperd as a child process with its own configuration, data folder
// and ephemeral ports, drives it over REST, kills it with SIGKILL and
// restarts it, and counts every record lost or duplicated.
package qualify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/rekuiper/rekuiper/internal/procs"
)

// Build compiles ./cmd/kuiperd of the module at root into dir and returns
// the binary's path.
func Build(ctx context.Context, root, dir string) (string, error) {
	bin := filepath.Join(dir, "kuiperd")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/kuiperd")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("build kuiperd: %w\n%s", err, out)
	}
	return bin, nil
}

// Daemon is one kuiperd child process and its folders.
type Daemon struct {
	Bin  string
	Dir  string // holds etc/, data/, log/
	Port int
	// Env adds environment variables (KUIPER__..., MQTT_SOURCE__...).
	Env []string

	mu   sync.Mutex
	cmd  *exec.Cmd
	out  *procs.SyncBuffer
	done chan struct{}
}

// NewDaemon prepares a daemon in dir with a copy of etcSrc (may be empty).
func NewDaemon(bin, dir, etcSrc string) (*Daemon, error) {
	port, err := procs.FreePort()
	if err != nil {
		return nil, err
	}
	for _, sub := range []string{"etc", "data", "log"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return nil, err
		}
	}
	if etcSrc != "" {
		if err := os.CopyFS(filepath.Join(dir, "etc"), os.DirFS(etcSrc)); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("copy etc: %w", err)
		}
	}
	return &Daemon{Bin: bin, Dir: dir, Port: port}, nil
}

// URL is the REST base URL.
func (d *Daemon) URL() string { return "http://127.0.0.1:" + strconv.Itoa(d.Port) }

// Start runs the daemon and waits until /ping answers.
func (d *Daemon) Start(ctx context.Context) error {
	d.mu.Lock()
	cmd := exec.Command(d.Bin, "-etc", filepath.Join(d.Dir, "etc"), "-data", filepath.Join(d.Dir, "data"), "-log", filepath.Join(d.Dir, "log"))
	cmd.Env = append(os.Environ(),
		"KUIPER__BASIC__RESTPORT="+strconv.Itoa(d.Port),
		"KUIPER__BASIC__RESTIP=127.0.0.1",
		"KUIPER__SOURCE__HTTPSERVERPORT=0",
		"KUIPER__BASIC__CONSOLELOG=true",
	)
	cmd.Env = append(cmd.Env, d.Env...)
	d.out = &procs.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = d.out, d.out
	if err := cmd.Start(); err != nil {
		d.mu.Unlock()
		return fmt.Errorf("start kuiperd: %w", err)
	}
	d.cmd = cmd
	d.done = make(chan struct{})
	done := d.done
	d.mu.Unlock()
	go func() { cmd.Wait(); close(done) }() //nolint:errcheck // exit status is the caller's business
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			return fmt.Errorf("kuiperd exited at start:\n%s", d.Output())
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		if resp, err := http.Get(d.URL() + "/ping"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("kuiperd did not answer /ping within 30s:\n%s", d.Output())
}

// Kill sends SIGKILL and waits for the process to exit.
func (d *Daemon) Kill() {
	d.signal(syscall.SIGKILL)
}

// Stop sends SIGTERM and waits for a graceful exit.
func (d *Daemon) Stop() {
	d.signal(syscall.SIGTERM)
}

func (d *Daemon) signal(sig os.Signal) {
	d.mu.Lock()
	cmd, done := d.cmd, d.done
	d.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	cmd.Process.Signal(sig) //nolint:errcheck // the process may be gone already
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill() //nolint:errcheck // last resort
		<-done
	}
}

// Output is what the daemon printed so far.
func (d *Daemon) Output() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.out == nil {
		return ""
	}
	return d.out.String()
}

// Do sends a REST request and decodes a JSON answer into out (may be nil).
func (d *Daemon) Do(method, path string, body any, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, d.URL()+path, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode >= 300 {
		return resp.StatusCode, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, data)
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: decode %q: %w", method, path, data, err)
		}
	}
	return resp.StatusCode, nil
}

// RuleStatus returns GET /rules/{id}/status as a map.
func (d *Daemon) RuleStatus(id string) (map[string]any, error) {
	var st map[string]any
	_, err := d.Do(http.MethodGet, "/rules/"+id+"/status", nil, &st)
	return st, err
}

// PID is the process id of the running daemon, 0 when none was started.
func (d *Daemon) PID() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cmd == nil || d.cmd.Process == nil {
		return 0
	}
	return d.cmd.Process.Pid
}
