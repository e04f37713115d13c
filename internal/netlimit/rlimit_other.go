//go:build !unix

package netlimit

// RaiseFileLimit reports a limit of open files on systems without
// RLIMIT_NOFILE: Windows' handle table is large, so the connection budget
// is set by limits.maxConnections alone.
func RaiseFileLimit() (uint64, error) { return 1 << 20, nil }
