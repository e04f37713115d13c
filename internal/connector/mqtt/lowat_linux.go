package mqtt

import (
	"crypto/tls"
	"net"
	"syscall"
)

// rcvLowat returns a function that sets the socket's receive low-water
// mark (SO_RCVLOWAT) of c, or of the TCP connection under a TLS one; nil
// when c has no socket. Linux wakes a poller only once that many bytes
// wait (or the receive buffer runs short), so a reader that sleeps between
// reads is not woken for every packet the broker sends in the meantime.
func rcvLowat(c net.Conn) func(n int) {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return func(n int) {
		_ = raw.Control(func(fd uintptr) {
			_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVLOWAT, n)
		})
	}
}
