//go:build !linux

package mqtt

import (
	"net"
	"time"
)

// socket is Linux only (see lowat_linux.go): elsewhere a paced reader
// sleeps on a Go timer and reads through the connection.
type socket struct{}

func socketOf(net.Conn) (*socket, bool) { return nil, false }

func (*socket) setLowat(int) {}

func (*socket) tryRead([]byte) (int, error, bool) { return 0, nil, false }

func sleepThread(d time.Duration) { time.Sleep(d) }
