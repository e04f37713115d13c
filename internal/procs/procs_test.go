package procs

import (
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/testwait"
)

func TestFreePortCanBeListenedOn(t *testing.T) {
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	if port <= 0 || port > 65535 {
		t.Fatalf("port = %d, want 1..65535", port)
	}
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatalf("listen on returned port %d: %v", port, err)
	}
	_ = l.Close()
}

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return "127.0.0.1:" + strconv.Itoa(port)
}

func TestWaitListening(t *testing.T) {
	t.Run("listening", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if err := WaitListening(l.Addr().String(), time.Second, nil); err != nil {
			t.Fatalf("WaitListening on a listening socket: %v", err)
		}
	})

	t.Run("listens later", func(t *testing.T) {
		addr := closedAddr(t)
		errc := make(chan error, 1)
		go func() { errc <- WaitListening(addr, 5*time.Second, nil) }()
		// Pacing, not a wait: the listener opens late on purpose, so that
		// WaitListening's first dials are refused; how late does not matter.
		time.Sleep(150 * time.Millisecond)
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Skipf("port taken meanwhile: %v", err)
		}
		defer l.Close()
		if err := <-errc; err != nil {
			t.Fatalf("WaitListening before the listener opened: %v", err)
		}
	})

	t.Run("timeout", func(t *testing.T) {
		addr := closedAddr(t)
		const timeout = 300 * time.Millisecond
		start := time.Now()
		err := WaitListening(addr, timeout, nil)
		if err == nil {
			t.Fatalf("WaitListening on closed %s returned nil", addr)
		}
		if !strings.Contains(err.Error(), addr) {
			t.Errorf("error %q does not name %s", err, addr)
		}
		if took := time.Since(start); took < timeout {
			t.Errorf("returned after %s, before the %s timeout", took, timeout)
		}
	})

	t.Run("exited", func(t *testing.T) {
		addr := closedAddr(t)
		exited := make(chan struct{})
		close(exited)
		start := time.Now()
		err := WaitListening(addr, 10*time.Second, exited)
		if err == nil {
			t.Fatal("WaitListening after exit returned nil")
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("returned after %s; want promptly once exited is closed", took)
		}
		if !strings.Contains(err.Error(), "exited") || !strings.Contains(err.Error(), addr) {
			t.Errorf("error %q should say the process exited and name %s", err, addr)
		}
	})
}

func writeExecutable(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFindBinary(t *testing.T) {
	const name = "rekuiper-procs-test-binary"

	t.Run("in dirs", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		empty, dir := t.TempDir(), t.TempDir()
		want := writeExecutable(t, dir, name)
		got, err := FindBinary(name, empty, dir)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("FindBinary = %q, want %q", got, want)
		}
	})

	t.Run("PATH first", func(t *testing.T) {
		onPath, dir := t.TempDir(), t.TempDir()
		want := writeExecutable(t, onPath, name)
		writeExecutable(t, dir, name)
		t.Setenv("PATH", onPath)
		got, err := FindBinary(name, dir)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("FindBinary = %q, want the PATH entry %q", got, want)
		}
	})

	t.Run("not executable", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if p, err := FindBinary(name, dir); err == nil {
			t.Fatalf("FindBinary found non-executable %q", p)
		}
	})

	t.Run("absent", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		dir := t.TempDir()
		p, err := FindBinary(name, dir)
		if err == nil {
			t.Fatalf("FindBinary = %q, want an error", p)
		}
		if !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), dir) {
			t.Errorf("error %q should name %s and the folder searched", err, name)
		}
	})
}

func TestSyncBufferConcurrentWriters(t *testing.T) {
	const writers, writes = 8, 200
	var b SyncBuffer
	var wg sync.WaitGroup
	stop := make(chan struct{})
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		for {
			select {
			case <-stop:
				return
			default:
				_ = b.String()
			}
		}
	}()
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < writes; i++ {
				if n, err := b.Write([]byte("ab")); n != 2 || err != nil {
					t.Errorf("Write = %d, %v", n, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-readerDone
	got := b.String()
	if len(got) != 2*writers*writes {
		t.Fatalf("len = %d, want %d", len(got), 2*writers*writes)
	}
	if strings.Count(got, "ab") != writers*writes {
		t.Fatalf("writes interleaved: %d whole \"ab\" in the output", strings.Count(got, "ab"))
	}
}

func TestStartServing(t *testing.T) {
	cmd := exec.Command("sh", "-c", "echo 'Serving kuiper (version - v1), restful api on http://127.0.0.1:1'; sleep 60")
	t.Cleanup(func() {
		cmd.Process.Kill() //nolint:errcheck // may have exited
		cmd.Wait()         //nolint:errcheck // reaped
	})
	if url, err := StartServing(cmd, nil, 10*time.Second); err != nil || url != "http://127.0.0.1:1" {
		t.Fatalf("StartServing = %q, %v; want the banner's URL", url, err)
	}
	if url, err := StartServing(exec.Command(filepath.Join(t.TempDir(), "absent")), nil, time.Second); err == nil {
		t.Fatalf("StartServing of a missing binary = %q, nil; want an error", url)
	}
}

func TestWaitServing(t *testing.T) {
	t.Run("banner", func(t *testing.T) {
		r, w := io.Pipe()
		var copied SyncBuffer
		go func() {
			io.WriteString(w, "starting\nServing kuiper (version - v1), restful api on http://127.0.0.1:1234\nlater\n") //nolint:errcheck // test pipe
			w.Close()
		}()
		url, err := waitServing(r, &copied, 10*time.Second)
		if err != nil || url != "http://127.0.0.1:1234" {
			t.Fatalf("waitServing = %q, %v; want the banner's URL", url, err)
		}
		testwait.Until(t, "the lines after the banner copied", func() bool { return strings.HasSuffix(copied.String(), "later\n") })
		if got := copied.String(); !strings.HasPrefix(got, "starting\nServing kuiper") {
			t.Fatalf("copied %q; want every line", got)
		}
	})

	t.Run("exited", func(t *testing.T) {
		url, err := waitServing(strings.NewReader("fatal: no config\n"), nil, 10*time.Second)
		if err == nil || !strings.Contains(err.Error(), "exited") {
			t.Fatalf("waitServing = %q, %v; want an error saying the process exited", url, err)
		}
	})

	t.Run("timeout", func(t *testing.T) {
		r, w := io.Pipe()
		defer w.Close()
		if url, err := waitServing(r, nil, 50*time.Millisecond); err == nil || !strings.Contains(err.Error(), "50ms") {
			t.Fatalf("waitServing = %q, %v; want an error naming the timeout", url, err)
		}
	})
}
