// Package procs holds helpers to run service processes such as brokers and
// daemons on loopback ports, shared by the qualification harness, the
// benchmarks and the test helpers: pick a free port, find a binary, wait
// until the process listens, and collect its output.
package procs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// FreePort returns a loopback TCP port that was free a moment ago. Another
// process may take it before the caller binds it; the helpers accept that
// small race to learn a port before the service starts.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// WaitListening polls addr until it accepts a TCP connection, exited is
// closed (the process is gone) or timeout passes. A nil exited never
// fires. The errors name addr.
func WaitListening(addr string, timeout time.Duration, exited <-chan struct{}) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			_ = c.Close()
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("process exited before %s accepted connections", addr)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not listening after %s: %w", addr, timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// servingBanner precedes the REST URL in the line kuiperd prints once it
// serves ("Serving kuiper (version - v2.0.0), restful api on URL").
const servingBanner = "restful api on "

// StartServing starts cmd, a kuiperd whose standard output is not set,
// and waits until its banner names the REST URL, which it returns. Every
// line of the output is copied to copyTo (nil: dropped), the banner's
// included; after the banner a goroutine goes on copying until the output
// ends, so the daemon never blocks writing. It fails when the process
// cannot start, when its output ends first (it exited) or when timeout
// passes. The caller owns the process: killing and reaping it, also
// after an error, is its business.
func StartServing(cmd *exec.Cmd, copyTo io.Writer, timeout time.Duration) (string, error) {
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("start kuiperd: %w", err)
	}
	return waitServing(stdout, copyTo, timeout)
}

// waitServing is StartServing once the process runs, stdout its output.
func waitServing(stdout io.Reader, copyTo io.Writer, timeout time.Duration) (string, error) {
	if copyTo == nil {
		copyTo = io.Discard
	}
	found := make(chan string, 1)
	go func() {
		sent := false
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			copyTo.Write([]byte(sc.Text() + "\n")) //nolint:errcheck // best effort, like a log
			if _, url, ok := strings.Cut(sc.Text(), servingBanner); ok && !sent {
				found <- strings.TrimSpace(url)
				sent = true
			}
		}
		if !sent {
			close(found)
		}
		io.Copy(copyTo, stdout) //nolint:errcheck // drains what a scan error left
	}()
	select {
	case url, ok := <-found:
		if !ok {
			return "", errors.New("kuiperd exited before its banner named the REST address")
		}
		return url, nil
	case <-time.After(timeout):
		return "", fmt.Errorf("kuiperd did not name its REST address within %s", timeout)
	}
}

// FindBinary returns the path of the executable name, looked up on PATH
// first and then in dirs in order. Distributions install some daemons
// (mosquitto in /usr/sbin) outside an ordinary user's PATH.
func FindBinary(name string, dirs ...string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range dirs {
		// A path with a separator is checked as is: it must be an
		// executable file.
		if p, err := exec.LookPath(filepath.Join(d, name)); err == nil {
			return p, nil
		}
	}
	if len(dirs) == 0 {
		return "", fmt.Errorf("%s not found on PATH", name)
	}
	return "", fmt.Errorf("%s not found on PATH or in %s", name, strings.Join(dirs, ", "))
}

// SyncBuffer collects a child process's output. Unlike bytes.Buffer it is
// safe to use from the goroutines of package exec that copy the output and
// from readers at the same time. The zero value is ready to use.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

var _ io.Writer = (*SyncBuffer)(nil)

// Write appends p to the buffer.
func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
