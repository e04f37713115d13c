package mqtt

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestRemainingLength(t *testing.T) {
	cases := []struct {
		n    int
		want []byte
	}{
		{0, []byte{0x00}},
		{127, []byte{0x7f}},
		{128, []byte{0x80, 0x01}},
		{16383, []byte{0xff, 0x7f}},
		{16384, []byte{0x80, 0x80, 0x01}},
		{2097151, []byte{0xff, 0xff, 0x7f}},
		{2097152, []byte{0x80, 0x80, 0x80, 0x01}},
		{maxRemaining, []byte{0xff, 0xff, 0xff, 0x7f}},
	}
	for _, c := range cases {
		got := appendRemaining(nil, c.n)
		if !bytes.Equal(got, c.want) {
			t.Errorf("appendRemaining(%d) = % x, want % x", c.n, got, c.want)
		}
		n, err := readRemaining(bytes.NewReader(got))
		if err != nil || n != c.n {
			t.Errorf("readRemaining(% x) = %d, %v, want %d", got, n, err, c.n)
		}
	}
	if _, err := readRemaining(bytes.NewReader([]byte{0x80, 0x80, 0x80, 0x80, 0x01})); !errors.Is(err, errMalformed) {
		t.Errorf("five-byte length: err = %v, want malformed", err)
	}
	if _, err := readRemaining(bytes.NewReader([]byte{0x80, 0x80})); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("truncated length: err = %v, want unexpected EOF", err)
	}
}

// TestPublishRoundTrip encodes PUBLISH packets whose remaining length sits
// on each side of the one-, two- and three-byte boundaries and reads them
// back.
func TestPublishRoundTrip(t *testing.T) {
	for _, remaining := range []int{127, 128, 16383, 16384, 70000} {
		for _, qos := range []byte{0, 1, 2} {
			topic := "a/b"
			over := 2 + len(topic)
			if qos > 0 {
				over += 2
			}
			in := publishPacket{topic: topic, qos: qos, retain: qos == 1, dup: qos == 2, payload: bytes.Repeat([]byte{'x'}, remaining-over)}
			if qos > 0 {
				in.id = 0xfffe
			}
			n, err := publishSize(in.topic, in.payload, in.qos)
			if err != nil || n != remaining {
				t.Fatalf("publishSize = %d, %v, want %d", n, err, remaining)
			}
			pkt := appendPublish(nil, &in)
			if want := 1 + len(appendRemaining(nil, remaining)) + remaining; len(pkt) != want {
				t.Fatalf("remaining %d qos %d: packet of %d bytes, want %d", remaining, qos, len(pkt), want)
			}
			typ, flags, body, err := readPacket(bufio.NewReader(bytes.NewReader(pkt)), make([]byte, 16))
			if err != nil || typ != pktPublish || len(body) != remaining {
				t.Fatalf("readPacket: type %d, body %d bytes, %v", typ, len(body), err)
			}
			out, err := decodePublish(flags, body, &topicCache{})
			if err != nil {
				t.Fatal(err)
			}
			if out.topic != in.topic || out.qos != in.qos || out.id != in.id || out.retain != in.retain || out.dup != in.dup || !bytes.Equal(out.payload, in.payload) {
				t.Fatalf("round trip: got %+v", out)
			}
			if again := appendPublish(nil, &out); !bytes.Equal(again, pkt) {
				t.Fatal("re-encoding the decoded packet differs")
			}
		}
	}
}

func TestPublishSizeLimits(t *testing.T) {
	if _, err := publishSize(strings.Repeat("t", 0x10000), nil, 0); err == nil {
		t.Error("topic of 65536 bytes accepted")
	}
	if _, err := publishSize(strings.Repeat("t", 0xffff), nil, 1); err != nil {
		t.Errorf("topic of 65535 bytes: %v", err)
	}
	big := make([]byte, maxRemaining-2-1) // exactly the limit with a one-byte topic at QoS 0
	if _, err := publishSize("t", big, 0); err != nil {
		t.Errorf("packet at the limit: %v", err)
	}
	if _, err := publishSize("t", big, 1); err == nil {
		t.Error("packet over the limit accepted")
	}
}

func TestTopicCacheReuses(t *testing.T) {
	var c topicCache
	a := c.get([]byte("s/1"))
	if allocs := testing.AllocsPerRun(100, func() { _ = c.get([]byte("s/1")) }); allocs != 0 {
		t.Errorf("same topic: %v allocations", allocs)
	}
	if b := c.get([]byte("s/2")); b != "s/2" || a != "s/1" {
		t.Errorf("topics %q %q", a, b)
	}
}

func TestConnectEncoding(t *testing.T) {
	cases := []struct {
		name string
		c    connectPacket
		want []byte
	}{
		{"3.1.1 clean, no credentials", connectPacket{level: 4, clientID: "c", clean: true, keepAlive: 30},
			[]byte{0x10, 13, 0, 4, 'M', 'Q', 'T', 'T', 4, 0x02, 0, 30, 0, 1, 'c'}},
		{"3.1 persistent with credentials", connectPacket{level: 3, clientID: "c", username: "u", password: "p", keepAlive: 60},
			[]byte{0x10, 21, 0, 6, 'M', 'Q', 'I', 's', 'd', 'p', 3, 0xc0, 0, 60, 0, 1, 'c', 0, 1, 'u', 0, 1, 'p'}},
		{"password without user name sets both flags", connectPacket{level: 4, clientID: "", password: "p", clean: true},
			[]byte{0x10, 17, 0, 4, 'M', 'Q', 'T', 'T', 4, 0xc2, 0, 0, 0, 0, 0, 0, 0, 1, 'p'}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := appendConnect(nil, c.c)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, c.want) {
				t.Fatalf("got  % x\nwant % x", got, c.want)
			}
		})
	}
	if _, err := appendConnect(nil, connectPacket{level: 4, clientID: strings.Repeat("x", 0x10000)}); err == nil {
		t.Error("client id of 65536 bytes accepted")
	}
}

func TestSubscribeEncoding(t *testing.T) {
	got, err := appendSubscribe(nil, 0x0102, []string{"a/#", "b"}, []byte{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{0x82, 12, 1, 2, 0, 3, 'a', '/', '#', 1, 0, 1, 'b', 2}
	if !bytes.Equal(got, want) {
		t.Fatalf("subscribe: got % x, want % x", got, want)
	}
	got, err = appendUnsubscribe(nil, 7, []string{"a/#", "b"})
	if err != nil {
		t.Fatal(err)
	}
	want = []byte{0xa2, 10, 0, 7, 0, 3, 'a', '/', '#', 0, 1, 'b'}
	if !bytes.Equal(got, want) {
		t.Fatalf("unsubscribe: got % x, want % x", got, want)
	}
}

func TestAckEncoding(t *testing.T) {
	for _, c := range []struct {
		typ  byte
		want []byte
	}{
		{pktPuback, []byte{0x40, 2, 0x12, 0x34}},
		{pktPubrec, []byte{0x50, 2, 0x12, 0x34}},
		{pktPubrel, []byte{0x62, 2, 0x12, 0x34}},
		{pktPubcomp, []byte{0x70, 2, 0x12, 0x34}},
	} {
		got := appendAck(nil, c.typ, 0x1234)
		if !bytes.Equal(got, c.want) {
			t.Errorf("type %d: got % x, want % x", c.typ, got, c.want)
		}
		typ, _, body, err := readPacket(bufio.NewReader(bytes.NewReader(got)), make([]byte, 4))
		if err != nil || typ != c.typ {
			t.Fatalf("read back: %d %v", typ, err)
		}
		if id, err := decodeID(body); err != nil || id != 0x1234 {
			t.Errorf("decodeID = %x, %v", id, err)
		}
	}
}

func TestDecodeMalformed(t *testing.T) {
	publishes := []struct {
		name  string
		flags byte
		body  []byte
	}{
		{"qos 3", 0x06, []byte{0, 1, 'a'}},
		{"no topic length", 0x00, []byte{0}},
		{"topic longer than body", 0x00, []byte{0, 5, 'a'}},
		{"qos 1 without id", 0x02, []byte{0, 1, 'a', 0}},
		{"qos 1 with id 0", 0x02, []byte{0, 1, 'a', 0, 0}},
	}
	for _, c := range publishes {
		if _, err := decodePublish(c.flags, c.body, nil); !errors.Is(err, errMalformed) {
			t.Errorf("publish %s: err = %v, want malformed", c.name, err)
		}
	}
	if _, err := decodeID([]byte{1}); !errors.Is(err, errMalformed) {
		t.Errorf("short ack: %v", err)
	}
	if _, err := decodeID([]byte{1, 2, 3}); !errors.Is(err, errMalformed) {
		t.Errorf("long ack: %v", err)
	}
	if _, _, err := decodeConnack([]byte{0}); !errors.Is(err, errMalformed) {
		t.Errorf("short connack: %v", err)
	}
	if _, _, err := decodeSuback([]byte{0, 1}); !errors.Is(err, errMalformed) {
		t.Errorf("suback without codes: %v", err)
	}
	// A body shorter than its declared length, small and large.
	for _, pkt := range [][]byte{{0x30, 10, 0, 1, 'a'}, append([]byte{0x30, 0xff, 0xff, 0xff, 0x7f}, 0, 1, 'a')} {
		if _, _, _, err := readPacket(bufio.NewReader(bytes.NewReader(pkt)), nil); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("truncated % x: err = %v, want unexpected EOF", pkt[:5], err)
		}
	}
	if _, _, _, err := readPacket(bufio.NewReader(bytes.NewReader(nil)), nil); err != io.EOF {
		t.Errorf("empty input: err = %v, want EOF", err)
	}
}

func TestConnackErrors(t *testing.T) {
	if connackErr(0) != nil {
		t.Fatal("code 0 is not an error")
	}
	for code, permanent := range map[byte]bool{1: true, 2: true, 3: false, 4: true, 5: true, 6: false} {
		err := connackErr(code)
		if err == nil || errors.Is(err, errPermanent) != permanent {
			t.Errorf("code %d: %v, permanent %v, want %v", code, err, errors.Is(err, errPermanent), permanent)
		}
	}
	if got := connackErr(4).Error(); got != "bad user name or password" {
		t.Errorf("code 4 text %q", got)
	}
}

// FuzzReadPacket feeds arbitrary bytes to the packet reader and decoders:
// they return errors, never panic, and a decoded PUBLISH encodes back to a
// packet that decodes to the same message.
func FuzzReadPacket(f *testing.F) {
	f.Add(appendPublish(nil, &publishPacket{topic: "a/b", qos: 1, id: 9, payload: []byte("hi")}))
	f.Add(appendAck(nil, pktPubrel, 3))
	f.Add([]byte{0x20, 2, 0, 0, 0x90, 3, 0, 1, 0x80, 0xd0, 0})
	f.Add([]byte{0x30, 0xff, 0xff, 0xff, 0x7f})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bufio.NewReader(bytes.NewReader(data))
		scratch := make([]byte, 8)
		var topics topicCache
		for range 64 {
			typ, flags, body, err := readPacket(r, scratch)
			if err != nil {
				return
			}
			switch typ {
			case pktPublish:
				p, err := decodePublish(flags, body, &topics)
				if err != nil {
					continue
				}
				pkt := appendPublish(nil, &p)
				_, f2, b2, err := readPacket(bufio.NewReader(bytes.NewReader(pkt)), nil)
				if err != nil {
					t.Fatalf("re-read: %v", err)
				}
				q, err := decodePublish(f2, b2, nil)
				if err != nil || q.topic != p.topic || q.id != p.id || q.qos != p.qos || !bytes.Equal(q.payload, p.payload) {
					t.Fatalf("round trip: %+v vs %+v (%v)", q, p, err)
				}
			case pktConnack:
				_, _, _ = decodeConnack(body)
			case pktSuback:
				_, _, _ = decodeSuback(body)
			default:
				_, _ = decodeID(body)
			}
		}
	})
}
