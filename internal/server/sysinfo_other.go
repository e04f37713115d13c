//go:build !linux

package server

import (
	"runtime"
	"time"
)

func processCPU() (time.Duration, bool) { return 0, false }

// processRSS falls back to the memory the Go runtime holds from the OS.
func processRSS() (uint64, bool) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Sys, true
}

func memoryTotal() (uint64, bool) { return 0, false }
