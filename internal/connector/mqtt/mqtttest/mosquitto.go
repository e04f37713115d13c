package mqtttest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/connector/connectortest"
	"github.com/rekuiper/rekuiper/internal/procs"
)

// Mosquitto is a mosquitto process with four loopback listeners: Plain,
// TLS (server certificate for 127.0.0.1/localhost), MTLS (client
// certificate required, signed by the test CA) and WrongName (server
// certificate for wrong.example only). Sessions and queued messages
// persist across Restart.
type Mosquitto struct {
	t                           testing.TB
	Certs                       *Certs
	Dir                         string
	conf                        string
	Plain, TLS, MTLS, WrongName int

	bin       string
	packetLog bool

	mu   sync.Mutex
	proc *connectortest.Proc // nil while stopped
	log  *procs.SyncBuffer   // the current or last run's output
}

// Option configures StartMosquitto.
type Option func(*Mosquitto)

// PacketLog makes mosquitto log every packet it receives and sends (log
// type debug), so a test can read in Log where each message went.
func PacketLog() Option { return func(m *Mosquitto) { m.packetLog = true } }

// StartMosquitto starts mosquitto, or skips the test when the binary is
// not installed.
func StartMosquitto(t testing.TB, opts ...Option) *Mosquitto {
	t.Helper()
	bin, err := procs.FindBinary("mosquitto", "/usr/sbin", "/usr/local/sbin")
	if err != nil {
		t.Skip("mosquitto binary not found (apt-get install mosquitto): skipping broker integration test")
	}
	m := &Mosquitto{t: t, Certs: NewCerts(t), Dir: t.TempDir(), bin: bin}
	for _, o := range opts {
		o(m)
	}
	// A free port is free when FreePort returns it, not necessarily when
	// mosquitto binds it: another process may take it in between. Such a
	// start is retried on new ports.
	for attempt := 1; ; attempt++ {
		m.Plain, m.TLS, m.MTLS, m.WrongName = FreePort(t), FreePort(t), FreePort(t), FreePort(t)
		m.writeConf()
		err := m.start()
		if err == nil {
			break
		}
		if attempt == 3 || !strings.Contains(m.log.String(), "Address already in use") {
			t.Fatalf("%v\n%s", err, m.log.String())
		}
	}
	t.Cleanup(m.Stop)
	return m
}

// writeConf writes mosquitto.conf for the current ports.
func (m *Mosquitto) writeConf() {
	m.t.Helper()
	var b strings.Builder
	if os.Geteuid() == 0 {
		b.WriteString("user root\n")
	}
	fmt.Fprintf(&b, "per_listener_settings false\nallow_anonymous true\npersistence true\npersistence_location %s/\n", m.Dir)
	// stderr, not stdout: mosquitto's stdout is block-buffered in a
	// pipe, so Log would show a line only long after it was printed.
	b.WriteString("log_dest stderr\nlog_type error\nlog_type warning\nlog_type notice\nmax_queued_messages 100000\nmax_inflight_messages 100\n")
	if m.packetLog {
		b.WriteString("log_type debug\n")
	}
	fmt.Fprintf(&b, "listener %d 127.0.0.1\n", m.Plain)
	tlsListener := func(port int, p Pair, requireCert bool) {
		fmt.Fprintf(&b, "listener %d 127.0.0.1\ncafile %s\ncertfile %s\nkeyfile %s\n", port, m.Certs.CAFile, p.CertFile, p.KeyFile)
		if requireCert {
			b.WriteString("require_certificate true\n")
		}
	}
	tlsListener(m.TLS, m.Certs.Server, false)
	tlsListener(m.MTLS, m.Certs.Server, true)
	tlsListener(m.WrongName, m.Certs.WrongName, false)
	m.conf = filepath.Join(m.Dir, "mosquitto.conf")
	if err := os.WriteFile(m.conf, []byte(b.String()), 0o600); err != nil {
		m.t.Fatal(err)
	}
}

// URL returns the broker URL of a listener: "plain", "tls", "mtls" or
// "wrongname".
func (m *Mosquitto) URL(listener string) string {
	switch listener {
	case "tls":
		return fmt.Sprintf("ssl://127.0.0.1:%d", m.TLS)
	case "mtls":
		return fmt.Sprintf("ssl://127.0.0.1:%d", m.MTLS)
	case "wrongname":
		return fmt.Sprintf("ssl://127.0.0.1:%d", m.WrongName)
	}
	return fmt.Sprintf("tcp://127.0.0.1:%d", m.Plain)
}

// Start starts the process and waits until every listener accepts.
func (m *Mosquitto) Start() {
	m.t.Helper()
	if err := m.start(); err != nil {
		m.t.Fatalf("%v\n%s", err, m.Log())
	}
}

func (m *Mosquitto) start() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proc != nil {
		return nil
	}
	p, err := connectortest.StartProc("mosquitto", exec.Command(m.bin, "-c", m.conf), 10*time.Second, m.Plain, m.TLS, m.MTLS, m.WrongName)
	m.log = p.Log
	if err != nil {
		return err
	}
	m.proc = p
	return nil
}

// Stop terminates the process gracefully (SIGTERM, so it saves its
// persistence file) and waits for it to exit.
func (m *Mosquitto) Stop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proc == nil {
		return
	}
	m.proc.Stop(10 * time.Second)
	m.proc = nil
}

// Restart stops and starts the broker on the same ports.
func (m *Mosquitto) Restart() {
	m.Stop()
	m.Start()
}

// Log returns what mosquitto printed in its current or last run.
func (m *Mosquitto) Log() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.log == nil {
		return ""
	}
	return m.log.String()
}

// FreePort returns a loopback TCP port that was free a moment ago; it
// fails the test when there is none.
func FreePort(t testing.TB) int {
	t.Helper()
	return connectortest.FreePort(t)
}
