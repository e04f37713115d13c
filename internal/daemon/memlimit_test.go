package daemon

import (
	"log/slog"
	"math"
	"runtime/debug"
	"testing"
)

func TestApplyMemoryLimit(t *testing.T) {
	orig := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(orig) })
	logger := slog.New(slog.DiscardHandler)

	debug.SetMemoryLimit(math.MaxInt64)
	applyMemoryLimit(512<<20, []string{"PATH=/bin"}, logger)
	if got := debug.SetMemoryLimit(-1); got != 512<<20 {
		t.Errorf("limit %d after basic.memoryLimit 512MiB", got)
	}

	debug.SetMemoryLimit(math.MaxInt64)
	applyMemoryLimit(512<<20, []string{"GOMEMLIMIT=1GiB"}, logger)
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("limit %d set although GOMEMLIMIT is in the environment", got)
	}

	applyMemoryLimit(0, nil, logger)
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("limit %d set without basic.memoryLimit", got)
	}
}
