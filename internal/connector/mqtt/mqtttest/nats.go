package mqtttest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/procs"
)

// NATS is a nats-server process with JetStream and its MQTT listener
// (MQTT 3.1.1, QoS 0 and 1) on loopback ports.
type NATS struct {
	Port, MQTTPort int
	t              testing.TB
	bin, conf      string
	cmd            *exec.Cmd
	log            *procs.SyncBuffer
	ex             chan struct{}
}

// StartNATS starts nats-server with MQTT enabled, or skips the test when
// the binary is not installed.
func StartNATS(t testing.TB) *NATS {
	t.Helper()
	bin, err := exec.LookPath("nats-server")
	if err != nil {
		t.Skip("nats-server binary not found (apt-get install nats-server): skipping NATS MQTT interop test")
	}
	dir := t.TempDir()
	n := &NATS{t: t, bin: bin, Port: FreePort(t), MQTTPort: FreePort(t)}
	conf := fmt.Sprintf("listen: 127.0.0.1:%d\nserver_name: rekuiper_test\njetstream {\n  store_dir: %q\n}\nmqtt {\n  listen: 127.0.0.1:%d\n}\n",
		n.Port, filepath.Join(dir, "js"), n.MQTTPort)
	cf := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(cf, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	n.conf = cf
	t.Cleanup(n.Stop)
	n.Start()
	return n
}

// Start starts the process (again) and waits for the MQTT listener.
func (n *NATS) Start() {
	n.t.Helper()
	n.log, n.ex = &procs.SyncBuffer{}, make(chan struct{})
	n.cmd = exec.Command(n.bin, "-c", n.conf)
	n.cmd.Stdout, n.cmd.Stderr = n.log, n.log
	if err := n.cmd.Start(); err != nil {
		n.t.Fatalf("start nats-server: %v", err)
	}
	ex := n.ex
	go func(c *exec.Cmd) { _ = c.Wait(); close(ex) }(n.cmd)
	if err := procs.WaitListening(fmt.Sprintf("127.0.0.1:%d", n.MQTTPort), 15*time.Second, n.ex); err != nil {
		n.t.Fatalf("nats-server MQTT listener: %v\n%s", err, n.log.String())
	}
}

// Restart stops and starts the server on the same ports and store.
func (n *NATS) Restart() {
	n.Stop()
	n.Start()
}

// URL is the MQTT listener's tcp:// URL.
func (n *NATS) URL() string { return fmt.Sprintf("tcp://127.0.0.1:%d", n.MQTTPort) }

// Stop terminates the server and waits for it.
func (n *NATS) Stop() {
	if n.ex == nil {
		return
	}
	select {
	case <-n.ex:
		return
	default:
	}
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.ex:
	case <-time.After(10 * time.Second):
		_ = n.cmd.Process.Kill()
		<-n.ex
	}
}
