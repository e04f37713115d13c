//go:build !linux

package server_test

import "time"

// threadCPU is not measured outside Linux: the CPU figures read 0.
func threadCPU() time.Duration { return 0 }
