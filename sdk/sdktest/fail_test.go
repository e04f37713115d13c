package sdktest_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/sdk/sdktest"
)

// brokenEnv names, in a child process of this test binary, the broken
// connector whose suite TestChecksFail runs.
const brokenEnv = "SDKTEST_BROKEN"

// brokenSuites are suites on connectors that break one contract each,
// with the check that must catch it and one that must still pass.
func brokenSuites() map[string]brokenSuite {
	return map[string]brokenSuite{
		"lookup sharing its rows": {func(t *testing.T) {
			rows := []map[string]any{{"id": 1}}
			sdktest.RunLookup(t, sdktest.Lookup{
				New:   func(map[string]any) (api.LookupSource, error) { return sharedTable{rows}, nil },
				Props: func(*testing.T) map[string]any { return nil },
				Key:   map[string]any{"id": 1}, Want: []map[string]any{{"id": 1}},
			})
		}, "RowsOwnedByCaller", "Found"},
		"source swapping records": {func(t *testing.T) {
			h := &hub{}
			sdktest.RunSource(t, sdktest.Source{
				New: func(map[string]any) (api.Source, error) {
					return &swapSource{pipeSource: pipeSource{h: h, topic: "t"}}, nil
				},
				Props: func(*testing.T) map[string]any { return nil },
			}, struct{ sdktest.Producer }{&producer{h: h, topic: "t"}}) // no Restart: it would lose held records
		}, "Ordered", "Batch"},
		"sink failing for good without a server": {func(t *testing.T) {
			h := &hub{}
			sdktest.RunSink(t, sdktest.Sink{
				New: func(p map[string]any) (api.Sink, error) {
					if p["down"] != nil {
						return downSink{}, nil
					}
					return &pipeSink{h: h, topic: "t"}, nil
				},
				Props:            func(*testing.T) map[string]any { return map[string]any{} },
				UnreachableProps: map[string]any{"down": true},
			}, &reader{h: h, topic: "t"})
		}, "CloseAfterFailedConnect", "Ordered"},
	}
}

type brokenSuite struct {
	suite        func(t *testing.T)
	fails, holds string
}

// TestChecksFail runs each suite on a broken connector in a child process
// and checks that the suite fails there, at the check for the broken
// contract: checks that cannot fail would prove nothing.
func TestChecksFail(t *testing.T) {
	broken := brokenSuites()
	if name := os.Getenv(brokenEnv); name != "" {
		broken[name].suite(t)
		return
	}
	for name, b := range broken {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestChecksFail$", "-test.v")
			cmd.Env = append(os.Environ(), brokenEnv+"="+name)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("the suite passed on a %s (%v):\n%s", name, err, out)
			}
			for _, want := range []string{"--- FAIL: TestChecksFail/" + b.fails, "--- PASS: TestChecksFail/" + b.holds} {
				if !strings.Contains(string(out), want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

// sharedTable returns its own rows, not copies.
type sharedTable struct{ rows []map[string]any }

func (sharedTable) Connect(context.Context) error { return nil }
func (sharedTable) Close(context.Context) error   { return nil }
func (s sharedTable) Lookup(context.Context, map[string]any) ([]map[string]any, error) {
	return s.rows, nil
}

// swapSource returns records in pairs, the second first.
type swapSource struct {
	pipeSource
	held *api.Message
}

func (s *swapSource) Read(ctx context.Context) (*api.Message, error) {
	if m := s.held; m != nil {
		s.held = nil
		return m, nil
	}
	first, err := s.pipeSource.Read(ctx)
	if err != nil {
		return nil, err
	}
	second, err := s.pipeSource.Read(ctx)
	if err != nil {
		return nil, err
	}
	s.held = first
	return second, nil
}

// downSink connects, then fails every Write without marking it retryable.
type downSink struct{}

func (downSink) Connect(context.Context) error { return nil }
func (downSink) Close(context.Context) error   { return nil }
func (downSink) Write(context.Context, *api.SinkMessage) error {
	return errors.New("no server")
}
