package engine

import (
	"context"
	"testing"

	"github.com/rekuiper/rekuiper/internal/config"
	"github.com/rekuiper/rekuiper/internal/tracing"
)

// benchFilterPathTraced is BenchmarkFilterPathRuntime with a tracing
// switch on the rule, off or on (strategy always: every record traced).
func benchFilterPathTraced(b *testing.B, on bool) {
	svc, err := tracing.New(config.Default().OpenTelemetry, tracing.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer svc.Shutdown(context.Background()) //nolint:errcheck // bench end
	if on {
		svc.Rule("bench").Enable(tracing.Always)
	}
	filterPathRuntime(b, svc.Rule("bench"))
}

// BenchmarkFilterPathRuntimeTraceOff: the filter path of a rule whose
// tracing is off; compare with BenchmarkFilterPathRuntime (no switch).
func BenchmarkFilterPathRuntimeTraceOff(b *testing.B) { benchFilterPathTraced(b, false) }

// BenchmarkFilterPathRuntimeTraced: every record traced (a debugging
// mode): what tracing costs while it is on.
func BenchmarkFilterPathRuntimeTraced(b *testing.B) { benchFilterPathTraced(b, true) }
