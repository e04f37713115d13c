package sinkcache

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// The on-disk layout of one cache directory:
//
//	<num>.seg  segment files, num a 16-digit hex counter; each holds up to
//	           BufferPageSize frames in ascending sequence order
//	head       u64 LE sequence number of the oldest record still owed to the
//	           sink, then its CRC-32C; rewritten in place as records leave
//
// Segment names carry no sequence numbers, so a segment abandoned after a
// failed write never collides with its successor. Sequence numbers may have
// gaps (records delivered while the disk was failing); readers go by the
// sequence number stored in each frame.
const (
	segSuffix   = ".seg"
	headName    = "head"
	headSize    = 12
	readBufSize = 64 << 10
)

// segment describes one segment file.
type segment struct {
	num   uint64
	first uint64 // sequence number of the first frame
	end   uint64 // sequence number after the last frame
	count int    // frames
	size  int64  // bytes of valid frames
}

// segLog is the append-only segment log of one cache. It is not safe for
// concurrent use; the Cache serialises calls under its mutex.
type segLog struct {
	dir       string
	sync      SyncPolicy
	pageSize  int
	segs      []*segment
	active    *os.File // open for appends to activeSeg; nil until the next append
	activeSeg *segment
	nextNum   uint64
	head      *os.File
	dirty     bool
	// With SyncPeriodic, segments rotated out stay open until syncAll
	// fsyncs them, and new directory entries are fsynced then too.
	unsynced map[*segment]*os.File
	dirDirty bool
	frame    []byte
	rd       segReader
}

// segReader reads frames sequentially from one segment.
type segReader struct {
	seg  *segment
	f    *os.File
	br   *bufio.Reader
	idx  int    // frames read from seg
	last uint64 // sequence number of the last frame read (idx > 0)
	body []byte
}

// openInfo describes what openLog found.
type openInfo struct {
	head uint64 // persisted head (0 when none)
	tail uint64 // sequence number after the newest frame (0 when none)
	torn int    // segments whose tail was cut at a bad frame
}

func segPath(dir string, num uint64) string {
	return filepath.Join(dir, fmt.Sprintf("%016x%s", num, segSuffix))
}

// openLog opens or creates the log in dir, scanning every segment and
// cutting each at its first bad frame.
func openLog(dir string, sync SyncPolicy, pageSize int) (*segLog, openInfo, error) {
	var info openInfo
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, info, fmt.Errorf("create cache dir: %w", err)
	}
	head, err := os.OpenFile(filepath.Join(dir, headName), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, info, fmt.Errorf("open cache head: %w", err)
	}
	l := &segLog{dir: dir, sync: sync, pageSize: pageSize, head: head}
	var hb [headSize]byte
	if n, _ := head.ReadAt(hb[:], 0); n == headSize &&
		crc32.Checksum(hb[:8], castagnoli) == binary.LittleEndian.Uint32(hb[8:]) {
		info.head = binary.LittleEndian.Uint64(hb[:8])
	}
	nums, err := listSegments(dir)
	if err != nil {
		head.Close()
		return nil, info, err
	}
	for _, num := range nums {
		seg, torn, err := scanSegment(segPath(dir, num), num)
		if err != nil {
			head.Close()
			return nil, info, err
		}
		l.nextNum = num + 1
		if torn {
			info.torn++
		}
		if seg.count == 0 {
			if err := os.Remove(segPath(dir, num)); err != nil && !errors.Is(err, os.ErrNotExist) {
				head.Close()
				return nil, info, fmt.Errorf("remove empty segment: %w", err)
			}
			continue
		}
		l.segs = append(l.segs, seg)
		info.tail = max(info.tail, seg.end)
	}
	return l, info, nil
}

func listSegments(dir string) ([]uint64, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list cache dir: %w", err)
	}
	var nums []uint64
	for _, de := range des {
		name, ok := strings.CutSuffix(de.Name(), segSuffix)
		if !ok || de.IsDir() {
			continue
		}
		if num, err := strconv.ParseUint(name, 16, 64); err == nil {
			nums = append(nums, num)
		}
	}
	sort.Slice(nums, func(i, j int) bool { return nums[i] < nums[j] })
	return nums, nil
}

// scanSegment reads every frame of a segment and truncates the file after
// the last good one.
func scanSegment(path string, num uint64) (*segment, bool, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, false, fmt.Errorf("open segment: %w", err)
	}
	defer f.Close()
	seg := &segment{num: num}
	br := bufio.NewReaderSize(f, readBufSize)
	var body []byte
	for {
		body, err = readFrame(br, body)
		if err == nil {
			var seq uint64
			if seq, err = frameSeq(body); err == nil && (seg.count == 0 || seq >= seg.end) {
				if seg.count == 0 {
					seg.first = seq
				}
				seg.end = seq + 1
				seg.count++
				seg.size += int64(frameHeader + len(body))
				continue
			}
			if err == nil {
				err = fmt.Errorf("%w: sequence number goes back", errBadFrame)
			}
		}
		if errors.Is(err, io.EOF) {
			return seg, false, nil
		}
		if !errors.Is(err, errBadFrame) {
			return nil, false, fmt.Errorf("scan segment %s: %w", filepath.Base(path), err)
		}
		if err := f.Truncate(seg.size); err != nil {
			return nil, false, fmt.Errorf("cut torn segment %s: %w", filepath.Base(path), err)
		}
		return seg, true, nil
	}
}

// append writes one record. On failure the segment is cut back to its last
// good frame and abandoned, so the next append starts a fresh segment.
func (l *segLog) append(e entry) error {
	l.frame = appendFrame(l.frame[:0], e)
	if cap(l.frame) > 1<<20 {
		defer func() { l.frame = nil }()
	}
	if l.active == nil || l.activeSeg.count >= l.pageSize {
		if err := l.rotate(); err != nil {
			return err
		}
	}
	_, err := l.active.Write(l.frame)
	if err == nil && l.sync == SyncAlways {
		err = l.active.Sync()
	}
	if err != nil {
		l.abandonActive()
		return fmt.Errorf("append cached record: %w", err)
	}
	seg := l.activeSeg
	if seg.count == 0 {
		seg.first = e.seq
	}
	seg.end = e.seq + 1
	seg.count++
	seg.size += int64(len(l.frame))
	if l.sync != SyncAlways {
		l.dirty = true
	}
	return nil
}

// rotate closes the active segment and creates the next one.
func (l *segLog) rotate() error {
	if l.active != nil {
		var err error
		switch l.sync {
		case SyncPeriodic:
			if l.unsynced == nil {
				l.unsynced = map[*segment]*os.File{}
			}
			l.unsynced[l.activeSeg] = l.active
		case SyncAlways:
			err = l.active.Sync()
			fallthrough
		default:
			if cerr := l.active.Close(); err == nil {
				err = cerr
			}
		}
		l.active, l.activeSeg = nil, nil
		if err != nil {
			return fmt.Errorf("close segment: %w", err)
		}
	}
	num := l.nextNum
	f, err := os.OpenFile(segPath(l.dir, num), os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("create segment: %w", err)
	}
	l.nextNum++
	if l.sync == SyncAlways {
		if err := syncDir(l.dir); err != nil {
			f.Close()
			os.Remove(segPath(l.dir, num))
			return err
		}
	} else {
		l.dirDirty = true
	}
	l.active = f
	l.activeSeg = &segment{num: num}
	l.segs = append(l.segs, l.activeSeg)
	return nil
}

// abandonActive cuts the active segment back to its good frames after a
// failed write and stops appending to it.
func (l *segLog) abandonActive() {
	seg := l.activeSeg
	_ = l.active.Truncate(seg.size) // best effort: a torn tail is cut again on open
	_ = l.active.Close()
	l.active, l.activeSeg = nil, nil
	if seg.count == 0 {
		_ = os.Remove(segPath(l.dir, seg.num))
		l.segs = l.segs[:len(l.segs)-1]
	}
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open cache dir: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync cache dir: %w", err)
	}
	return nil
}

// writeHead records that every record before seq has left the cache.
func (l *segLog) writeHead(seq uint64) error {
	var hb [headSize]byte
	binary.LittleEndian.PutUint64(hb[:8], seq)
	binary.LittleEndian.PutUint32(hb[8:], crc32.Checksum(hb[:8], castagnoli))
	if _, err := l.head.WriteAt(hb[:], 0); err != nil {
		return fmt.Errorf("write cache head: %w", err)
	}
	l.dirty = true
	return nil
}

// removeBefore deletes the leading segments whose records all precede seq.
func (l *segLog) removeBefore(seq uint64) error {
	var errs []error
	n := 0
	for _, seg := range l.segs {
		if seg.count > 0 && seg.end > seq {
			break
		}
		if seg == l.activeSeg {
			_ = l.active.Close()
			l.active, l.activeSeg = nil, nil
		}
		if seg == l.rd.seg {
			l.rd.close()
		}
		if f, ok := l.unsynced[seg]; ok {
			_ = f.Close()
			delete(l.unsynced, seg)
		}
		if err := os.Remove(segPath(l.dir, seg.num)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove segment: %w", err))
		}
		n++
	}
	l.segs = l.segs[n:]
	return errors.Join(errs...)
}

// read returns up to max records with sequence numbers >= from, in order.
// A bad frame cuts its segment short (the records after it are skipped,
// which the caller sees as a gap in sequence numbers); the records read so
// far are returned with the error.
func (l *segLog) read(from uint64, limit int) ([]entry, error) {
	var out []entry
	var errs []error
	if !l.positioned(from) {
		l.rd.close()
	}
	for len(out) < limit {
		if l.rd.seg == nil {
			if err := l.seek(from); err != nil {
				errs = append(errs, err)
				break
			}
			if l.rd.seg == nil {
				break
			}
		}
		seg := l.rd.seg
		if l.rd.idx >= seg.count {
			from = max(from, seg.end)
			l.rd.close()
			continue
		}
		body, err := readFrame(l.rd.br, l.rd.body)
		var e entry
		if err == nil {
			l.rd.body = body
			e, err = decodeEntry(body)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("read segment %016x frame %d: %w", seg.num, l.rd.idx, err))
			from = max(from, seg.end)
			l.cut(seg, l.rd.idx)
			continue
		}
		l.rd.idx++
		l.rd.last = e.seq
		if e.seq < from {
			continue
		}
		out = append(out, e)
		from = e.seq + 1
	}
	return out, errors.Join(errs...)
}

// positioned reports whether the reader's next frame is the first one with
// a sequence number >= from.
func (l *segLog) positioned(from uint64) bool {
	if l.rd.seg == nil || l.firstSeg(from) != l.rd.seg {
		return false
	}
	return l.rd.idx == 0 || from > l.rd.last
}

// firstSeg is the first segment holding a record >= from, or nil.
func (l *segLog) firstSeg(from uint64) *segment {
	for _, seg := range l.segs {
		if seg.count > 0 && seg.end > from {
			return seg
		}
	}
	return nil
}

// seek opens the first segment holding a record >= from.
func (l *segLog) seek(from uint64) error {
	l.rd.close()
	seg := l.firstSeg(from)
	if seg == nil {
		return nil
	}
	f, err := os.Open(segPath(l.dir, seg.num))
	if err != nil {
		return fmt.Errorf("open segment for reading: %w", err)
	}
	l.rd = segReader{seg: seg, f: f, br: bufio.NewReaderSize(f, readBufSize), body: l.rd.body}
	return nil
}

// cut logically ends seg before frame idx after a read error.
func (l *segLog) cut(seg *segment, idx int) {
	if seg == l.activeSeg {
		// Appending after the bad frame would hide the new records from
		// the scan on the next open.
		_ = l.active.Close()
		l.active, l.activeSeg = nil, nil
	}
	seg.count = idx
	if idx > 0 && l.rd.seg == seg {
		seg.end = l.rd.last + 1
	} else {
		seg.end = seg.first
	}
	l.rd.close()
}

func (r *segReader) close() {
	if r.f != nil {
		_ = r.f.Close()
	}
	*r = segReader{body: r.body}
}

// firstFrom returns the sequence number of the first record >= from that the
// log holds, or false.
func (l *segLog) firstFrom(from uint64) (uint64, bool) {
	if seg := l.firstSeg(from); seg != nil {
		return max(seg.first, from), true
	}
	return 0, false
}

// bytes is the size of the valid frames of every segment.
func (l *segLog) bytes() int64 {
	var n int64
	for _, seg := range l.segs {
		n += seg.size
	}
	return n
}

// syncAll fsyncs the active segment and the head file if anything changed.
func (l *segLog) syncAll() error {
	if !l.dirty {
		return nil
	}
	var errs []error
	for seg, f := range l.unsynced {
		if err := f.Sync(); err != nil {
			errs = append(errs, fmt.Errorf("sync segment: %w", err))
			continue
		}
		_ = f.Close()
		delete(l.unsynced, seg)
	}
	if l.active != nil {
		if err := l.active.Sync(); err != nil {
			errs = append(errs, fmt.Errorf("sync segment: %w", err))
		}
	}
	if l.dirDirty {
		if err := syncDir(l.dir); err != nil {
			errs = append(errs, err)
		} else {
			l.dirDirty = false
		}
	}
	if err := l.head.Sync(); err != nil {
		errs = append(errs, fmt.Errorf("sync cache head: %w", err))
	}
	if len(errs) == 0 {
		l.dirty = false
	}
	return errors.Join(errs...)
}

// close releases every file without syncing.
func (l *segLog) close() error {
	l.rd.close()
	var errs []error
	for seg, f := range l.unsynced {
		errs = append(errs, f.Close())
		delete(l.unsynced, seg)
	}
	if l.active != nil {
		errs = append(errs, l.active.Close())
		l.active, l.activeSeg = nil, nil
	}
	if l.head != nil {
		errs = append(errs, l.head.Close())
		l.head = nil
	}
	return errors.Join(errs...)
}
