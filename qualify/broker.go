package qualify

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rekuiper/rekuiper/internal/procs"
)

// ErrNoMosquitto is returned by StartBroker when no mosquitto binary is
// installed; tests skip on it.
var ErrNoMosquitto = errors.New("mosquitto binary not found (apt-get install mosquitto)")

// Broker is a mosquitto process on one ephemeral loopback port with
// persistence on in its own folder, so sessions and queued QoS 1/2 messages
// survive Stop and Start. It is independent of package testing so the
// qualify command can run it too.
type Broker struct {
	Dir  string
	Port int

	bin  string
	conf string

	mu  sync.Mutex
	cmd *exec.Cmd
	log *procs.SyncBuffer
	ex  chan struct{}
}

// StartBroker writes a configuration into dir and starts mosquitto.
// Stop it with Stop.
func StartBroker(dir string) (*Broker, error) {
	bin, err := procs.FindBinary("mosquitto", "/usr/sbin", "/usr/local/sbin")
	if err != nil {
		return nil, ErrNoMosquitto
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create broker folder: %w", err)
	}
	port, err := procs.FreePort()
	if err != nil {
		return nil, fmt.Errorf("pick broker port: %w", err)
	}
	var b strings.Builder
	if os.Geteuid() == 0 {
		b.WriteString("user root\n")
	}
	// max_queued_messages is raised above mosquitto's default of 1000 so a
	// long outage of a persistent-session client does not drop at the broker.
	fmt.Fprintf(&b, "allow_anonymous true\npersistence true\npersistence_location %s/\nautosave_interval 1\n", dir)
	b.WriteString("log_dest stdout\nlog_type error\nlog_type warning\nmax_queued_messages 10000000\nmax_inflight_messages 100\n")
	fmt.Fprintf(&b, "listener %d 127.0.0.1\n", port)
	conf := filepath.Join(dir, "mosquitto.conf")
	if err := os.WriteFile(conf, []byte(b.String()), 0o600); err != nil {
		return nil, fmt.Errorf("write broker config: %w", err)
	}
	br := &Broker{Dir: dir, Port: port, bin: bin, conf: conf}
	if err := br.Start(); err != nil {
		return nil, err
	}
	return br, nil
}

// URL is the broker's tcp:// URL.
func (b *Broker) URL() string { return fmt.Sprintf("tcp://127.0.0.1:%d", b.Port) }

// Start starts the process (again) and waits until it accepts connections.
// It is a no-op while the broker runs.
func (b *Broker) Start() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ex != nil {
		return nil
	}
	b.log = &procs.SyncBuffer{}
	cmd := exec.Command(b.bin, "-c", b.conf)
	cmd.Stdout, cmd.Stderr = b.log, b.log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start mosquitto: %w", err)
	}
	ex := make(chan struct{})
	go func() { _ = cmd.Wait(); close(ex) }()
	if err := procs.WaitListening(fmt.Sprintf("127.0.0.1:%d", b.Port), 10*time.Second, ex); err != nil {
		_ = cmd.Process.Kill() // fails harmlessly when it has exited
		<-ex
		return fmt.Errorf("start mosquitto: %w\n%s", err, b.log.String())
	}
	b.cmd, b.ex = cmd, ex
	return nil
}

// Stop terminates the broker with SIGTERM (so it saves its persistence
// file) and waits for it to exit. It is a no-op when stopped.
func (b *Broker) Stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ex == nil {
		return
	}
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.ex:
	case <-time.After(10 * time.Second):
		_ = b.cmd.Process.Kill()
		<-b.ex
	}
	b.ex = nil
}

// Log is what mosquitto printed in its current or last run.
func (b *Broker) Log() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.log == nil {
		return ""
	}
	return b.log.String()
}
