//go:build !linux

package mqtt

import "net"

// rcvLowat is Linux only (see lowat_linux.go): elsewhere a paced reader
// simply sleeps.
func rcvLowat(net.Conn) func(n int) { return nil }
