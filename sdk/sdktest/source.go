package sdktest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// Source describes the source under test.
type Source struct {
	// New builds the source from properties as the engine does: it
	// validates them against the source's spec, then calls the factory
	// (sdk.Registry.NewSource does both).
	New func(props map[string]any) (api.Source, error)
	// Props returns valid properties for a source that reads what the
	// producer produces. It is called once per subtest.
	Props func(t *testing.T) map[string]any
	// UnreachableProps are valid properties whose Connect (or, for a lazy
	// client, first Read) fails because no server is there; nil skips the
	// failed-connect check.
	UnreachableProps map[string]any
	// Invalid are configurations New must refuse; nil skips the check.
	Invalid []InvalidCase
	// Seq extracts the sequence number of a message; nil is DecodeSeq.
	Seq func(msg *api.Message) (int64, error)
}

// Producer sends records to the source's server.
type Producer interface {
	// Produce publishes payloads in order. It is called after the source
	// connected.
	Produce(t *testing.T, payloads [][]byte)
}

// RunSource runs the source checks as subtests of t: OpenClose,
// CloseAfterFailedConnect, Batch (ten records, each read once), Ordered (a
// hundred records, read in order), ReconnectAfterRestart (when p is a
// Restarter: Read fails or stalls while the server restarts, and after a
// Close and Connect, as the engine reconnects, records flow again) and
// InvalidConfig.
func RunSource(t *testing.T, f Source, p Producer) {
	t.Helper()
	if f.New == nil || f.Props == nil {
		t.Fatal("sdktest: Source needs New and Props")
	}
	if f.Seq == nil {
		f.Seq = DecodeSeq
	}
	s := sourceSuite{f: f, p: p, build: builder(f.New, "source")}
	t.Run("OpenClose", func(t *testing.T) { openClose(t, s.build(t, f.Props(t))) })
	t.Run("CloseAfterFailedConnect", s.closeAfterFailedConnect)
	t.Run("Batch", s.batch)
	t.Run("Ordered", s.ordered)
	t.Run("ReconnectAfterRestart", s.reconnectAfterRestart)
	t.Run("InvalidConfig", invalidConfig(f.New, f.Invalid))
}

// sourceSuite holds what RunSource's checks share.
type sourceSuite struct {
	f     Source
	p     Producer
	build func(*testing.T, map[string]any) api.Source
}

func (s sourceSuite) connected(t *testing.T) api.Source {
	t.Helper()
	return connected(t, s.build(t, s.f.Props(t)))
}

// readN reads n records and returns their sequence numbers.
func (s sourceSuite) readN(t *testing.T, src api.Source, n int) []int64 {
	t.Helper()
	ctx := ctxTimeout(t, Timeout)
	var got []int64
	for len(got) < n {
		msg, err := src.Read(ctx)
		if err != nil {
			t.Fatalf("read record %d of %d: %v (got %v)", len(got)+1, n, err, got)
		}
		seq, err := s.f.Seq(msg)
		if err != nil {
			t.Fatalf("record %d: %v", len(got)+1, err)
		}
		got = append(got, seq)
	}
	return got
}

func (s sourceSuite) closeAfterFailedConnect(t *testing.T) {
	closeAfterFailedConnect(t, s.build, s.f.UnreachableProps, "read", func(src api.Source) error {
		_, err := src.Read(ctxTimeout(t, 5*time.Second))
		return err
	})
}

func (s sourceSuite) batch(t *testing.T) {
	src := s.connected(t)
	want := map[int64]bool{}
	var payloads [][]byte
	for i := range int64(10) {
		want[i] = true
		payloads = append(payloads, Payload(i))
	}
	s.p.Produce(t, payloads)
	for _, seq := range s.readN(t, src, len(payloads)) {
		if !want[seq] {
			t.Fatalf("unexpected or duplicate record %d", seq)
		}
		delete(want, seq)
	}
}

func (s sourceSuite) ordered(t *testing.T) {
	src := s.connected(t)
	const n = 100
	payloads := make([][]byte, n)
	for i := range payloads {
		payloads[i] = Payload(int64(1000 + i))
	}
	s.p.Produce(t, payloads)
	for i, seq := range s.readN(t, src, n) {
		if seq != int64(1000+i) {
			t.Fatalf("record %d is seq %d, want %d", i, seq, 1000+i)
		}
	}
}

func (s sourceSuite) reconnectAfterRestart(t *testing.T) {
	r, ok := s.p.(Restarter)
	if !ok {
		t.Skip("producer cannot restart its server")
	}
	src := s.connected(t)
	s.p.Produce(t, [][]byte{Payload(1)})
	s.readN(t, src, 1)
	r.Restart(t)
	sourceRecovers(t, src, s.p, s.f.Seq)
}

// sourceRecovers keeps producing marker records and reading, reconnecting
// on read errors as the engine does, until a marker arrives.
func sourceRecovers(t *testing.T, s api.Source, p Producer, seqOf func(*api.Message) (int64, error)) {
	t.Helper()
	const marker = 1 << 40
	next := int64(marker)
	recovered := testwait.Poll(Timeout, func() bool {
		p.Produce(t, [][]byte{Payload(next)})
		next++
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
			_ = s.Connect(cctx) // a failure is retried on the next poll
			cancel()
		}
		return false
	})
	if !recovered {
		t.Fatal("source did not recover after the server restarted")
	}
}
