// Package sourcelog makes push sources replayable. With qos >= 1 every
// record a push source (MQTT, HTTP push, WebSocket) receives is appended to
// a local log before it is acknowledged upstream; the position in the log is
// the source's offset, checkpoints record it, a restarted rule replays the
// log from there, and the log is truncated behind completed checkpoints.
// A SIGKILL therefore loses no record the broker considered delivered.
package sourcelog

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/panics"
	"github.com/rekuiper/rekuiper/internal/value"
)

// Sync is when appends reach the disk.
type Sync string

const (
	// SyncNone writes to the OS only: enough for a process crash.
	SyncNone Sync = "none"
	// SyncPeriodic fsyncs at most every SyncInterval.
	SyncPeriodic Sync = "periodic"
	// SyncAlways fsyncs every append before acknowledging: survives power loss.
	SyncAlways Sync = "always"
)

// Options configure a log.
type Options struct {
	Sync         Sync
	SyncInterval time.Duration // for SyncPeriodic (default 100 ms)
	// SegmentRecords is the number of records per segment file (default 4096).
	SegmentRecords int
	// AckDelay bounds how long an appended record waits before the batch it
	// belongs to is written and acknowledged upstream (default 2 ms).
	AckDelay time.Duration
	// Clock times ack batches and periodic syncs (default the wall clock).
	Clock clock.Clock
}

// writeBuffer is how many bytes of records gather before they are written
// to the segment. Records without an upstream acknowledgement (QoS 0) wait
// until then or the next checkpoint barrier; acknowledged ones are written
// out with their batch, whatever the size.
const writeBuffer = 4 << 10

// maxPending bounds the bytes of records that could not be written (the
// disk is full or failing): beyond it Read holds the next record, and the
// source's upstream with it, until a write succeeds.
const maxPending = 8 << 20

// errLogFull is returned by append when maxPending bytes wait.
var errLogFull = errors.New("source log: records cannot be written and the write buffer is full")

// maxBatch is the number of records after which a batch is written and
// acknowledged without waiting for AckDelay.
const maxBatch = 256

// Log wraps a push source. It implements api.Source and api.Rewindable.
// Read and Offset are called from the engine's read loop only; Truncate may
// be called from any goroutine.
type Log struct {
	inner api.Source
	dir   string
	opts  Options

	mu       sync.Mutex
	first    int64 // first retained record index
	next     int64 // index the next appended record gets
	read     int64 // index of the next record Read returns
	w        segFile
	size     int64  // bytes of the current segment that are written
	pend     []byte // encoded records not yet written to the segment
	pendN    int64  // records in pend (the last pendN before next)
	segStart int64
	lastSync time.Time
	reader   *segmentReader
	// acks of records appended but not yet written out; they are called
	// once their batch is written (and synced per policy).
	acks     []func()
	ackTimer clock.Timer
	// failed is a panic of the ack timer's flush (in an upstream
	// acknowledgement, say); Read returns it from then on, which stops the
	// source's rules with it.
	failed *panics.Error

	// enc is the record buffer append reuses; meta and metaEnc cache the
	// encoding of the last metadata map (push sources hand the same
	// read-only map to consecutive messages of a topic).
	enc     []byte
	meta    map[string]any
	metaEnc []byte

	// maxPend is maxPending; wrap, when set, wraps every segment file the
	// log writes (tests inject write failures with them).
	maxPend int
	wrap    func(segFile) segFile
}

// segFile is the part of *os.File the log writes segments with.
type segFile interface {
	Write(p []byte) (int, error)
	Truncate(size int64) error
	Sync() error
	Close() error
}

func (l *Log) openSegment(path string, flag int) (segFile, error) {
	f, err := os.OpenFile(path, flag, 0o644)
	if err != nil {
		return nil, err
	}
	if l.wrap != nil {
		return l.wrap(f), nil
	}
	return f, nil
}

var (
	_ api.Source     = (*Log)(nil)
	_ api.Rewindable = (*Log)(nil)
)

// Open opens (or creates) the log in dir around inner. Records already in
// the log are replayed first unless Rewind positions the reader.
func Open(inner api.Source, dir string, opts Options) (*Log, error) {
	if opts.Sync == "" {
		opts.Sync = SyncNone
	}
	if opts.SyncInterval <= 0 {
		opts.SyncInterval = 100 * time.Millisecond
	}
	if opts.SegmentRecords <= 0 {
		opts.SegmentRecords = 4096
	}
	if opts.AckDelay <= 0 {
		opts.AckDelay = 2 * time.Millisecond
	}
	if opts.Clock == nil {
		opts.Clock = clock.Wall{}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("open source log: %w", err)
	}
	l := &Log{inner: inner, dir: dir, opts: opts, maxPend: maxPending}
	if err := l.recover(); err != nil {
		return nil, err
	}
	l.read = l.first
	return l, nil
}

// Inner is the wrapped source (for its connection status).
func (l *Log) Inner() api.Source { return l.inner }

// Connect connects the wrapped source.
func (l *Log) Connect(ctx context.Context) error { return l.inner.Connect(ctx) }

// Drain drains the wrapped source when it can (see stream.Drainer): Read
// then logs what it still hands over, and returns io.EOF after it. It
// returns errors.ErrUnsupported when the wrapped source cannot drain.
func (l *Log) Drain(ctx context.Context) error {
	if d, ok := l.inner.(interface{ Drain(context.Context) error }); ok {
		return d.Drain(ctx)
	}
	return errors.ErrUnsupported
}

// Close writes out the appended records, sends their upstream
// acknowledgements while the wrapped source is still connected, then
// closes it and the log files.
func (l *Log) Close(ctx context.Context) error {
	var err error
	l.mu.Lock()
	if l.w != nil {
		if err = l.flushLocked(); err != nil {
			l.dropPending()
		}
	}
	l.mu.Unlock()
	if cerr := l.inner.Close(ctx); cerr != nil && err == nil {
		err = cerr
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.reader != nil {
		l.reader.close()
		l.reader = nil
	}
	if l.w != nil {
		if ferr := l.flushLocked(); ferr != nil {
			if err == nil {
				err = ferr
			}
			l.dropPending()
		}
		if cerr := l.w.Close(); cerr != nil && err == nil {
			err = cerr
		}
		l.w = nil
	}
	return err
}

// dropPending forgets records that could not be written: they leave the
// log, and their upstream acknowledgements are never sent, so the upstream
// delivers them again (they were handed on already: at least once).
func (l *Log) dropPending() {
	l.next -= l.pendN
	if l.read > l.next {
		l.read = l.next
	}
	l.pend, l.pendN, l.acks = l.pend[:0], 0, nil
}

// Read returns the next record: first those in the log after the read
// position (a replay), then new records from the wrapped source. Each new
// record is appended before Read returns it; its upstream acknowledgement
// waits until its batch is written (and synced per policy): at most
// AckDelay or maxBatch records later, or at the next Sync.
func (l *Log) Read(ctx context.Context) (*api.Message, error) {
	l.mu.Lock()
	if l.failed != nil {
		l.mu.Unlock()
		return nil, l.failed
	}
	if l.read < l.next {
		msg, err := l.readLogged()
		l.mu.Unlock()
		return msg, err
	}
	l.mu.Unlock()
	msg, err := l.inner.Read(ctx)
	if err != nil {
		return nil, err
	}
	if msg.Time.IsZero() {
		msg.Time = l.opts.Clock.Now()
	}
	l.mu.Lock()
	err = l.append(msg)
	for wait := 10 * time.Millisecond; err != nil; wait = min(2*wait, time.Second) {
		// The log cannot take the record (the disk is full or failing):
		// hold it, unacknowledged, and with it the source (backpressure),
		// until a write succeeds.
		l.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("append to source log: %w", err)
		case <-time.After(wait):
		}
		l.mu.Lock()
		if ferr := l.flushLocked(); ferr == nil || !errors.Is(err, errLogFull) {
			err = l.append(msg)
		}
	}
	if err == nil {
		l.read = l.next
		if msg.Ack != nil {
			l.acks = append(l.acks, msg.Ack)
		}
		switch {
		case len(l.acks) >= maxBatch:
			err = l.flushLocked()
		case len(l.acks) > 0 && l.ackTimer == nil:
			l.ackTimer = l.opts.Clock.AfterFunc(l.opts.AckDelay, l.flushTimer)
		}
	}
	l.mu.Unlock()
	if err != nil {
		// Not acknowledged: the broker redelivers it.
		return nil, fmt.Errorf("append to source log: %w", err)
	}
	// The message is ours (the source handed it over); its ack is queued.
	msg.Ack = nil
	return msg, nil
}

// Sync writes (and syncs, per policy) every appended record and sends the
// pending upstream acknowledgements. The engine calls it at checkpoint
// barriers, so a checkpoint never refers to a record not in the log.
func (l *Log) Sync() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.flushLocked()
}

func (l *Log) flushTimer() {
	defer panics.Catch("source log flush", func(e *panics.Error) {
		l.mu.Lock()
		l.failed = e
		l.mu.Unlock()
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ackTimer = nil
	if err := l.flushLocked(); err != nil {
		// The acks stay pending; the next append or Sync retries.
		return
	}
}

// flushLocked writes the buffered batch, syncs per policy, then acks it.
func (l *Log) flushLocked() error {
	if l.ackTimer != nil {
		l.ackTimer.Stop()
		l.ackTimer = nil
	}
	if l.w != nil {
		if err := l.writePending(); err != nil {
			return err
		}
		switch l.opts.Sync {
		case SyncAlways:
			if err := l.w.Sync(); err != nil {
				return err
			}
		case SyncPeriodic:
			if now := l.opts.Clock.Now(); now.Sub(l.lastSync) >= l.opts.SyncInterval {
				if err := l.w.Sync(); err != nil {
					return err
				}
				l.lastSync = now
			}
		}
	}
	acks := l.acks
	l.acks = nil
	for _, ack := range acks {
		ack()
	}
	return nil
}

// Offset is the index of the next record Read returns.
func (l *Log) Offset() ([]byte, error) {
	l.mu.Lock()
	i := l.read
	l.mu.Unlock()
	return appendOffset(make([]byte, 0, 32), i), nil
}

// appendOffset appends the JSON of offset{V: 1, I: i}: the read loop takes
// an offset after every record, so it is built by hand.
func appendOffset(b []byte, i int64) []byte {
	b = append(b, `{"v":1,"i":`...)
	b = strconv.AppendInt(b, i, 10)
	return append(b, '}')
}

type offset struct {
	V int   `json:"v"`
	I int64 `json:"i"`
}

// ParseOffset decodes an offset made by Offset.
func ParseOffset(b []byte) (int64, error) {
	var o offset
	if err := json.Unmarshal(b, &o); err != nil || o.V != 1 {
		return 0, fmt.Errorf("invalid source log offset %q", b)
	}
	return o.I, nil
}

// Rewind positions the reader at an offset made by Offset. Records before
// the oldest retained one are gone; rewinding there reads from the oldest.
func (l *Log) Rewind(b []byte) error {
	i, err := ParseOffset(b)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if i < l.first {
		i = l.first
	}
	if i > l.next {
		i = l.next
	}
	l.read = i
	if l.reader != nil {
		l.reader.close()
		l.reader = nil
	}
	return nil
}

// Truncate removes the segments whose records all precede the offset (the
// source offset of a completed checkpoint).
func (l *Log) Truncate(b []byte) error {
	upTo, err := ParseOffset(b)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	segs, err := l.segments()
	if err != nil {
		return err
	}
	for i, start := range segs {
		end := l.next
		if i+1 < len(segs) {
			end = segs[i+1]
		}
		if end > upTo || start == l.segStart {
			break
		}
		if err := os.Remove(l.segPath(start)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("truncate source log: %w", err)
		}
		l.first = end
	}
	return nil
}

// Len is the number of records retained.
func (l *Log) Len() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.next - l.first
}

func (l *Log) segPath(start int64) string {
	return filepath.Join(l.dir, fmt.Sprintf("seg-%020d.log", start))
}

func (l *Log) segments() ([]int64, error) {
	entries, err := os.ReadDir(l.dir)
	if err != nil {
		return nil, fmt.Errorf("list source log: %w", err)
	}
	var out []int64
	for _, e := range entries {
		n := e.Name()
		if !strings.HasPrefix(n, "seg-") || !strings.HasSuffix(n, ".log") {
			continue
		}
		if i, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(n, "seg-"), ".log"), 10, 64); err == nil {
			out = append(out, i)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a] < out[b] })
	return out, nil
}

// recover scans the segments, drops a torn tail record and positions the
// writer after the last complete record.
func (l *Log) recover() error {
	segs, err := l.segments()
	if err != nil {
		return err
	}
	if len(segs) == 0 {
		return nil
	}
	l.first = segs[0]
	last := segs[len(segs)-1]
	n, size, err := scanSegment(l.segPath(last))
	if err != nil {
		return err
	}
	if err := os.Truncate(l.segPath(last), size); err != nil {
		return fmt.Errorf("recover source log: %w", err)
	}
	l.next = last + n
	l.segStart = last
	f, err := l.openSegment(l.segPath(last), os.O_WRONLY|os.O_APPEND)
	if err != nil {
		return fmt.Errorf("recover source log: %w", err)
	}
	l.w, l.size = f, size
	return nil
}

// scanSegment counts the complete records of a segment and returns the
// size they occupy.
func scanSegment(path string) (int64, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, fmt.Errorf("scan source log: %w", err)
	}
	defer f.Close()
	r := bufio.NewReader(f)
	var n, size int64
	for {
		_, used, err := readRecord(r)
		if err != nil {
			// The first incomplete or corrupt record ends the segment: it
			// is a write torn by a crash.
			return n, size, nil
		}
		n++
		size += used
	}
}

// append adds msg to the records waiting to be written, and writes them
// once writeBuffer bytes wait. A failed write keeps them waiting (the next
// flush retries); only a full rotation or maxPending refuses the record.
func (l *Log) append(msg *api.Message) error {
	if l.w == nil || l.next-l.segStart >= int64(l.opts.SegmentRecords) {
		// While the current segment cannot be written out, records go on
		// gathering for it: a segment may hold more than SegmentRecords.
		if err := l.rotate(); err != nil && l.w == nil {
			return err
		}
	}
	if len(l.pend) >= l.maxPend {
		return errLogFull
	}
	l.enc = l.encodeMessage(l.enc[:0], msg)
	body := l.enc
	var hdr [binary.MaxVarintLen64 + 4]byte
	k := binary.PutUvarint(hdr[:], uint64(len(body)))
	binary.LittleEndian.PutUint32(hdr[k:], crc32.ChecksumIEEE(body))
	l.pend = append(append(l.pend, hdr[:k+4]...), body...)
	l.pendN++
	l.next++
	if len(l.pend) >= writeBuffer {
		// A failure leaves the records waiting for the next flush.
		_ = l.writePending()
	}
	return nil
}

// writePending writes the waiting records to the segment. A failed write
// (a full disk) may leave part of them in the file: the file is cut back to
// its last whole record and they stay waiting.
func (l *Log) writePending() error {
	if len(l.pend) == 0 {
		return nil
	}
	n, err := l.w.Write(l.pend)
	if err != nil {
		if n > 0 {
			if terr := l.w.Truncate(l.size); terr != nil {
				return fmt.Errorf("write source log: %w (and cutting the torn record: %w)", err, terr)
			}
		}
		return fmt.Errorf("write source log: %w", err)
	}
	l.size += int64(n)
	l.pend, l.pendN = l.pend[:0], 0
	return nil
}

func (l *Log) rotate() error {
	if l.w != nil {
		if err := l.writePending(); err != nil {
			return err
		}
		if l.opts.Sync != SyncNone {
			if err := l.w.Sync(); err != nil {
				return err
			}
		}
		err := l.w.Close()
		l.w = nil
		if err != nil {
			return err
		}
	}
	// A segment file left by a rotation that failed after creating it holds
	// no record: start it afresh.
	f, err := l.openSegment(l.segPath(l.next), os.O_CREATE|os.O_WRONLY|os.O_TRUNC|os.O_APPEND)
	if err != nil {
		return fmt.Errorf("create source log segment: %w", err)
	}
	l.w, l.size, l.segStart = f, 0, l.next
	return nil
}

// readLogged returns record l.read from the segments (called with mu held).
func (l *Log) readLogged() (*api.Message, error) {
	if l.reader == nil || l.reader.index != l.read {
		if l.reader != nil {
			l.reader.close()
		}
		rd, err := l.openReader(l.read)
		if err != nil {
			return nil, err
		}
		l.reader = rd
	}
	body, _, err := readRecord(l.reader.r)
	if err != nil {
		l.reader.close()
		l.reader = nil
		// The segment ended: move to the next one.
		if errors.Is(err, io.EOF) {
			rd, oerr := l.openReader(l.read)
			if oerr != nil {
				return nil, oerr
			}
			l.reader = rd
			if body, _, err = readRecord(rd.r); err != nil {
				return nil, fmt.Errorf("read source log record %d: %w", l.read, err)
			}
		} else {
			return nil, fmt.Errorf("read source log record %d: %w", l.read, err)
		}
	}
	msg, err := decodeMessage(body)
	if err != nil {
		return nil, fmt.Errorf("read source log record %d: %w", l.read, err)
	}
	l.read++
	l.reader.index = l.read
	return msg, nil
}

type segmentReader struct {
	f     *os.File
	r     *bufio.Reader
	index int64
}

func (s *segmentReader) close() { s.f.Close() }

// openReader opens the segment holding record index and skips to it.
func (l *Log) openReader(index int64) (*segmentReader, error) {
	if l.w != nil {
		if err := l.writePending(); err != nil {
			return nil, err
		}
	}
	segs, err := l.segments()
	if err != nil {
		return nil, err
	}
	start := int64(-1)
	for _, s := range segs {
		if s <= index {
			start = s
		}
	}
	if start < 0 {
		return nil, fmt.Errorf("source log record %d is no longer retained", index)
	}
	f, err := os.Open(l.segPath(start))
	if err != nil {
		return nil, fmt.Errorf("open source log segment: %w", err)
	}
	rd := &segmentReader{f: f, r: bufio.NewReader(f), index: start}
	for rd.index < index {
		if _, _, err := readRecord(rd.r); err != nil {
			f.Close()
			return nil, fmt.Errorf("skip to source log record %d: %w", index, err)
		}
		rd.index++
	}
	return rd, nil
}

func readRecord(r *bufio.Reader) ([]byte, int64, error) {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, 0, err
	}
	var crc [4]byte
	if _, err := io.ReadFull(r, crc[:]); err != nil {
		return nil, 0, io.ErrUnexpectedEOF
	}
	if n > 256<<20 {
		return nil, 0, fmt.Errorf("record too large (%d bytes)", n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, 0, io.ErrUnexpectedEOF
	}
	if crc32.ChecksumIEEE(body) != binary.LittleEndian.Uint32(crc[:]) {
		return nil, 0, fmt.Errorf("record checksum mismatch")
	}
	return body, int64(uvarintLen(n)) + 4 + int64(n), nil
}

func uvarintLen(n uint64) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutUvarint(b[:], n)
}

// Record layout: version 1, flags (1 payload, 2 data, 4 meta), time in
// Unix ns, then the parts present.
const (
	recVersion  = 1
	flagPayload = 1
	flagData    = 2
	flagMeta    = 4
)

// encodeMessage appends m's record to b, reusing the encoding of the
// metadata map when it is the map of the previous record.
func (l *Log) encodeMessage(b []byte, m *api.Message) []byte {
	if m.Meta == nil || m.Data != nil {
		return appendMessage(b, m, nil)
	}
	if l.meta == nil || reflect.ValueOf(l.meta).UnsafePointer() != reflect.ValueOf(m.Meta).UnsafePointer() {
		l.meta = m.Meta
		l.metaEnc = value.AppendObject(l.metaEnc[:0], m.Meta)
	}
	return appendMessage(b, m, l.metaEnc)
}

// appendMessage appends m's record to b; metaEnc, when set, is the
// encoding of m.Meta.
func appendMessage(b []byte, m *api.Message, metaEnc []byte) []byte {
	var flags byte
	if m.Payload != nil {
		flags |= flagPayload
	}
	if m.Data != nil {
		flags |= flagData
	}
	if m.Meta != nil {
		flags |= flagMeta
	}
	b = append(b, recVersion, flags)
	b = binary.AppendVarint(b, m.Time.UnixNano())
	if m.Payload != nil {
		b = binary.AppendUvarint(b, uint64(len(m.Payload)))
		b = append(b, m.Payload...)
	}
	if m.Data != nil {
		b = value.AppendObject(b, m.Data)
	}
	switch {
	case metaEnc != nil:
		b = append(b, metaEnc...)
	case m.Meta != nil:
		b = value.AppendObject(b, m.Meta)
	}
	return b
}

func decodeMessage(b []byte) (*api.Message, error) {
	if len(b) < 2 || b[0] != recVersion {
		return nil, fmt.Errorf("unsupported record version")
	}
	flags := b[1]
	r := value.NewReader(b[2:])
	m := &api.Message{Time: time.Unix(0, r.Varint())}
	if flags&flagPayload != 0 {
		n := r.Uvarint()
		if n > uint64(r.Len()) {
			return nil, fmt.Errorf("payload longer than record")
		}
		m.Payload = []byte(r.Bytes(int(n)))
	}
	if flags&flagData != 0 {
		m.Data = r.Object()
	}
	if flags&flagMeta != 0 {
		m.Meta = r.Object()
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	return m, nil
}
