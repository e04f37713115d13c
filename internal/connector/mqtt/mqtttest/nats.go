package mqtttest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/connector/connectortest"
)

// NATS is a nats-server process with JetStream and its MQTT listener
// (MQTT 3.1.1, QoS 0 and 1) on loopback ports.
type NATS struct {
	Port, MQTTPort int
	t              testing.TB
	bin, conf      string
	proc           *connectortest.Proc
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
	p, err := connectortest.StartProc("nats-server", exec.Command(n.bin, "-c", n.conf), 15*time.Second, n.MQTTPort)
	if err != nil {
		n.t.Fatalf("nats-server MQTT listener: %v\n%s", err, p.Log.String())
	}
	n.proc = p
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
	if n.proc != nil {
		n.proc.Stop(10 * time.Second)
	}
}
