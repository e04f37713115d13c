package server_test

import (
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU is the CPU time the calling OS thread has used, to the
// nanosecond (CLOCK_THREAD_CPUTIME_ID). With the goroutine locked to its
// thread (runtime.LockOSThread) it counts the goroutine's own work and not
// the time other processes on a shared machine took from it.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
