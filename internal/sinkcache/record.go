package sinkcache

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/value"
)

// A segment file is a sequence of frames:
//
//	u32 LE  length of body
//	u32 LE  CRC-32C of body
//	body:   version byte, seq uvarint, accepted-at varint (unix ms),
//	        flags byte, row count uvarint, rows (value.AppendObject each),
//	        payload (value.AppendValue of []byte or nil)
//
// A frame that is short or fails its CRC ends the readable part of the
// segment (a torn tail after a crash).
const (
	frameHeader   = 8
	recordVersion = 1
	maxFrameBody  = 256 << 20
	flagRowsNil   = 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errBadFrame marks a short or corrupt frame.
var errBadFrame = errors.New("bad frame")

// entry is one cached record.
type entry struct {
	seq uint64
	at  int64 // unix ms when the cache accepted it
	msg *api.SinkMessage
}

// appendFrame appends the frame of e to buf.
func appendFrame(buf []byte, e entry) []byte {
	start := len(buf)
	buf = append(buf, make([]byte, frameHeader)...)
	buf = append(buf, recordVersion)
	buf = binary.AppendUvarint(buf, e.seq)
	buf = binary.AppendVarint(buf, e.at)
	var flags byte
	if e.msg.Rows == nil {
		flags |= flagRowsNil
	}
	buf = append(buf, flags)
	buf = binary.AppendUvarint(buf, uint64(len(e.msg.Rows)))
	for _, row := range e.msg.Rows {
		buf = value.AppendObject(buf, row)
	}
	if e.msg.Payload == nil {
		buf = value.AppendValue(buf, nil)
	} else {
		buf = value.AppendValue(buf, e.msg.Payload)
	}
	body := buf[start+frameHeader:]
	binary.LittleEndian.PutUint32(buf[start:], uint32(len(body)))
	binary.LittleEndian.PutUint32(buf[start+4:], crc32.Checksum(body, castagnoli))
	return buf
}

// readFrame reads one frame body from r into buf (reused when large
// enough). io.EOF means a clean end; errBadFrame a torn or corrupt frame.
func readFrame(r io.Reader, buf []byte) ([]byte, error) {
	var hdr [frameHeader]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%w: short header", errBadFrame)
		}
		return nil, fmt.Errorf("read frame header: %w", err)
	}
	n := binary.LittleEndian.Uint32(hdr[:])
	if n == 0 || n > maxFrameBody {
		return nil, fmt.Errorf("%w: length %d", errBadFrame, n)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%w: short body", errBadFrame)
		}
		return nil, fmt.Errorf("read frame body: %w", err)
	}
	if crc32.Checksum(buf, castagnoli) != binary.LittleEndian.Uint32(hdr[4:]) {
		return nil, fmt.Errorf("%w: checksum mismatch", errBadFrame)
	}
	return buf, nil
}

// frameSeq decodes only the sequence number of a frame body.
func frameSeq(body []byte) (uint64, error) {
	if len(body) == 0 || body[0] != recordVersion {
		return 0, fmt.Errorf("%w: unknown record version", errBadFrame)
	}
	seq, n := binary.Uvarint(body[1:])
	if n <= 0 {
		return 0, fmt.Errorf("%w: bad sequence number", errBadFrame)
	}
	return seq, nil
}

// decodeEntry decodes a frame body.
func decodeEntry(body []byte) (entry, error) {
	if len(body) == 0 || body[0] != recordVersion {
		return entry{}, fmt.Errorf("%w: unknown record version", errBadFrame)
	}
	r := value.NewReader(body[1:])
	e := entry{seq: r.Uvarint(), at: r.Varint(), msg: &api.SinkMessage{}}
	flags := r.Byte()
	n := r.Uvarint()
	if r.Err() == nil && n > uint64(r.Len()) {
		return entry{}, fmt.Errorf("%w: %d rows in %d bytes", errBadFrame, n, r.Len())
	}
	if flags&flagRowsNil == 0 {
		e.msg.Rows = make([]map[string]any, 0, n)
	}
	for i := uint64(0); i < n && r.Err() == nil; i++ {
		e.msg.Rows = append(e.msg.Rows, r.Object())
	}
	switch p := r.Value().(type) {
	case nil:
	case []byte:
		if p == nil {
			p = []byte{}
		}
		e.msg.Payload = p
	default:
		return entry{}, fmt.Errorf("%w: payload is %T", errBadFrame, p)
	}
	if err := r.Err(); err != nil {
		return entry{}, fmt.Errorf("decode cached record: %w", err)
	}
	return e, nil
}
