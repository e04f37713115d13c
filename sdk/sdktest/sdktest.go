// Package sdktest is the connector conformance kit: the checks every
// built-in source, sink and lookup source of rekuiper passes, for
// extensions to run on theirs. A test calls RunSource, RunSink or
// RunLookup with a constructor of the connector under test and a helper
// that talks to a real server started by the test (a producer for sources,
// a reader for sinks).
//
// The constructor builds the connector as the engine does when a rule
// starts: it validates the properties against the connector's spec, then
// calls its factory. For an extension that is its Registry:
//
//	r := sdk.NewRegistry()
//	if err := myext.Register(r); err != nil {
//		t.Fatal(err)
//	}
//	sdktest.RunSink(t, sdktest.Sink{
//		New:   func(p map[string]any) (api.Sink, error) { return r.NewSink("mysink", p, sdk.Deps{}) },
//		Props: func(t *testing.T) map[string]any { return map[string]any{"url": srv.URL} },
//	}, reader)
//
// The suites then drive the connector the way the engine does: Connect,
// Read, Write or Lookup, and Close. They cover opening and closing, closing
// after a failed connect, a batch, an ordered stream, recovery after the
// server restarts (when the helper can restart it) and the rejection of
// bad configuration with a clear message. Each check is a subtest; a check
// whose input is not given (no unreachable configuration, a helper that
// cannot restart its server) is skipped.
//
// Records are identified by a sequence number: source payloads are the
// JSON object {"seq":N} (Payload), and sink messages carry the row
// {"seq":N,"name":"rN"} with its JSON as payload (Message).
package sdktest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/api"
)

// Timeout bounds every wait of the suites.
const Timeout = 20 * time.Second

// InvalidCase is a configuration that rule creation must reject.
type InvalidCase struct {
	Name  string
	Props map[string]any
	// WantErr must occur in the error message (case-insensitive).
	WantErr string
}

// Restarter is implemented by producers and readers that can restart their
// server; the reconnect checks run only then. Restart returns once the new
// server accepts connections at the old address.
type Restarter interface {
	Restart(t *testing.T)
}

// Payload returns the source payload of sequence number n.
func Payload(n int64) []byte { return fmt.Appendf(nil, `{"seq":%d}`, n) }

// Message returns the sink message of sequence number n.
func Message(n int64) *api.SinkMessage {
	row := map[string]any{"seq": n, "name": fmt.Sprintf("r%d", n)}
	b, _ := json.Marshal(row)
	return &api.SinkMessage{Rows: []map[string]any{row}, Payload: b}
}

// DecodeSeq reads {"seq":N} from msg.Data or msg.Payload.
func DecodeSeq(msg *api.Message) (int64, error) {
	if msg.Data != nil {
		return seqOf(msg.Data["seq"])
	}
	var m map[string]any
	if err := json.Unmarshal(msg.Payload, &m); err != nil {
		return 0, fmt.Errorf("decode payload %q: %w", msg.Payload, err)
	}
	return seqOf(m["seq"])
}

func seqOf(v any) (int64, error) {
	switch x := v.(type) {
	case int64:
		return x, nil
	case int:
		return int64(x), nil
	case float64:
		return int64(x), nil
	case string:
		var n int64
		_, err := fmt.Sscan(x, &n)
		return n, err
	case json.Number:
		return x.Int64()
	}
	return 0, fmt.Errorf("no seq in record (got %T)", v)
}

// ClosedPort returns a local TCP address nothing listens on: connecting to
// it is refused. It makes unreachable configurations.
func ClosedPort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// invalidConfig returns the InvalidConfig check: newC refuses every case
// with an error naming its problem.
func invalidConfig[C any](newC func(map[string]any) (C, error), cases []InvalidCase) func(*testing.T) {
	return func(t *testing.T) {
		if len(cases) == 0 {
			t.Skip("no invalid configurations given")
		}
		for _, c := range cases {
			t.Run(c.Name, func(t *testing.T) {
				_, err := newC(c.Props)
				if err == nil {
					t.Fatalf("props %v accepted, want error containing %q", c.Props, c.WantErr)
				}
				if !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(c.WantErr)) {
					t.Fatalf("error %q does not contain %q", err, c.WantErr)
				}
			})
		}
	}
}

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// closer is the Connect and Close of every connector kind.
type closer interface {
	Connect(ctx context.Context) error
	Close(ctx context.Context) error
}

// openClose connects c, then closes it twice: a second Close must work too.
func openClose(t *testing.T, c closer) {
	t.Helper()
	if err := c.Connect(ctxTimeout(t, Timeout)); err != nil {
		t.Fatalf("connect: %v", err)
	}
	if err := c.Close(context.Background()); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := c.Close(context.Background()); err != nil {
		t.Fatalf("second close: %v", err)
	}
}

// connected connects c and closes it when the test ends.
func connected[C closer](t *testing.T, c C) C {
	t.Helper()
	if err := c.Connect(ctxTimeout(t, Timeout)); err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// closeAfterFailedConnect is the CloseAfterFailedConnect check: the
// connector built from unreachable properties fails to connect or, when it
// connects lazily, fails its first use (use checks that error further);
// Close must work either way.
func closeAfterFailedConnect[C closer](t *testing.T, build func(*testing.T, map[string]any) C, unreachable map[string]any, what string, use func(C) error) {
	t.Helper()
	if unreachable == nil {
		t.Skip("no unreachable configuration given")
	}
	c := build(t, unreachable)
	if err := c.Connect(ctxTimeout(t, Timeout)); err == nil {
		if err := use(c); err == nil {
			t.Fatalf("connect and %s succeeded without a server", what)
		}
	}
	if err := c.Close(context.Background()); err != nil {
		t.Fatalf("close after failed connect: %v", err)
	}
}

// builder returns a constructor that fails the test on an error.
func builder[C any](newC func(map[string]any) (C, error), what string) func(*testing.T, map[string]any) C {
	return func(t *testing.T, props map[string]any) C {
		t.Helper()
		c, err := newC(props)
		if err != nil {
			t.Fatalf("create %s: %v", what, err)
		}
		return c
	}
}
