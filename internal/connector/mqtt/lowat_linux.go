package mqtt

import (
	"crypto/tls"
	"io"
	"net"
	"syscall"
	"time"
)

// socket is the TCP socket under a connection, for the paced reader's
// socket options and reads that do not wait.
type socket struct {
	raw syscall.RawConn
}

// socketOf returns the socket of c, or of the TCP connection under a TLS
// one (nil when c has none), and whether c reads that socket directly (not
// through TLS), so that a read may bypass c.
func socketOf(c net.Conn) (s *socket, direct bool) {
	direct = true
	if tc, ok := c.(*tls.Conn); ok {
		c, direct = tc.NetConn(), false
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil, false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil, false
	}
	return &socket{raw: raw}, direct
}

// setLowat sets the socket's receive low-water mark (SO_RCVLOWAT): Linux
// wakes a poller only once that many bytes wait (or the receive buffer
// runs short). Lowering it signals data already waiting at once.
func (s *socket) setLowat(n int) {
	_ = s.raw.Control(func(fd uintptr) {
		_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVLOWAT, n)
	})
}

// tryRead reads what the socket holds without waiting for more. ok is
// false when it holds nothing (the caller then waits in the poller);
// otherwise n and err are the read's (0, io.EOF at the end of the stream).
// A read deadline already past fails it like a read of the connection.
func (s *socket) tryRead(b []byte) (n int, err error, ok bool) {
	var rerr error
	cerr := s.raw.Read(func(fd uintptr) bool {
		for {
			n, rerr = syscall.Read(int(fd), b)
			if rerr != syscall.EINTR {
				return true
			}
		}
	})
	switch {
	case cerr != nil:
		return 0, cerr, true
	case rerr == syscall.EAGAIN:
		return 0, nil, false
	case rerr != nil:
		return 0, &net.OpError{Op: "read", Net: "tcp", Err: rerr}, true
	case n == 0 && len(b) > 0:
		return 0, io.EOF, true
	}
	return n, nil, true
}

// sleepThread sleeps d on the calling goroutine's thread, in a system call:
// the Go scheduler sees a goroutine in a short system call and leaves its
// processor alone, instead of parking it on a timer that the runtime's
// poller must fire and a second thread must be woken for.
func sleepThread(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for {
		var rem syscall.Timespec
		if err := syscall.Nanosleep(&ts, &rem); err != syscall.EINTR {
			return
		}
		ts = rem
	}
}
