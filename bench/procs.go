package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/rekuiper/rekuiper/internal/procs"
)

// Process is a child process started by the benchmark. Its output goes to
// a file in its folder so a long run does not grow memory.
type Process struct {
	Name string
	cmd  *exec.Cmd
	done chan struct{}
	log  string
}

// PID is the child's process id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Exited is closed when the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.done }

// Log returns the last 4 KiB of what the process printed.
func (p *Process) Log() string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return ""
	}
	if len(b) > 4096 {
		b = b[len(b)-4096:]
	}
	return string(b)
}

// Stop sends SIGTERM, waits up to timeout, then SIGKILL.
func (p *Process) Stop(timeout time.Duration) {
	if p == nil || p.cmd == nil || p.cmd.Process == nil {
		return
	}
	p.cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // may be gone already
	select {
	case <-p.done:
	case <-time.After(timeout):
		p.cmd.Process.Kill() //nolint:errcheck // last resort
		<-p.done
	}
}

func startProcess(name, dir string, env []string, bin string, args ...string) (*Process, error) {
	logPath := filepath.Join(dir, name+".out")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create %s log: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{Name: name, cmd: cmd, done: make(chan struct{}), log: logPath}
	go func() {
		cmd.Wait() //nolint:errcheck // the exit status is reported through Exited and Log
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// Broker is a mosquitto process with one plain loopback listener.
type Broker struct {
	*Process
	Port int
}

// URL is the broker's tcp:// URL.
func (b *Broker) URL() string { return "tcp://127.0.0.1:" + strconv.Itoa(b.Port) }

// StartMosquitto starts mosquitto in dir with no queue limits (QoS 0
// messages to a slow client are never dropped for a full queue) and $SYS
// statistics every second; inflight is max_inflight_messages (0: no
// limit). It returns when the listener accepts.
func StartMosquitto(dir string, inflight int) (*Broker, error) {
	bin, err := procs.FindBinary("mosquitto", "/usr/sbin", "/usr/local/sbin")
	if err != nil {
		return nil, fmt.Errorf("%w (apt-get install mosquitto)", err)
	}
	port, err := procs.FreePort()
	if err != nil {
		return nil, err
	}
	var conf bytes.Buffer
	if os.Geteuid() == 0 {
		conf.WriteString("user root\n")
	}
	fmt.Fprintf(&conf, "listener %d 127.0.0.1\nallow_anonymous true\npersistence false\nset_tcp_nodelay true\n", port)
	fmt.Fprintf(&conf, "max_queued_messages 0\nmax_queued_bytes 0\nmax_inflight_messages %d\nsys_interval 1\n", inflight)
	conf.WriteString("log_dest stdout\nlog_type error\nlog_type warning\n")
	confPath := filepath.Join(dir, "mosquitto.conf")
	if err := os.WriteFile(confPath, conf.Bytes(), 0o600); err != nil {
		return nil, fmt.Errorf("write mosquitto config: %w", err)
	}
	p, err := startProcess("mosquitto", dir, nil, bin, "-c", confPath)
	if err != nil {
		return nil, err
	}
	if err := procs.WaitListening("127.0.0.1:"+strconv.Itoa(port), 10*time.Second, p.done); err != nil {
		p.Stop(time.Second)
		return nil, fmt.Errorf("mosquitto: %w\n%s", err, p.Log())
	}
	return &Broker{Process: p, Port: port}, nil
}

// Daemon is a kuiperd child process with its own etc/, data/ and log/
// folders under Dir and a REST port on loopback.
type Daemon struct {
	*Process
	Bin  string
	Dir  string
	Port int
	// Env adds environment variables to every start.
	Env []string
	// EKuiper marks eKuiper's kuiperd (NewEKuiperDaemon): it finds its
	// folders through KuiperBaseKey and listens on two more ports.
	EKuiper  bool
	RPCPort  int // eKuiper: the CLI's port (basic.port)
	HTTPPort int // eKuiper: the HTTP push source's server port

	mu sync.Mutex
}

// startDaemon starts kuiperd for a scenario run in dir/kuiperd with the
// run's binary and environment; the caller stops it.
func startDaemon(ctx context.Context, cfg RunConfig, dir string, etc map[string]string) (*Daemon, *REST, error) {
	var d *Daemon
	var err error
	if cfg.EKuiper != nil {
		d, err = NewEKuiperDaemon(*cfg.EKuiper, filepath.Join(dir, "kuiperd"), etc)
	} else {
		d, err = NewDaemon(cfg.Kuiperd, filepath.Join(dir, "kuiperd"), etc)
	}
	if err != nil {
		return nil, nil, err
	}
	d.Env = cfg.Env
	if cfg.Profiles != "" {
		// pprof on the REST port, for the profiles of the run.
		d.Env = append([]string{"KUIPER__BASIC__PPROF=true", "KUIPER__BASIC__PPROFIP=127.0.0.1",
			"KUIPER__BASIC__PPROFPORT=" + strconv.Itoa(d.Port)}, cfg.Env...)
	}
	if _, err := d.Start(ctx); err != nil {
		return nil, nil, err
	}
	return d, NewREST(d.URL()), nil
}

// NewDaemon prepares the folders of a daemon in dir; etcFiles are written
// into dir/etc (name → content).
func NewDaemon(bin, dir string, etcFiles map[string]string) (*Daemon, error) {
	for _, sub := range []string{"etc", "data", "log"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return nil, fmt.Errorf("prepare daemon folder: %w", err)
		}
	}
	for name, content := range etcFiles {
		if err := os.WriteFile(filepath.Join(dir, "etc", name), []byte(content), 0o644); err != nil {
			return nil, fmt.Errorf("write etc/%s: %w", name, err)
		}
	}
	port, err := procs.FreePort()
	if err != nil {
		return nil, err
	}
	return &Daemon{Bin: bin, Dir: dir, Port: port}, nil
}

// command returns the environment added to kuiperd's and its arguments.
func (d *Daemon) command() (env, args []string) {
	if d.EKuiper {
		return append(ekuiperEnv(d), d.Env...), nil
	}
	env = append([]string{
		"KUIPER__BASIC__RESTPORT=" + strconv.Itoa(d.Port),
		"KUIPER__BASIC__RESTIP=127.0.0.1",
		"KUIPER__SOURCE__HTTPSERVERPORT=0",
		"KUIPER__BASIC__CONSOLELOG=false",
		"KUIPER__BASIC__FILELOG=true",
		"KUIPER__BASIC__LOGLEVEL=warn",
	}, d.Env...)
	return env, []string{"-etc", filepath.Join(d.Dir, "etc"), "-data", filepath.Join(d.Dir, "data"), "-log", filepath.Join(d.Dir, "log")}
}

// URL is the REST base URL.
func (d *Daemon) URL() string { return "http://127.0.0.1:" + strconv.Itoa(d.Port) }

// Start runs kuiperd and waits until /ping answers; it returns the time
// from exec to the first successful ping.
func (d *Daemon) Start(ctx context.Context) (time.Duration, error) {
	env, args := d.command()
	t0 := time.Now()
	p, err := startProcess("kuiperd", d.Dir, env, d.Bin, args...)
	if err != nil {
		return 0, err
	}
	d.mu.Lock()
	d.Process = p
	d.mu.Unlock()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); {
		select {
		case <-p.done:
			return 0, fmt.Errorf("kuiperd exited at start:\n%s", p.Log())
		case <-ctx.Done():
			return 0, ctx.Err()
		default:
		}
		if resp, err := http.Get(d.URL() + "/ping"); err == nil {
			io.Copy(io.Discard, resp.Body) //nolint:errcheck // drain only
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(t0), nil
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return 0, fmt.Errorf("kuiperd did not answer /ping within 60s:\n%s", p.Log())
}
