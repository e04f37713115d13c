//go:build unix

package netlimit

import "syscall"

// RaiseFileLimit raises the soft limit of open files to the hard one, as
// servers do (the Go runtime does it too on some systems; a child process
// gets the original back), and returns the limit then in force.
func RaiseFileLimit() (uint64, error) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, err
	}
	if l.Cur < l.Max {
		raised := l
		raised.Cur = raised.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err == nil {
			l = raised
		}
	}
	return uint64(l.Cur), nil
}
