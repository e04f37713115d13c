package mqtt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// MQTT 3.1/3.1.1 control packet types (the high nibble of the first byte).
const (
	pktConnect     byte = 1
	pktConnack     byte = 2
	pktPublish     byte = 3
	pktPuback      byte = 4
	pktPubrec      byte = 5
	pktPubrel      byte = 6
	pktPubcomp     byte = 7
	pktSubscribe   byte = 8
	pktSuback      byte = 9
	pktUnsubscribe byte = 10
	pktUnsuback    byte = 11
	pktPingreq     byte = 12
	pktPingresp    byte = 13
	pktDisconnect  byte = 14
)

// maxRemaining is the largest remaining length four bytes can encode.
const maxRemaining = 268_435_455

// smallBody is the size up to which a packet body is read in one
// allocation; beyond it the body grows as bytes arrive, so a corrupt length
// cannot make the reader allocate hundreds of megabytes up front.
const smallBody = 64 << 10

var errMalformed = errors.New("malformed packet")

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errMalformed, fmt.Sprintf(format, args...))
}

// appendRemaining appends n as an MQTT variable byte integer.
func appendRemaining(b []byte, n int) []byte {
	for {
		d := byte(n & 0x7f)
		n >>= 7
		if n > 0 {
			d |= 0x80
		}
		b = append(b, d)
		if n == 0 {
			return b
		}
	}
}

// appendString appends s with its two-byte length prefix.
func appendString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

// publishPacket is a decoded PUBLISH.
type publishPacket struct {
	topic   string
	id      uint16
	qos     byte
	retain  bool
	dup     bool
	payload []byte
}

// publishSize is the remaining length of a PUBLISH, or an error when the
// packet cannot be encoded.
func publishSize(topic string, payload []byte, qos byte) (int, error) {
	if len(topic) > 0xffff {
		return 0, fmt.Errorf("topic of %d bytes exceeds 65535", len(topic))
	}
	n := 2 + len(topic) + len(payload)
	if qos > 0 {
		n += 2
	}
	if n > maxRemaining {
		return 0, fmt.Errorf("packet of %d bytes exceeds the MQTT limit of %d", n, maxRemaining)
	}
	return n, nil
}

// appendPublish appends a PUBLISH packet; the caller checked the sizes with
// publishSize. id is written only for QoS 1 and 2.
func appendPublish(b []byte, p *publishPacket) []byte {
	h := pktPublish<<4 | p.qos<<1
	if p.dup {
		h |= 0x08
	}
	if p.retain {
		h |= 0x01
	}
	n := 2 + len(p.topic) + len(p.payload)
	if p.qos > 0 {
		n += 2
	}
	b = append(b, h)
	b = appendRemaining(b, n)
	b = appendString(b, p.topic)
	if p.qos > 0 {
		b = binary.BigEndian.AppendUint16(b, p.id)
	}
	return append(b, p.payload...)
}

// appendAck appends PUBACK, PUBREC, PUBREL or PUBCOMP for id. PUBREL
// carries the fixed flags 0010.
func appendAck(b []byte, typ byte, id uint16) []byte {
	h := typ << 4
	if typ == pktPubrel {
		h |= 0x02
	}
	return append(b, h, 2, byte(id>>8), byte(id))
}

// connectPacket is the content of a CONNECT.
type connectPacket struct {
	level     byte // 3 (MQTT 3.1, "MQIsdp") or 4 (3.1.1, "MQTT")
	clientID  string
	username  string
	password  string
	clean     bool
	keepAlive uint16 // seconds
}

func appendConnect(b []byte, c connectPacket) ([]byte, error) {
	name := "MQTT"
	if c.level == 3 {
		name = "MQIsdp"
	}
	var flags byte
	if c.clean {
		flags |= 0x02
	}
	// A password needs the user name flag; an empty name is still a name.
	if c.username != "" || c.password != "" {
		flags |= 0x80
	}
	if c.password != "" {
		flags |= 0x40
	}
	var body []byte
	body = appendString(body, name)
	body = append(body, c.level, flags)
	body = binary.BigEndian.AppendUint16(body, c.keepAlive)
	for _, s := range []string{c.clientID, c.username, c.password} {
		if len(s) > 0xffff {
			return b, errors.New("connect: field longer than 65535 bytes")
		}
	}
	body = appendString(body, c.clientID)
	if flags&0x80 != 0 {
		body = appendString(body, c.username)
	}
	if flags&0x40 != 0 {
		body = appendString(body, c.password)
	}
	b = append(b, pktConnect<<4)
	b = appendRemaining(b, len(body))
	return append(b, body...), nil
}

// appendSubscribe appends a SUBSCRIBE for filters with the matching QoS.
func appendSubscribe(b []byte, id uint16, filters []string, qos []byte) ([]byte, error) {
	n := 2
	for _, f := range filters {
		if len(f) > 0xffff {
			return b, fmt.Errorf("topic filter of %d bytes exceeds 65535", len(f))
		}
		n += 2 + len(f) + 1
	}
	if n > maxRemaining {
		return b, errors.New("subscribe packet too large")
	}
	b = append(b, pktSubscribe<<4|0x02)
	b = appendRemaining(b, n)
	b = binary.BigEndian.AppendUint16(b, id)
	for i, f := range filters {
		b = appendString(b, f)
		b = append(b, qos[i])
	}
	return b, nil
}

// appendUnsubscribe appends an UNSUBSCRIBE for filters.
func appendUnsubscribe(b []byte, id uint16, filters []string) ([]byte, error) {
	n := 2
	for _, f := range filters {
		if len(f) > 0xffff {
			return b, fmt.Errorf("topic filter of %d bytes exceeds 65535", len(f))
		}
		n += 2 + len(f)
	}
	if n > maxRemaining {
		return b, errors.New("unsubscribe packet too large")
	}
	b = append(b, pktUnsubscribe<<4|0x02)
	b = appendRemaining(b, n)
	b = binary.BigEndian.AppendUint16(b, id)
	for _, f := range filters {
		b = appendString(b, f)
	}
	return b, nil
}

// packetReader is what readPacket reads from: a bufio.Reader.
type packetReader interface {
	io.Reader
	io.ByteReader
}

// readPacket reads one control packet and returns its type, its fixed
// header flags and its body. A PUBLISH body is freshly allocated (the
// payload is handed on); other bodies reuse scratch when it is big enough.
func readPacket(r packetReader, scratch []byte) (typ, flags byte, body []byte, err error) {
	typ, flags, body, _, err = readPacketInto(r, scratch, nil)
	return typ, flags, body, err
}

// readPacketInto is readPacket taking PUBLISH bodies from bodies when it
// is set; inArena reports whether body lies in the arena's chunk.
func readPacketInto(r packetReader, scratch []byte, bodies *bodyArena) (typ, flags byte, body []byte, inArena bool, err error) {
	h, err := r.ReadByte()
	if err != nil {
		return 0, 0, nil, false, err
	}
	n, err := readRemaining(r)
	if err != nil {
		return 0, 0, nil, false, err
	}
	typ, flags = h>>4, h&0x0f
	switch {
	case typ == pktPublish && bodies != nil && n <= bodyArenaMax:
		body, inArena = bodies.take(n)
		_, err = io.ReadFull(r, body)
	case typ == pktPublish || n > cap(scratch):
		body, err = readBody(r, n)
	default:
		body = scratch[:n]
		_, err = io.ReadFull(r, body)
	}
	if err != nil {
		return 0, 0, nil, false, unexpectedEOF(err)
	}
	return typ, flags, body, inArena, nil
}

// readRemaining reads a variable byte integer of at most four bytes.
func readRemaining(r io.ByteReader) (int, error) {
	n, shift := 0, 0
	for i := 0; ; i++ {
		if i == 4 {
			return 0, malformed("remaining length longer than 4 bytes")
		}
		d, err := r.ReadByte()
		if err != nil {
			return 0, unexpectedEOF(err)
		}
		n |= int(d&0x7f) << shift
		if d&0x80 == 0 {
			return n, nil
		}
		shift += 7
	}
}

func readBody(r io.Reader, n int) ([]byte, error) {
	if n <= smallBody {
		b := make([]byte, n)
		_, err := io.ReadFull(r, b)
		return b, err
	}
	var buf bytes.Buffer
	buf.Grow(smallBody)
	m, err := io.CopyN(&buf, r, int64(n))
	if err != nil || int(m) != n {
		return nil, io.ErrUnexpectedEOF
	}
	return buf.Bytes(), nil
}

// unexpectedEOF turns an EOF inside a packet into io.ErrUnexpectedEOF.
func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// topicCache remembers the last topic decoded, so a stream of messages on
// one topic allocates its string once.
type topicCache struct{ last string }

func (c *topicCache) get(b []byte) string {
	if c == nil {
		return string(b)
	}
	if string(b) != c.last {
		c.last = string(b)
	}
	return c.last
}

// decodePublish decodes a PUBLISH body; topics may be nil. The payload
// aliases body.
func decodePublish(flags byte, body []byte, topics *topicCache) (publishPacket, error) {
	p := publishPacket{qos: flags >> 1 & 0x03, retain: flags&0x01 != 0, dup: flags&0x08 != 0}
	if p.qos == 3 {
		return p, malformed("publish with QoS 3")
	}
	if len(body) < 2 {
		return p, malformed("publish shorter than its topic length")
	}
	tl := int(binary.BigEndian.Uint16(body))
	rest := body[2:]
	if len(rest) < tl {
		return p, malformed("publish topic of %d bytes, %d left", tl, len(rest))
	}
	p.topic = topics.get(rest[:tl])
	rest = rest[tl:]
	if p.qos > 0 {
		if len(rest) < 2 {
			return p, malformed("publish without packet identifier")
		}
		p.id = binary.BigEndian.Uint16(rest)
		if p.id == 0 {
			return p, malformed("publish with packet identifier 0")
		}
		rest = rest[2:]
	}
	p.payload = rest
	return p, nil
}

// decodeID decodes the body of PUBACK, PUBREC, PUBREL, PUBCOMP and
// UNSUBACK: a packet identifier.
func decodeID(body []byte) (uint16, error) {
	if len(body) != 2 {
		return 0, malformed("acknowledgement of %d bytes, want 2", len(body))
	}
	return binary.BigEndian.Uint16(body), nil
}

// decodeConnack returns the session present flag and the return code.
func decodeConnack(body []byte) (bool, byte, error) {
	if len(body) != 2 {
		return false, 0, malformed("connack of %d bytes, want 2", len(body))
	}
	return body[0]&0x01 != 0, body[1], nil
}

// decodeSuback returns the packet identifier and the return codes, one per
// filter of the SUBSCRIBE. codes aliases body.
func decodeSuback(body []byte) (uint16, []byte, error) {
	if len(body) < 3 {
		return 0, nil, malformed("suback of %d bytes", len(body))
	}
	return binary.BigEndian.Uint16(body), body[2:], nil
}

// connackError is a CONNACK refusal. The texts are those paho.mqtt.golang
// used, so logs and status errors read as before.
type connackError byte

func (c connackError) Error() string {
	switch c {
	case 1:
		return "unacceptable protocol version"
	case 2:
		return "identifier rejected"
	case 3:
		return "server unavailable"
	case 4:
		return "bad user name or password"
	case 5:
		return "not authorized"
	}
	return fmt.Sprintf("connection refused (return code %d)", byte(c))
}

// connackErr maps a CONNACK return code to an error; refusals that
// retrying cannot fix are permanent.
func connackErr(code byte) error {
	switch code {
	case 0:
		return nil
	case 1, 2, 4, 5:
		return permanentErr{connackError(code)}
	}
	return connackError(code)
}
