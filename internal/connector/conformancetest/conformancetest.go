// Package conformancetest is the shared conformance suite for connectors.
// Each connector's tests call RunSourceSuite or RunSinkSuite with a factory
// for the connector under test and a helper that talks to a real server
// (producer for sources, reader for sinks), both started by the test.
//
// The suites drive a connector the way the engine does: properties are
// validated through a connector.Registry (as at rule creation), then
// Connect, Read or Write, and Close. They cover: open and close, close after
// a failed connect, a batch, an ordered stream, recovery after the server
// restarts (when the helper can restart it) and rejection of bad
// configuration with a clear message.
//
// Records are identified by a sequence number: source payloads are the JSON
// object {"seq":N}, and sink messages carry the row {"seq":N,"name":"rN"}
// with its JSON as payload.
package conformancetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/testwait"
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

// SourceFactory describes the source under test.
type SourceFactory struct {
	Spec connector.Spec
	New  connector.SourceFactory
	Deps connector.Deps
	// Props returns valid properties for a source that reads what the
	// producer produces. It is called once per subtest.
	Props func(t *testing.T) map[string]any
	// UnreachableProps are valid properties whose Connect (or, for a lazy
	// client, first Read) fails because no server is there; nil skips the
	// failed-connect test.
	UnreachableProps map[string]any
	Invalid          []InvalidCase
	// Seq extracts the sequence number of a message; nil decodes
	// msg.Payload (or msg.Data) as {"seq":N}.
	Seq func(msg *api.Message) (int64, error)
}

// Producer sends records to the source's server.
type Producer interface {
	// Produce publishes payloads in order. It is called after the source
	// connected.
	Produce(t *testing.T, payloads [][]byte)
}

// Restarter is implemented by producers and readers that can restart their
// server; the reconnect tests run only then. Restart returns once the new
// server accepts connections at the old address.
type Restarter interface {
	Restart(t *testing.T)
}

// SinkFactory describes the sink under test.
type SinkFactory struct {
	Spec connector.Spec
	New  connector.SinkFactory
	Deps connector.Deps
	// Props returns valid properties for a sink that writes where the
	// reader reads. It is called once per subtest.
	Props func(t *testing.T) map[string]any
	// UnreachableProps: Connect or the first Write must fail, and a failed
	// Write must be retryable; nil skips the test.
	UnreachableProps map[string]any
	Invalid          []InvalidCase
}

// Reader observes what a sink delivered.
type Reader interface {
	// Seqs returns the sequence numbers delivered since the subtest began,
	// in delivery order, waiting until there are at least want of them or
	// the timeout passed (then it returns what it has).
	Seqs(t *testing.T, want int, timeout time.Duration) []int64
	// Reset forgets what was delivered before; it is called at the start of
	// each subtest that counts records.
	Reset(t *testing.T)
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

func checkInvalid(t *testing.T, cases []InvalidCase, build func(props map[string]any) error) {
	t.Helper()
	if len(cases) == 0 {
		t.Skip("no invalid configurations given")
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			err := build(c.Props)
			if err == nil {
				t.Fatalf("props %v accepted, want error containing %q", c.Props, c.WantErr)
			}
			if !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(c.WantErr)) {
				t.Fatalf("error %q does not contain %q", err, c.WantErr)
			}
		})
	}
}

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// RunSourceSuite runs the source conformance tests as subtests of t.
func RunSourceSuite(t *testing.T, f SourceFactory, p Producer) {
	t.Helper()
	reg := connector.NewRegistry()
	if err := reg.RegisterSource("undertest", f.Spec, f.New); err != nil {
		t.Fatalf("register source: %v", err)
	}
	seqOf := f.Seq
	if seqOf == nil {
		seqOf = DecodeSeq
	}
	build := func(t *testing.T, props map[string]any) api.Source {
		t.Helper()
		s, err := reg.NewSource("undertest", props, f.Deps)
		if err != nil {
			t.Fatalf("create source: %v", err)
		}
		return s
	}
	connect := func(t *testing.T) api.Source {
		t.Helper()
		s := build(t, f.Props(t))
		if err := s.Connect(ctxTimeout(t, Timeout)); err != nil {
			t.Fatalf("connect: %v", err)
		}
		t.Cleanup(func() { _ = s.Close(context.Background()) })
		return s
	}
	readN := func(t *testing.T, s api.Source, n int) []int64 {
		t.Helper()
		ctx := ctxTimeout(t, Timeout)
		var got []int64
		for len(got) < n {
			msg, err := s.Read(ctx)
			if err != nil {
				t.Fatalf("read record %d of %d: %v (got %v)", len(got)+1, n, err, got)
			}
			seq, err := seqOf(msg)
			if err != nil {
				t.Fatalf("record %d: %v", len(got)+1, err)
			}
			got = append(got, seq)
		}
		return got
	}

	t.Run("OpenClose", func(t *testing.T) {
		s := build(t, f.Props(t))
		if err := s.Connect(ctxTimeout(t, Timeout)); err != nil {
			t.Fatalf("connect: %v", err)
		}
		if err := s.Close(context.Background()); err != nil {
			t.Fatalf("close: %v", err)
		}
		if err := s.Close(context.Background()); err != nil {
			t.Fatalf("second close: %v", err)
		}
	})
	t.Run("CloseAfterFailedConnect", func(t *testing.T) {
		if f.UnreachableProps == nil {
			t.Skip("no unreachable configuration given")
		}
		s := build(t, f.UnreachableProps)
		err := s.Connect(ctxTimeout(t, Timeout))
		if err == nil {
			ctx := ctxTimeout(t, 5*time.Second)
			if _, err = s.Read(ctx); err == nil {
				t.Fatal("connect and read succeeded without a server")
			}
		}
		if err := s.Close(context.Background()); err != nil {
			t.Fatalf("close after failed connect: %v", err)
		}
	})
	t.Run("Batch", func(t *testing.T) {
		s := connect(t)
		want := map[int64]bool{}
		var payloads [][]byte
		for i := range int64(10) {
			want[i] = true
			payloads = append(payloads, Payload(i))
		}
		p.Produce(t, payloads)
		for _, seq := range readN(t, s, len(payloads)) {
			if !want[seq] {
				t.Fatalf("unexpected or duplicate record %d", seq)
			}
			delete(want, seq)
		}
	})
	t.Run("Ordered", func(t *testing.T) {
		s := connect(t)
		const n = 100
		payloads := make([][]byte, n)
		for i := range payloads {
			payloads[i] = Payload(int64(1000 + i))
		}
		p.Produce(t, payloads)
		for i, seq := range readN(t, s, n) {
			if seq != int64(1000+i) {
				t.Fatalf("record %d is seq %d, want %d", i, seq, 1000+i)
			}
		}
	})
	t.Run("ReconnectAfterRestart", func(t *testing.T) {
		r, ok := p.(Restarter)
		if !ok {
			t.Skip("producer cannot restart its server")
		}
		s := connect(t)
		p.Produce(t, [][]byte{Payload(1)})
		readN(t, s, 1)
		r.Restart(t)
		sourceRecovers(t, s, p, seqOf)
	})
	t.Run("InvalidConfig", func(t *testing.T) {
		checkInvalid(t, f.Invalid, func(props map[string]any) error {
			_, err := reg.NewSource("undertest", props, f.Deps)
			return err
		})
	})
}

// sourceRecovers keeps producing marker records and reading, reconnecting
// on read errors as the engine does, until a marker arrives.
func sourceRecovers(t *testing.T, s api.Source, p Producer, seqOf func(*api.Message) (int64, error)) {
	t.Helper()
	const marker = 1 << 40
	i := int64(0)
	if !testwait.Poll(Timeout, func() bool {
		p.Produce(t, [][]byte{Payload(marker + i)})
		i++
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		msg, err := s.Read(ctx)
		cancel()
		switch {
		case err == nil:
			seq, err := seqOf(msg)
			return err == nil && seq >= marker
		case errors.Is(err, context.DeadlineExceeded):
		default:
			_ = s.Close(context.Background())
			cctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_ = s.Connect(cctx)
			cancel()
		}
		return false
	}) {
		t.Fatal("source did not recover after the server restarted")
	}
}

// RunSinkSuite runs the sink conformance tests as subtests of t.
func RunSinkSuite(t *testing.T, f SinkFactory, r Reader) {
	t.Helper()
	reg := connector.NewRegistry()
	if err := reg.RegisterSink("undertest", f.Spec, f.New); err != nil {
		t.Fatalf("register sink: %v", err)
	}
	build := func(t *testing.T, props map[string]any) api.Sink {
		t.Helper()
		s, err := reg.NewSink("undertest", props, f.Deps)
		if err != nil {
			t.Fatalf("create sink: %v", err)
		}
		return s
	}
	connect := func(t *testing.T) api.Sink {
		t.Helper()
		s := build(t, f.Props(t))
		if err := s.Connect(ctxTimeout(t, Timeout)); err != nil {
			t.Fatalf("connect: %v", err)
		}
		t.Cleanup(func() { _ = s.Close(context.Background()) })
		return s
	}
	write := func(t *testing.T, s api.Sink, from, n int64) {
		t.Helper()
		ctx := ctxTimeout(t, Timeout)
		for i := from; i < from+n; i++ {
			if err := s.Write(ctx, Message(i)); err != nil {
				t.Fatalf("write %d: %v", i, err)
			}
		}
	}

	t.Run("OpenClose", func(t *testing.T) {
		s := build(t, f.Props(t))
		if err := s.Connect(ctxTimeout(t, Timeout)); err != nil {
			t.Fatalf("connect: %v", err)
		}
		if err := s.Close(context.Background()); err != nil {
			t.Fatalf("close: %v", err)
		}
		if err := s.Close(context.Background()); err != nil {
			t.Fatalf("second close: %v", err)
		}
	})
	t.Run("CloseAfterFailedConnect", func(t *testing.T) {
		if f.UnreachableProps == nil {
			t.Skip("no unreachable configuration given")
		}
		s := build(t, f.UnreachableProps)
		if err := s.Connect(ctxTimeout(t, Timeout)); err == nil {
			err := s.Write(ctxTimeout(t, 10*time.Second), Message(0))
			if err == nil {
				t.Fatal("connect and write succeeded without a server")
			}
			if !errors.Is(err, api.ErrRetryable) {
				t.Fatalf("write without a server: %v is not retryable", err)
			}
		}
		if err := s.Close(context.Background()); err != nil {
			t.Fatalf("close after failed connect: %v", err)
		}
	})
	t.Run("Batch", func(t *testing.T) {
		r.Reset(t)
		s := connect(t)
		write(t, s, 0, 10)
		got := r.Seqs(t, 10, Timeout)
		seen := map[int64]bool{}
		for _, g := range got {
			if g < 0 || g >= 10 || seen[g] {
				t.Fatalf("unexpected or duplicate seq %d in %v", g, got)
			}
			seen[g] = true
		}
		if len(seen) != 10 {
			t.Fatalf("delivered %v, want 0..9", got)
		}
	})
	t.Run("Ordered", func(t *testing.T) {
		r.Reset(t)
		s := connect(t)
		const n = 100
		write(t, s, 1000, n)
		got := r.Seqs(t, n, Timeout)
		if len(got) != n {
			t.Fatalf("delivered %d records, want %d", len(got), n)
		}
		for i, g := range got {
			if g != int64(1000+i) {
				t.Fatalf("record %d is seq %d, want %d", i, g, 1000+i)
			}
		}
	})
	t.Run("ReconnectAfterRestart", func(t *testing.T) {
		rs, ok := r.(Restarter)
		if !ok {
			t.Skip("reader cannot restart its server")
		}
		r.Reset(t)
		s := connect(t)
		write(t, s, 1, 1)
		r.Seqs(t, 1, Timeout)
		rs.Restart(t)
		r.Reset(t)
		sinkRecovers(t, s)
		const final = 777
		got := r.Seqs(t, 1, Timeout)
		if !contains(got, final) {
			t.Fatalf("after restart delivered %v, want %d among them", got, final)
		}
	})
	t.Run("InvalidConfig", func(t *testing.T) {
		checkInvalid(t, f.Invalid, func(props map[string]any) error {
			_, err := reg.NewSink("undertest", props, f.Deps)
			return err
		})
	})
}

// sinkRecovers writes seq 777 until it succeeds; every failure must be
// retryable (the sink cache retries those with the same sink instance).
func sinkRecovers(t *testing.T, s api.Sink) {
	t.Helper()
	var err error
	if !testwait.Poll(Timeout, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		err = s.Write(ctx, Message(777))
		return err == nil || !errors.Is(err, api.ErrRetryable)
	}) {
		t.Fatalf("sink did not recover after the server restarted: %v", err)
	}
	if err != nil {
		t.Fatalf("write during restart: %v is not retryable", err)
	}
}

func contains(s []int64, v int64) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
