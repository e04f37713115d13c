package sourcelog

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/api"
)

var errNoSpace = errors.New("no space left on device")

// fullDisk is a segment file that, while full is set, writes half of what
// it is given (a torn record) and fails.
type fullDisk struct {
	segFile
	full *atomic.Bool
}

func (f fullDisk) Write(p []byte) (int, error) {
	if f.full.Load() {
		n, _ := f.segFile.Write(p[:len(p)/2])
		return n, errNoSpace
	}
	return f.segFile.Write(p)
}

// ackedSource hands out numbered messages and counts their acks.
type ackedSource struct {
	mu    sync.Mutex
	n     int
	acked map[string]bool
}

func (s *ackedSource) Connect(context.Context) error { return nil }
func (s *ackedSource) Close(context.Context) error   { return nil }
func (s *ackedSource) Read(context.Context) (*api.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	p := fmt.Sprintf(`{"seq":%d}`, s.n)
	return &api.Message{Payload: []byte(p), Ack: func() {
		s.mu.Lock()
		s.acked[p] = true
		s.mu.Unlock()
	}}, nil
}

func (s *ackedSource) ackCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.acked)
}

// openFullDisk opens a log in dir over a new ackedSource, on segment
// files that are full while the returned flag is set.
func openFullDisk(t *testing.T, dir string, opts Options) (*Log, *ackedSource, *atomic.Bool) {
	t.Helper()
	src := &ackedSource{acked: map[string]bool{}}
	full := &atomic.Bool{}
	l, err := Open(src, dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	l.wrap = func(f segFile) segFile { return fullDisk{segFile: f, full: full} }
	return l, src, full
}

func readAll(t *testing.T, l *Log, n int) []string {
	t.Helper()
	var out []string
	for range n {
		m, err := l.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(m.Payload))
	}
	return out
}

// TestFullDiskHoldsRecordsUntilWritten: while the disk refuses writes
// (torn, failing writes), records wait in memory unacknowledged and a
// barrier's Sync fails; once the disk takes writes again they are written
// whole, acknowledged, and a reopened log replays every record in order.
func TestFullDiskHoldsRecordsUntilWritten(t *testing.T) {
	dir := t.TempDir()
	l, src, full := openFullDisk(t, dir, Options{SegmentRecords: 64})
	start, _ := l.Offset()
	want := readAll(t, l, 100)
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if n := src.ackCount(); n != 100 {
		t.Fatalf("%d acked after Sync, want 100", n)
	}

	full.Store(true)
	want = append(want, readAll(t, l, 100)...) // handed on, held unacknowledged
	if err := l.Sync(); err == nil {
		t.Fatal("Sync succeeded on a full disk")
	}
	if n := src.ackCount(); n != 100 {
		t.Fatalf("%d acked while the disk is full, want 100", n)
	}

	full.Store(false)
	if err := l.Sync(); err != nil {
		t.Fatalf("Sync after space came back: %v", err)
	}
	if n := src.ackCount(); n != 200 {
		t.Fatalf("%d acked after space came back, want 200", n)
	}
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	replayed(t, dir, Options{SegmentRecords: 64}, start, want)
}

// replayed reopens the log in dir, rewinds it to start and requires it to
// hold exactly want from there.
func replayed(t *testing.T, dir string, opts Options, start []byte, want []string) {
	t.Helper()
	l, err := Open(&ackedSource{acked: map[string]bool{}}, dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(context.Background())
	if err := l.Rewind(start); err != nil {
		t.Fatal(err)
	}
	got := readAll(t, l, len(want))
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("record %d replays as %s, want %s", i, got[i], want[i])
		}
	}
	if n := l.Len(); n != int64(len(want)) {
		t.Fatalf("reopened log holds %d records, want %d", n, len(want))
	}
}

// TestFullDiskBackpressure: once maxPend bytes wait, Read holds the next
// record until the disk takes writes again.
func TestFullDiskBackpressure(t *testing.T) {
	dir := t.TempDir()
	l, _, full := openFullDisk(t, dir, Options{})
	defer l.Close(context.Background())
	l.maxPend = 256
	full.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var err2 error
	n := 0
	for err2 == nil && n < 1000 {
		_, err2 = l.Read(ctx)
		n++
	}
	if err2 == nil {
		t.Fatal("1000 records taken while nothing could be written")
	}
	full.Store(false)
	if _, err := l.Read(context.Background()); err != nil {
		t.Fatalf("read after space came back: %v", err)
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
}

// TestCloseDropsUnwrittenRecords: records that never reached the disk are
// not acknowledged, and the log stays consistent: a reopened log replays
// exactly the written ones.
func TestCloseDropsUnwrittenRecords(t *testing.T) {
	dir := t.TempDir()
	l, src, full := openFullDisk(t, dir, Options{})
	start, _ := l.Offset()
	want := readAll(t, l, 10)
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	full.Store(true)
	readAll(t, l, 10)
	_ = l.Close(context.Background())
	if n := src.ackCount(); n != 10 {
		t.Fatalf("%d acked, want the 10 written", n)
	}
	replayed(t, dir, Options{}, start, want)
}
