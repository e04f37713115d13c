package sourcelog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/panics"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// pushSource is a fake push source: it returns queued payloads and records
// which were acknowledged, and whether each was in the log at that moment.
type pushSource struct {
	queue   [][]byte
	acked   []string
	logged  func() int64 // records durably in the log files at ack time
	ackedAt []int64
}

func (p *pushSource) Connect(context.Context) error { return nil }
func (p *pushSource) Close(context.Context) error   { return nil }
func (p *pushSource) Read(ctx context.Context) (*api.Message, error) {
	if len(p.queue) == 0 {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	b := p.queue[0]
	p.queue = p.queue[1:]
	return &api.Message{Payload: b, Meta: map[string]any{"topic": "t"}, Ack: func() {
		p.acked = append(p.acked, string(b))
		p.ackedAt = append(p.ackedAt, p.logged())
	}}, nil
}

func payloads(n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = []byte(fmt.Sprintf(`{"seq":%d}`, i))
	}
	return out
}

func readN(t *testing.T, l *Log, n int) []string {
	t.Helper()
	var out []string
	for i := 0; i < n; i++ {
		m, err := l.Read(context.Background())
		if err != nil {
			t.Fatalf("read %d: %v", i, err)
		}
		if m.Ack != nil {
			t.Fatal("a logged message must not carry the upstream ack")
		}
		out = append(out, string(m.Payload))
	}
	return out
}

func TestAppendBeforeAckAndReplayAfterCrash(t *testing.T) {
	dir := t.TempDir()
	src := &pushSource{queue: payloads(10)}
	l, err := Open(src, dir, Options{Sync: SyncAlways, SegmentRecords: 3})
	if err != nil {
		t.Fatal(err)
	}
	src.logged = func() int64 { return onDisk(t, dir) }
	got := readN(t, l, 6)
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if len(src.ackedAt) != 6 {
		t.Fatalf("%d records acknowledged after Sync, want 6", len(src.ackedAt))
	}
	for i, n := range src.ackedAt {
		if n < int64(i+1) {
			t.Fatalf("record %d acknowledged with %d records on disk; it must be written first", i, n)
		}
	}
	four := []byte(`{"v":1,"i":4}`) // what a checkpoint after 4 records holds
	// SIGKILL: the log is abandoned without Close.
	l2, err := Open(&pushSource{}, dir, Options{SegmentRecords: 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := l2.Rewind(four); err != nil {
		t.Fatal(err)
	}
	replay := readN(t, l2, 2)
	if replay[0] != got[4] || replay[1] != got[5] {
		t.Fatalf("replayed %v, want %v", replay, got[4:6])
	}
}

func TestNoCheckpointReplaysEverything(t *testing.T) {
	dir := t.TempDir()
	src := &pushSource{queue: payloads(5)}
	l, _ := Open(src, dir, Options{})
	src.logged = func() int64 { return 0 }
	readN(t, l, 5)
	// Only acknowledged records are promised: write the batch out, as the
	// ack timer or a checkpoint barrier would, before the "crash".
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	l2, err := Open(&pushSource{}, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := readN(t, l2, 5); got[0] != `{"seq":0}` || got[4] != `{"seq":4}` {
		t.Fatalf("replay %v", got)
	}
}

func TestTornTailIsDropped(t *testing.T) {
	dir := t.TempDir()
	src := &pushSource{queue: payloads(3)}
	l, _ := Open(src, dir, Options{})
	src.logged = func() int64 { return 0 }
	readN(t, l, 3)
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	seg := filepath.Join(dir, "seg-00000000000000000000.log")
	f, _ := os.OpenFile(seg, os.O_APPEND|os.O_WRONLY, 0)
	f.Write([]byte{40, 1, 2}) // a record header cut short by the crash
	f.Close()
	l2, err := Open(&pushSource{queue: payloads(1)}, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := l2.Len(); n != 3 {
		t.Fatalf("recovered %d records, want 3", n)
	}
	src2 := &pushSource{queue: [][]byte{[]byte("new")}}
	l3, _ := Open(src2, dir, Options{})
	src2.logged = l3.Len
	got := readN(t, l3, 4)
	if got[3] != "new" {
		t.Fatalf("after recovery got %v", got)
	}
}

func TestTruncateBehindCheckpoint(t *testing.T) {
	dir := t.TempDir()
	src := &pushSource{queue: payloads(10)}
	l, _ := Open(src, dir, Options{SegmentRecords: 3})
	src.logged = func() int64 { return 0 }
	readN(t, l, 10)
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := l.Truncate([]byte(`{"v":1,"i":7}`)); err != nil {
		t.Fatal(err)
	}
	// Segments [0,3) and [3,6) go; [6,9) holds record 6, still needed.
	if l.first != 6 {
		t.Fatalf("first retained record %d, want 6", l.first)
	}
	l2, _ := Open(&pushSource{}, dir, Options{SegmentRecords: 3})
	if err := l2.Rewind([]byte(`{"v":1,"i":7}`)); err != nil {
		t.Fatal(err)
	}
	if got := readN(t, l2, 3); got[0] != `{"seq":7}` || got[2] != `{"seq":9}` {
		t.Fatalf("after truncate replay %v", got)
	}
}

// BenchmarkAppend measures appending records under load: batches of
// maxBatch records written out (and synced per policy) together.
func BenchmarkAppend(b *testing.B) {
	for _, sync := range []Sync{SyncNone, SyncPeriodic, SyncAlways} {
		b.Run(string(sync), func(b *testing.B) {
			src := &pushSource{queue: make([][]byte, 0)}
			l, err := Open(src, b.TempDir(), Options{Sync: sync})
			if err != nil {
				b.Fatal(err)
			}
			src.logged = func() int64 { return 0 }
			payload := []byte(`{"deviceId":"dev1","temperature":21.5,"humidity":40,"status":"ok"}`)
			b.SetBytes(int64(len(payload)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := l.append(&api.Message{Payload: payload}); err != nil {
					b.Fatal(err)
				}
				if i%maxBatch == maxBatch-1 {
					// Under load Read writes a batch every maxBatch records.
					if err := l.flushLocked(); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// onDisk counts the complete records in the log's segment files.
func onDisk(t *testing.T, dir string) int64 {
	t.Helper()
	segs, _ := filepath.Glob(filepath.Join(dir, "seg-*.log"))
	var n int64
	for _, s := range segs {
		c, _, err := scanSegment(s)
		if err != nil {
			t.Fatal(err)
		}
		n += c
	}
	return n
}

// TestUnflushedRecordsAreNotAcknowledged: a crash before the batch is
// written loses only records the upstream never saw acknowledged.
func TestUnflushedRecordsAreNotAcknowledged(t *testing.T) {
	dir := t.TempDir()
	src := &pushSource{queue: payloads(3)}
	l, _ := Open(src, dir, Options{AckDelay: time.Hour})
	src.logged = func() int64 { return 0 }
	readN(t, l, 3)
	if len(src.acked) != 0 {
		t.Fatalf("acknowledged %v before the batch was written", src.acked)
	}
	if n := onDisk(t, dir); n != 0 {
		t.Fatalf("%d records on disk before the batch was written", n)
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if len(src.acked) != 3 || onDisk(t, dir) != 3 {
		t.Fatalf("after Sync: %d acked, %d on disk; want 3 and 3", len(src.acked), onDisk(t, dir))
	}
}

// listSource returns its messages, then blocks.
type listSource struct{ msgs []*api.Message }

func (l *listSource) Connect(context.Context) error { return nil }
func (l *listSource) Close(context.Context) error   { return nil }
func (l *listSource) Read(ctx context.Context) (*api.Message, error) {
	if len(l.msgs) == 0 {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	m := l.msgs[0]
	l.msgs = l.msgs[1:]
	return m, nil
}

// TestSharedMetadataReplays: records that share one metadata map (a push
// source reuses it for a topic) and records with their own replay with
// their own metadata each.
func TestSharedMetadataReplays(t *testing.T) {
	dir := t.TempDir()
	shared := map[string]any{"topic": "a", "qos": int64(0)}
	var want []*api.Message
	for i, meta := range []map[string]any{shared, shared, {"topic": "b"}, shared, nil} {
		want = append(want, &api.Message{Payload: []byte{byte('0' + i)}, Meta: meta})
	}
	src := &listSource{msgs: append([]*api.Message(nil), want...)}
	l, err := Open(src, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	start, err := l.Offset()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for range want {
		if _, err := l.Read(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	l2, err := Open(&listSource{}, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close(ctx)
	if err := l2.Rewind(start); err != nil {
		t.Fatal(err)
	}
	for i, w := range want {
		m, err := l2.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if string(m.Payload) != string(w.Payload) || !reflect.DeepEqual(m.Meta, w.Meta) {
			t.Fatalf("record %d: %q %v, want %q %v", i, m.Payload, m.Meta, w.Payload, w.Meta)
		}
	}
}

func TestOffsetEncodingMatchesJSON(t *testing.T) {
	for _, i := range []int64{0, 1, 4095, 1 << 40} {
		want, err := json.Marshal(offset{V: 1, I: i})
		if err != nil {
			t.Fatal(err)
		}
		got := appendOffset(nil, i)
		if string(got) != string(want) {
			t.Fatalf("offset %d encoded %s, want %s", i, got, want)
		}
		if back, err := ParseOffset(got); err != nil || back != i {
			t.Fatalf("ParseOffset(%s) = %d, %v", got, back, err)
		}
	}
}

// TestAckFlushPanic: a panic while the ack timer flushes a batch (here in
// the upstream acknowledgement) does not end the process: the next Read
// returns it, and the engine stops the source's rules with it.
func TestAckFlushPanic(t *testing.T) {
	src := &listSource{msgs: []*api.Message{{Payload: []byte(`{"a":1}`), Ack: func() { panic("ack bug") }}}}
	l, err := Open(src, t.TempDir(), Options{AckDelay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(context.Background())
	if got := readN(t, l, 1); got[0] != `{"a":1}` {
		t.Fatalf("read %v", got)
	}
	// A Read waiting for the source when the flush panics returns with
	// the source's next record; the Read after it returns the panic.
	testwait.Until(t, "a Read to return the flush's panic", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		_, err = l.Read(ctx)
		return !errors.Is(err, context.DeadlineExceeded)
	})
	if !panics.Is(err) || err.Error() != "panic: source log flush: ack bug" {
		t.Fatalf("read after the flush panicked: %v; want the panic", err)
	}
}
