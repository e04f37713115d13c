package mqtttest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/procs"
)

// RabbitMQ is a private, throwaway RabbitMQ node with the rabbitmq_mqtt
// plugin, started for one test. It owns every process it starts: its own
// epmd on a loopback port (so a system node and its epmd on 4369 are never
// touched) and the node itself, each in its own process group. All ports
// (MQTT, AMQP, Erlang distribution, epmd) are ephemeral loopback ports;
// data, logs, config and the Erlang cookie live in the test's TempDir.
// Queues of persistent MQTT sessions survive Restart.
type RabbitMQ struct {
	MQTTPort, AMQPPort, DistPort, EPMDPort int

	t        testing.TB
	dir      string
	server   string
	epmdBin  string
	env      []string
	nodeName string

	mu      sync.Mutex
	node    *exec.Cmd
	nodeEx  chan struct{}
	log     *procs.SyncBuffer
	epmd    *exec.Cmd
	epmdEx  chan struct{}
	version string
}

// rabbitStartTimeout bounds one node boot: a fresh node takes 10-15 s on
// an idle 2-core machine and a restart about 5 s; a loaded CI machine can
// take several times that.
const rabbitStartTimeout = 90 * time.Second

// StartRabbitMQ starts a private RabbitMQ node with MQTT enabled, or skips
// the test when rabbitmq-server or epmd is not installed. Cleanup stops the
// node and its epmd.
func StartRabbitMQ(t testing.TB) *RabbitMQ {
	t.Helper()
	server := findRabbitMQServer()
	if server == "" {
		t.Skip("rabbitmq-server not found (apt-get install rabbitmq-server): skipping RabbitMQ MQTT interop test")
	}
	epmdBin, err := exec.LookPath("epmd")
	if err != nil {
		t.Skip("epmd (Erlang) not found next to rabbitmq-server: skipping RabbitMQ MQTT interop test")
	}
	r := &RabbitMQ{t: t, dir: t.TempDir(), server: server, epmdBin: epmdBin}
	r.MQTTPort, r.AMQPPort, r.DistPort, r.EPMDPort = FreePort(t), FreePort(t), FreePort(t), FreePort(t)
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	r.nodeName = "rekuiper-" + hex.EncodeToString(suffix) + "@localhost"
	if err := r.writeFiles(); err != nil {
		t.Fatalf("rabbitmq: %v", err)
	}
	r.env = r.environ()
	t.Cleanup(r.stopAll)
	r.startEPMD()
	r.Start()
	return r
}

// findRabbitMQServer prefers the script that runs the node in the
// foreground as the calling user. Debian's /usr/sbin/rabbitmq-server is a
// wrapper that switches to the rabbitmq user and redirects the log.
func findRabbitMQServer() string {
	for _, p := range []string{"/usr/lib/rabbitmq/bin/rabbitmq-server", "/usr/local/lib/rabbitmq/bin/rabbitmq-server"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	p, err := exec.LookPath("rabbitmq-server")
	if err != nil {
		return ""
	}
	return p
}

func (r *RabbitMQ) writeFiles() error {
	conf := fmt.Sprintf(`listeners.tcp.local = 127.0.0.1:%d
mqtt.listeners.tcp.local = 127.0.0.1:%d
mqtt.allow_anonymous = true
loopback_users = none
log.console = true
log.console.level = info
log.file = false
`, r.AMQPPort, r.MQTTPort)
	files := map[string]string{
		"rabbitmq.conf":     conf,
		"enabled_plugins":   "[rabbitmq_mqtt].\n",
		"rabbitmq-env.conf": "",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(r.dir, name), []byte(body), 0o600); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	for _, d := range []string{"mnesia", "log", "conf.d"} {
		if err := os.MkdirAll(filepath.Join(r.dir, d), 0o700); err != nil {
			return fmt.Errorf("create %s: %w", d, err)
		}
	}
	return nil
}

// environ is the node's environment: the caller's, minus anything that
// would point the node at the system installation's files or Erlang flags.
func (r *RabbitMQ) environ() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "RABBITMQ_") || strings.HasPrefix(k, "ERL_") || k == "HOME" || k == "NOTIFY_SOCKET" {
			continue
		}
		env = append(env, kv)
	}
	d := r.dir
	return append(env,
		"HOME="+d, // the Erlang cookie is created here
		"RABBITMQ_NODENAME="+r.nodeName,
		"RABBITMQ_NODE_IP_ADDRESS=127.0.0.1",
		fmt.Sprintf("RABBITMQ_NODE_PORT=%d", r.AMQPPort),
		fmt.Sprintf("RABBITMQ_DIST_PORT=%d", r.DistPort),
		fmt.Sprintf("ERL_EPMD_PORT=%d", r.EPMDPort),
		"ERL_EPMD_ADDRESS=127.0.0.1",
		"RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS=-kernel inet_dist_use_interface {127,0,0,1}",
		"RABBITMQ_CONF_ENV_FILE="+filepath.Join(d, "rabbitmq-env.conf"),
		"RABBITMQ_CONFIG_FILE="+filepath.Join(d, "rabbitmq.conf"),
		"RABBITMQ_CONFIG_FILES="+filepath.Join(d, "conf.d"),
		"RABBITMQ_ADVANCED_CONFIG_FILE="+filepath.Join(d, "advanced.config"),
		"RABBITMQ_ENABLED_PLUGINS_FILE="+filepath.Join(d, "enabled_plugins"),
		"RABBITMQ_MNESIA_BASE="+filepath.Join(d, "mnesia"),
		"RABBITMQ_LOG_BASE="+filepath.Join(d, "log"),
		"RABBITMQ_LOGS=-",
		"ERL_CRASH_DUMP="+filepath.Join(d, "log", "erl_crash.dump"),
	)
}

// startEPMD runs a private epmd in the foreground on EPMDPort, so the node
// neither registers with nor starts the machine's epmd.
func (r *RabbitMQ) startEPMD() {
	r.t.Helper()
	cmd := exec.Command(r.epmdBin, "-port", fmt.Sprint(r.EPMDPort), "-address", "127.0.0.1")
	cmd.Env, cmd.Dir = r.env, r.dir
	var out procs.SyncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		r.t.Fatalf("start epmd: %v", err)
	}
	ex := make(chan struct{})
	go func() { _ = cmd.Wait(); close(ex) }()
	r.mu.Lock()
	r.epmd, r.epmdEx = cmd, ex
	r.mu.Unlock()
	if err := procs.WaitListening(fmt.Sprintf("127.0.0.1:%d", r.EPMDPort), 10*time.Second, ex); err != nil {
		r.t.Fatalf("private epmd: %v\n%s", err, out.String())
	}
}

// Start starts the node (again) and waits until its MQTT listener accepts
// an MQTT CONNECT. On failure the test fails with the tail of the node log.
func (r *RabbitMQ) Start() {
	r.t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.nodeEx != nil {
		return
	}
	r.log = &procs.SyncBuffer{}
	// With RABBITMQ_ALLOW_INPUT set the script execs the VM instead of
	// running it under a signal-forwarding shell, so the VM is this
	// process's child and Pdeathsig stops it if the test binary dies
	// without cleanup (a go test timeout). -noinput keeps the Erlang shell
	// off stdin. The group reaches the VM's port helpers too.
	cmd := exec.Command(r.server, "-noinput")
	cmd.Env, cmd.Dir = append(r.env, "RABBITMQ_ALLOW_INPUT=true"), r.dir
	cmd.Stdout, cmd.Stderr = r.log, r.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// A grandchild that keeps the output pipe open must not block Wait.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		r.t.Fatalf("start rabbitmq-server: %v", err)
	}
	ex := make(chan struct{})
	go func() { _ = cmd.Wait(); close(ex) }()
	r.node, r.nodeEx = cmd, ex
	if err := waitMQTTConnect(fmt.Sprintf("127.0.0.1:%d", r.MQTTPort), rabbitStartTimeout, ex); err != nil {
		r.stopNodeLocked()
		r.t.Fatalf("rabbitmq node %s: %v\nnode log excerpt:\n%s", r.nodeName, err, logExcerpt(r.log.String()))
	}
	if m := rabbitVersionRE.FindStringSubmatch(r.log.String()); m != nil {
		r.version = m[1]
	}
}

var rabbitVersionRE = regexp.MustCompile(`Starting RabbitMQ ([0-9][0-9A-Za-z.+-]*)`)

// Version is the RabbitMQ version the node logged at boot ("3.10.8"), or ""
// when the log did not say.
func (r *RabbitMQ) Version() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.version
}

// URL is the MQTT listener's tcp:// URL.
func (r *RabbitMQ) URL() string { return fmt.Sprintf("tcp://127.0.0.1:%d", r.MQTTPort) }

// Restart stops the node and starts it again on the same ports and data
// directory.
func (r *RabbitMQ) Restart() {
	r.t.Helper()
	r.Stop()
	r.Start()
}

// Stop stops the node gracefully (SIGTERM to its process group), killing
// the group if it has not exited after 30 s. The private epmd keeps running
// until cleanup.
func (r *RabbitMQ) Stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopNodeLocked()
}

// Log returns what the node printed in its current or last run.
func (r *RabbitMQ) Log() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.log == nil {
		return ""
	}
	return r.log.String()
}

func (r *RabbitMQ) stopNodeLocked() {
	if r.nodeEx == nil {
		return
	}
	stopGroup(r.node, r.nodeEx, 30*time.Second)
	r.node, r.nodeEx = nil, nil
}

func (r *RabbitMQ) stopAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopNodeLocked()
	if r.epmdEx != nil {
		stopGroup(r.epmd, r.epmdEx, 5*time.Second)
		r.epmd, r.epmdEx = nil, nil
	}
}

// stopGroup sends SIGTERM to the process group led by cmd, waits up to
// grace for the leader to exit, then SIGKILLs the group. The final SIGKILL
// also reaps helpers (erl_child_setup, inet_gethost) that outlive the
// leader.
func stopGroup(cmd *exec.Cmd, exited <-chan struct{}, grace time.Duration) {
	pgid := cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(grace):
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-exited
}

// waitMQTTConnect polls addr until an MQTT 3.1.1 CONNECT is answered with
// CONNACK "accepted", the process exits or timeout passes. A listening
// socket alone is not enough: RabbitMQ opens it before the plugin can
// serve sessions.
func waitMQTTConnect(addr string, timeout time.Duration, exited <-chan struct{}) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		if last = probeMQTT(addr); last == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("node exited before %s accepted an MQTT CONNECT (last probe: %v)", addr, last)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no MQTT CONNACK from %s after %s: %w", addr, timeout, last)
		}
	}
}

// probeMQTT sends a clean-session MQTT 3.1.1 CONNECT and reads the CONNACK.
func probeMQTT(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	const clientID = "rekuiper-probe"
	var body []byte
	body = append(body, 0, 4, 'M', 'Q', 'T', 'T', 4, 0x02, 0, 10) // protocol, level 4, clean session, keepalive 10 s
	body = append(body, 0, byte(len(clientID)))
	body = append(body, clientID...)
	pkt := append([]byte{0x10, byte(len(body))}, body...)
	if _, err := c.Write(pkt); err != nil {
		return fmt.Errorf("send CONNECT: %w", err)
	}
	ack := make([]byte, 4)
	if _, err := io.ReadFull(c, ack); err != nil {
		return fmt.Errorf("read CONNACK: %w", err)
	}
	if ack[0] != 0x20 || ack[1] != 2 {
		return fmt.Errorf("unexpected reply to CONNECT: % x", ack)
	}
	if ack[3] != 0 {
		return fmt.Errorf("CONNECT refused, return code %d", ack[3])
	}
	_, _ = c.Write([]byte{0xE0, 0}) // DISCONNECT
	return nil
}

// logExcerpt picks the part of a node log that explains a failed boot:
// 60 lines from the first error (the cause comes first; crash reports
// follow), or the last 40 lines when nothing was logged as an error.
func logExcerpt(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		if strings.Contains(l, "[error]") {
			return strings.Join(lines[i:min(len(lines), i+60)], "\n")
		}
	}
	return strings.Join(lines[max(0, len(lines)-40):], "\n")
}
