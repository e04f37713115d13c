// Package connectortest holds what the connector test kits (mqtttest,
// redistest, pgtest) and connector tests share: a free loopback port, an
// address that refuses connections, and a server binary started on such
// ports and waited for until it listens.
package connectortest

import (
	"fmt"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/procs"
)

// FreePort returns a loopback port that was free a moment ago; it fails
// the test when there is none.
func FreePort(t testing.TB) int {
	t.Helper()
	port, err := procs.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// ClosedAddr returns a loopback host:port nothing listens on (it was free a
// moment ago): a peer that refuses connections.
func ClosedAddr(t testing.TB) string {
	t.Helper()
	return "127.0.0.1:" + strconv.Itoa(FreePort(t))
}

// Proc is a server process started by StartProc.
type Proc struct {
	Cmd *exec.Cmd
	// Log is what the process printed on stdout and stderr.
	Log *procs.SyncBuffer
	// Exited is closed once the process has exited and been waited for.
	Exited <-chan struct{}
}

// StartProc starts cmd with its output in Log and waits until every port
// on 127.0.0.1 accepts connections, for at most limit each. When a port
// does not, or the process exits first, it kills the process and returns
// the error with the Proc, whose Log says what the process printed. name
// names the program in the errors.
func StartProc(name string, cmd *exec.Cmd, limit time.Duration, ports ...int) (*Proc, error) {
	log := &procs.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	p := &Proc{Cmd: cmd, Log: log}
	if err := cmd.Start(); err != nil {
		return p, fmt.Errorf("start %s: %w", name, err)
	}
	ex := make(chan struct{})
	p.Exited = ex
	go func() { _ = cmd.Wait(); close(ex) }()
	for _, port := range ports {
		if err := procs.WaitListening(fmt.Sprintf("127.0.0.1:%d", port), limit, ex); err != nil {
			_ = cmd.Process.Kill()
			<-ex
			return p, fmt.Errorf("%s did not start: %w", name, err)
		}
	}
	return p, nil
}

// Stop ends the process gracefully (SIGTERM) and waits for it to exit,
// killing it when it has not after grace. A process that has already
// exited, or never started, is left as it is.
func (p *Proc) Stop(grace time.Duration) {
	if p.Exited == nil { // it never started
		return
	}
	select {
	case <-p.Exited:
		return
	default:
	}
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.Exited:
	case <-time.After(grace):
		_ = p.Cmd.Process.Kill()
		<-p.Exited
	}
}
