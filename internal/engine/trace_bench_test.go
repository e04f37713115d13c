package engine

import (
	"context"
	"testing"

	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/config"
	"github.com/rekuiper/rekuiper/internal/format"
	"github.com/rekuiper/rekuiper/internal/function"
	"github.com/rekuiper/rekuiper/internal/operator"
	"github.com/rekuiper/rekuiper/internal/rule"
	"github.com/rekuiper/rekuiper/internal/runtime"
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
	vc := clock.NewVirtual(0)
	sink := &encodeSink{}
	sink.codec, _ = format.New("json", format.Options{})
	defs, err := ParseDefs([]string{benchStream})
	if err != nil {
		b.Fatal(err)
	}
	built, err := Build(Spec{ID: "bench", SQL: filterSQL, Options: rule.Options{BufferLength: 1024}, Defs: defs,
		Funcs: function.Builtins(), Clock: vc, Sinks: []runtime.Sink{sink}, Trace: svc.Rule("bench")})
	if err != nil {
		b.Fatal(err)
	}
	dec := streamDecoder(b)
	ps := payloads(1024)
	r := built.Rule
	r.Start()
	b.ReportAllocs()
	b.ResetTimer()
	start := mallocs()
	for i := 0; i < b.N; i += delivery {
		r.Send(operator.Item{Kind: operator.Data, Tuples: decodeDelivery(b, dec, ps, i, min(i+delivery, b.N))})
	}
	r.Stop()
	reportAllocsPerMsg(b, start)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkFilterPathRuntimeTraceOff: the filter path of a rule whose
// tracing is off; compare with BenchmarkFilterPathRuntime (no switch).
func BenchmarkFilterPathRuntimeTraceOff(b *testing.B) { benchFilterPathTraced(b, false) }

// BenchmarkFilterPathRuntimeTraced: every record traced (a debugging
// mode): what tracing costs while it is on.
func BenchmarkFilterPathRuntimeTraced(b *testing.B) { benchFilterPathTraced(b, true) }
