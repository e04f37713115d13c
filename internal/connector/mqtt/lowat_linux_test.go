package mqtt

import (
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/testwait"
)

// onSocket runs f on the file descriptor of c's socket.
func onSocket(t *testing.T, c net.Conn, f func(fd int)) {
	t.Helper()
	raw, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	if err := raw.Control(func(fd uintptr) { f(int(fd)) }); err != nil {
		t.Fatal(err)
	}
}

// lowatOfConn reads the socket's receive low-water mark.
func lowatOfConn(t *testing.T, c net.Conn) int {
	t.Helper()
	var v int
	var err error
	onSocket(t, c, func(fd int) { v, err = syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_RCVLOWAT) })
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// finArrived reports whether the end of the stream waits in c's socket:
// a read that peeks without waiting finds it.
func finArrived(t *testing.T, c net.Conn) bool {
	t.Helper()
	var n int
	var err error
	onSocket(t, c, func(fd int) {
		n, _, err = syscall.Recvfrom(fd, make([]byte, 1), syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	})
	return n == 0 && err == nil
}

// TestPacedReaderBusyKeepsMarkRaised: a paced reader that finds data after
// each pace reads it without waiting, below the raised low-water mark, and
// leaves the mark raised (no system call to lower and raise it per read);
// the first read that finds nothing lowers it and waits for the next byte.
func TestPacedReaderBusyKeepsMarkRaised(t *testing.T) {
	c, s := tcpPair(t)
	p := newPacedReader(c, 2*time.Millisecond)
	if p.sock == nil || !p.raw {
		t.Fatalf("plain TCP connection: socket %v, direct reads %v", p.sock != nil, p.raw)
	}
	if _, err := s.Write([]byte("abcde")); err != nil {
		t.Fatal(err)
	}
	one := make([]byte, 1)
	for i, want := range []byte("abcde") {
		// The first read has nothing to wait for; the others sleep their
		// pace with the mark raised, then find the next byte waiting.
		if n, err := p.Read(one); n != 1 || err != nil || one[0] != want {
			t.Fatalf("read %d: %d %q %v, want %q", i, n, one[:n], err, want)
		}
		if i > 0 && lowatOfConn(t, c) != sleepLowat {
			t.Fatalf("read %d found data, yet the mark is %d, not %d", i, lowatOfConn(t, c), sleepLowat)
		}
	}
	got := make(chan error, 1)
	go func() {
		n, err := p.Read(one)
		if err == nil && (n != 1 || one[0] != 'f') {
			err = errors.New("read " + string(one[:n]) + ", want f")
		}
		got <- err
	}()
	// 'f' goes out once the reader slept its pace and found nothing: it
	// has lowered the mark to a byte and waits (or is about to wait) in
	// the poller, which 'f' wakes.
	testwait.Until(t, "the reader to lower the mark", func() bool { return lowatOfConn(t, c) == 1 })
	if _, err := s.Write([]byte("f")); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	s.Close()
	for {
		if _, err := p.Read(one); err != nil {
			if err != io.EOF {
				t.Fatalf("after the peer closed: %v, want io.EOF", err)
			}
			break
		}
	}
}

// TestPacedReaderEOFWithoutWaiting: the end of the stream found by a read
// that does not wait is io.EOF, as from the connection.
func TestPacedReaderEOFWithoutWaiting(t *testing.T) {
	c, s := tcpPair(t)
	p := newPacedReader(c, 20*time.Millisecond)
	if _, err := s.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	one := make([]byte, 1)
	if n, err := p.Read(one); n != 1 || err != nil {
		t.Fatalf("first read: %d %v", n, err)
	}
	s.Close()
	// The FIN is there before the pace ends; the read after the pace finds
	// it without waiting, with the mark raised. (The pace starts again
	// here: waiting for the FIN may have taken longer than a pace.)
	testwait.Until(t, "the peer's FIN", func() bool { return finArrived(t, c) })
	p.last = time.Now()
	n, err := p.Read(one)
	if n != 0 || err != io.EOF {
		t.Fatalf("read after close: %d %v, want 0 io.EOF", n, err)
	}
}

// TestPacedReaderClosedWhileSleeping: closing the connection while its
// reader sleeps ends the next read with net.ErrClosed, as a read of the
// closed connection.
func TestPacedReaderClosedWhileSleeping(t *testing.T) {
	c, s := tcpPair(t)
	p := newPacedReader(c, 50*time.Millisecond)
	if _, err := s.Write([]byte("xy")); err != nil {
		t.Fatal(err)
	}
	one := make([]byte, 1)
	if _, err := p.Read(one); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := p.Read(one)
		done <- err
	}()
	c.Close()
	if err := <-done; err == nil {
		// The read may have taken 'y' before the close: the one after
		// must fail.
		if _, err = p.Read(one); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("read of the closed connection: %v, want net.ErrClosed", err)
		}
	} else if !errors.Is(err, net.ErrClosed) {
		t.Fatalf("read of the closed connection: %v, want net.ErrClosed", err)
	}
}

// TestThreadSleepHoldsAtMostHalf: readers sleep on their thread (keeping
// their processor) only while fewer than half of the processors are held
// so, and never with a single processor. (Its own slots: the process's
// are shared with every paced reader of other tests.)
func TestThreadSleepHoldsAtMostHalf(t *testing.T) {
	var slots sleepSlots
	if slots.sleep(time.Microsecond, 1) {
		t.Fatal("slept on its thread with one processor")
	}
	release := make(chan bool)
	go func() { release <- slots.sleep(300*time.Millisecond, 2) }()
	testwait.Until(t, "the first reader to take a slot", func() bool { return slots.n.Load() != 0 })
	// The other sleeper holds one of two processors (or has just let go:
	// then this one may take the place).
	if slots.sleep(time.Microsecond, 2) && slots.n.Load() != 0 {
		t.Fatal("a second reader slept on its thread with two processors")
	}
	if slots.sleep(time.Microsecond, 4) != true {
		t.Fatal("a second reader did not sleep on its thread with four processors")
	}
	if !<-release {
		t.Fatal("the first reader did not sleep on its thread")
	}
	if slots.n.Load() != 0 {
		t.Fatalf("%d sleepers counted after all woke", slots.n.Load())
	}
}
