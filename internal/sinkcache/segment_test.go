package sinkcache

import (
	"bytes"
	"errors"
	"io"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/api"
)

func TestRecordRoundTrip(t *testing.T) {
	ts := time.Date(2024, 5, 1, 12, 0, 0, 123, time.UTC)
	for _, tc := range []struct {
		name string
		msg  *api.SinkMessage
	}{
		{"empty", &api.SinkMessage{}},
		{"empty rows", &api.SinkMessage{Rows: []map[string]any{}, Payload: []byte{}}},
		{"values", &api.SinkMessage{
			Rows: []map[string]any{
				{"i": int64(-7), "f": 1.5, "s": "x", "b": true, "n": nil, "raw": []byte{0, 1}, "t": ts,
					"arr": []any{int64(1), "two"}, "obj": map[string]any{"k": 2.0}},
				{"i": int64(1)},
			},
			Payload: []byte(`[{"i":-7}]`),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			frame := appendFrame(nil, entry{seq: 42, at: 1700, msg: tc.msg})
			body, err := readFrame(bytes.NewReader(frame), nil)
			if err != nil {
				t.Fatal(err)
			}
			e, err := decodeEntry(body)
			if err != nil {
				t.Fatal(err)
			}
			if e.seq != 42 || e.at != 1700 {
				t.Errorf("seq/at = %d/%d", e.seq, e.at)
			}
			if !reflect.DeepEqual(e.msg, tc.msg) {
				t.Errorf("round trip:\n got %#v\nwant %#v", e.msg, tc.msg)
			}
		})
	}
}

func TestReadFrameErrors(t *testing.T) {
	good := appendFrame(nil, entry{seq: 1, msg: msg(1)})
	flipped := bytes.Clone(good)
	flipped[len(flipped)-1] ^= 1
	for _, tc := range []struct {
		name string
		in   []byte
		want error
	}{
		{"clean end", nil, io.EOF},
		{"short header", good[:5], errBadFrame},
		{"short body", good[:len(good)-1], errBadFrame},
		{"checksum", flipped, errBadFrame},
		{"zero length", make([]byte, frameHeader), errBadFrame},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := readFrame(bytes.NewReader(tc.in), nil); !errors.Is(err, tc.want) {
				t.Errorf("readFrame = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestSegLog(t *testing.T) {
	dir := t.TempDir()
	l, info, err := openLog(dir, SyncNone, 3)
	if err != nil {
		t.Fatal(err)
	}
	if info != (openInfo{}) {
		t.Fatalf("fresh log info: %+v", info)
	}
	// Sequence numbers with a gap (5, 6 never written) as after a failing
	// disk.
	for _, s := range []uint64{0, 1, 2, 3, 4, 7, 8} {
		if err := l.append(entry{seq: s, msg: msg(int(s))}); err != nil {
			t.Fatal(err)
		}
	}
	if len(l.segs) != 3 {
		t.Fatalf("segments: %d, want 3", len(l.segs))
	}
	for _, tc := range []struct {
		from  uint64
		limit int
		want  []int64
	}{
		{0, 2, []int64{0, 1}},
		{2, 10, []int64{2, 3, 4, 7, 8}},
		{5, 10, []int64{7, 8}},
		{1, 1, []int64{1}}, // backwards seek
		{9, 10, nil},
	} {
		recs, err := l.read(tc.from, tc.limit)
		if err != nil {
			t.Fatal(err)
		}
		var got []int64
		for _, e := range recs {
			got = append(got, int64(e.seq))
		}
		if !equal(got, tc.want) {
			t.Errorf("read(%d, %d) = %v, want %v", tc.from, tc.limit, got, tc.want)
		}
	}
	if err := l.writeHead(4); err != nil {
		t.Fatal(err)
	}
	if err := l.removeBefore(4); err != nil {
		t.Fatal(err)
	}
	if len(l.segs) != 2 {
		t.Errorf("after removeBefore(4): %d segments, want 2", len(l.segs))
	}
	if err := l.close(); err != nil {
		t.Fatal(err)
	}

	l2, info, err := openLog(dir, SyncNone, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.close()
	if info.head != 4 || info.tail != 9 || info.torn != 0 {
		t.Errorf("reopen info: %+v", info)
	}
	if first, ok := l2.firstFrom(info.head); !ok || first != 4 {
		t.Errorf("firstFrom(4) = %d, %v", first, ok)
	}
}

func TestScanCutsTornTail(t *testing.T) {
	dir := t.TempDir()
	l, _, err := openLog(dir, SyncNone, 10)
	if err != nil {
		t.Fatal(err)
	}
	for s := range uint64(3) {
		if err := l.append(entry{seq: s, msg: msg(int(s))}); err != nil {
			t.Fatal(err)
		}
	}
	good := l.segs[0].size
	l.close()
	f, err := os.OpenFile(segPath(dir, 0), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	torn := appendFrame(nil, entry{seq: 3, msg: msg(3)})
	f.Write(torn[:len(torn)/2])
	f.Close()

	l2, info, err := openLog(dir, SyncNone, 10)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.close()
	if info.torn != 1 || info.tail != 3 {
		t.Errorf("info: %+v", info)
	}
	fi, _ := os.Stat(segPath(dir, 0))
	if fi.Size() != good {
		t.Errorf("segment size %d after cut, want %d", fi.Size(), good)
	}
	// Appends after the reopen go to a new segment.
	if err := l2.append(entry{seq: 3, msg: msg(3)}); err != nil {
		t.Fatal(err)
	}
	if len(l2.segs) != 2 {
		t.Errorf("segments: %d, want 2", len(l2.segs))
	}
}
