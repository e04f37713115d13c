package mqtt

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/panics"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

func tcpPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	acc := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		acc <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-acc
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// TestBufConnOrderAndFlushOnClose: every write arrives, in order, including
// those still pending when Close is called.
func TestBufConnOrderAndFlushOnClose(t *testing.T) {
	c, s := tcpPair(t)
	b := newBufConn(c, 5*time.Second, 0)
	var want bytes.Buffer
	got := make(chan []byte, 1)
	go func() {
		all, _ := io.ReadAll(s)
		got <- all
	}()
	for i := range 20000 {
		p := []byte(fmt.Sprintf("packet-%d;", i))
		want.Write(p)
		if n, err := b.Write(p); err != nil || n != len(p) {
			t.Fatalf("write %d: n %d err %v", i, n, err)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if all := <-got; !bytes.Equal(all, want.Bytes()) {
		t.Fatalf("received %d bytes, want %d (or different content)", len(all), want.Len())
	}
	if _, err := b.Write([]byte("late")); err == nil {
		t.Fatal("write after close succeeded")
	}
}

// TestBufConnBackpressureAndError: a peer that does not read makes Write
// block at the limit instead of buffering without bound; once the peer is
// gone, writes fail.
func TestBufConnBackpressureAndError(t *testing.T) {
	c, s := tcpPair(t)
	b := newBufConn(c, 200*time.Millisecond, 0)
	b.limit = 64 << 10
	chunk := make([]byte, 16<<10)
	blocked := make(chan error, 1)
	go func() {
		for {
			if _, err := b.Write(chunk); err != nil {
				blocked <- err
				return
			}
		}
	}()
	// The socket buffers fill, the flush times out, the conn fails.
	select {
	case err := <-blocked:
		if err == nil {
			t.Fatal("nil error")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("writes neither blocked into an error nor failed")
	}
	b.mu.Lock()
	n := len(b.pending)
	b.mu.Unlock()
	if n > b.limit {
		t.Fatalf("%d bytes pending, limit %d", n, b.limit)
	}
	s.Close()
	_ = b.Close()
}

// TestBufConnReadsThroughBuffer: many small packets from the peer are read
// back intact through the buffer.
func TestBufConnReadsThroughBuffer(t *testing.T) {
	c, s := tcpPair(t)
	b := newBufConn(c, time.Second, 0)
	defer b.Close()
	var want bytes.Buffer
	for i := range 5000 {
		fmt.Fprintf(&want, "m%d,", i)
	}
	go func() { _, _ = s.Write(want.Bytes()) }()
	buf := make([]byte, want.Len())
	for i := range buf {
		if _, err := io.ReadFull(b, buf[i:i+1]); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(buf, want.Bytes()) {
		t.Fatal("bytes differ")
	}
}

func TestPacketBuffered(t *testing.T) {
	long := append([]byte{pktPublish << 4, 0x80, 0x01}, make([]byte, 128)...) // remaining length 128
	cases := []struct {
		name string
		data []byte
		want bool
	}{
		{"empty", nil, false},
		{"header byte only", []byte{pktPingresp << 4}, false},
		{"pingresp", []byte{pktPingresp << 4, 0}, true},
		{"puback missing id", []byte{pktPuback << 4, 2, 0}, false},
		{"puback", []byte{pktPuback << 4, 2, 0, 1}, true},
		{"two-byte length, body short", long[:100], false},
		{"two-byte length, complete", long, true},
		{"length continues past buffer", []byte{pktPublish << 4, 0x80}, false},
	}
	for _, c := range cases {
		r := bufio.NewReader(bytes.NewReader(c.data))
		if len(c.data) > 0 {
			_, _ = r.Peek(len(c.data)) // fill the buffer
		}
		if got := packetBuffered(r); got != c.want {
			t.Errorf("%s: packetBuffered = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestPacedReaderSpacesReads(t *testing.T) {
	client, server := tcpPair(t)
	b := newBufConn(client, time.Second, 30*time.Millisecond)
	defer b.Close()
	if _, err := server.Write([]byte("a")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	// Taken before the first read returns: the second returns at least
	// the pace after it, so at least the pace after start.
	start := time.Now()
	if n, err := b.Read(buf); err != nil || n != 1 {
		t.Fatalf("first read: %d %v", n, err)
	}
	if _, err := server.Write([]byte("b")); err != nil {
		t.Fatal(err)
	}
	if _, err := server.Write([]byte("c")); err != nil {
		t.Fatal(err)
	}
	n, err := b.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	// The second read waits out the pace, so both writes arrive in it.
	if string(buf[:n]) != "bc" {
		t.Fatalf("second read %q, want both bytes written during the pace", buf[:n])
	}
	if waited := time.Since(start); waited < 30*time.Millisecond {
		t.Fatalf("second read after %s, before the pace", waited)
	}
}

// panicConn is a connection whose writes panic (a bug in a layer under
// the MQTT client, such as TLS).
type panicConn struct{ net.Conn }

func (panicConn) Write([]byte) (int, error) { panic("tls layer bug") }

// TestBufConnFlusherPanic: a panic on the flusher goroutine fails the
// connection like a write error (later writes return it, the reader sees
// the connection closed) instead of ending the process.
func TestBufConnFlusherPanic(t *testing.T) {
	c, _ := tcpPair(t)
	b := newBufConn(panicConn{c}, time.Second, 0)
	defer b.Close()
	if _, err := b.Write([]byte("connect")); err != nil {
		t.Fatalf("first write is buffered: %v", err)
	}
	select {
	case <-b.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the flusher did not end after its panic")
	}
	_, err := b.Write([]byte("publish"))
	if !panics.Is(err) || err.Error() != "panic: mqtt write: tls layer bug" {
		t.Fatalf("write after the panic: %v; want the flusher's panic", err)
	}
	if _, err := b.Read(make([]byte, 1)); err == nil {
		t.Fatal("read succeeded on a connection whose flusher panicked")
	}
}

// TestBufConnHold: holding bytes does not wake the flusher; writeHeld
// writes them on the caller's goroutine, and holdMax bytes wake the
// flusher; packets of writers that hold and writers that do not, on
// several goroutines, arrive whole and each writer's in its order.
func TestBufConnHold(t *testing.T) {
	t.Run("held until writeHeld", func(t *testing.T) {
		c, s := tcpPair(t)
		b := newBufConn(c, 5*time.Second, 0)
		defer b.Close()
		r := bufio.NewReader(s)
		for round := range 3 {
			var want bytes.Buffer
			for i := range 10 {
				p := []byte(fmt.Sprintf("r%d-p%d;", round, i))
				want.Write(p)
				if err := b.hold(p); err != nil {
					t.Fatal(err)
				}
			}
			// hold wakes nobody (the flusher may still take held bytes
			// if it happens to look, which only sends them sooner).
			if n := len(b.wake); n != 0 {
				t.Fatalf("round %d: hold woke the flusher", round)
			}
			if err := b.writeHeld(); err != nil {
				t.Fatal(err)
			}
			got := make([]byte, want.Len())
			if _, err := io.ReadFull(r, got); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want.Bytes()) {
				t.Fatalf("round %d: received %q, want %q", round, got, want.Bytes())
			}
		}
	})
	t.Run("holdMax wakes the flusher", func(t *testing.T) {
		c, s := tcpPair(t)
		b := newBufConn(c, 5*time.Second, 0)
		defer b.Close()
		p := bytes.Repeat([]byte("x"), 1000)
		// Hold until holdMax bytes are pending and hold wakes the flusher.
		// Counting the bytes held is not enough: the flusher may take
		// some when it first looks (as it starts), and what is held after
		// that stays pending, unwoken, until holdMax is reached again.
		var want int
		for b.writeWakes.Load() == 0 {
			if err := b.hold(p); err != nil {
				t.Fatal(err)
			}
			want += len(p)
		}
		// No writeHeld: the flusher must write them all by itself.
		got := make([]byte, want)
		if _, err := io.ReadFull(s, got); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("order across writers", func(t *testing.T) {
		c, s := tcpPair(t)
		b := newBufConn(c, 5*time.Second, 0)
		const writers, packets = 4, 5000
		got := make(chan []byte, 1)
		go func() {
			all, _ := io.ReadAll(s)
			got <- all
		}()
		done := make(chan error, writers)
		for w := range writers {
			go func() {
				for i := range packets {
					p := []byte(fmt.Sprintf("<%d:%d>", w, i))
					var err error
					switch {
					case w%2 == 0:
						_, err = b.Write(p)
					case i%7 == 6:
						err = b.hold(p)
						if err == nil {
							err = b.writeHeld()
						}
					default:
						err = b.hold(p)
					}
					if err != nil {
						done <- err
						return
					}
				}
				done <- b.writeHeld()
			}()
		}
		for range writers {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		all := <-got
		next := make([]int, writers)
		for len(all) > 0 {
			var w, i int
			n, err := fmt.Sscanf(string(all), "<%d:%d>", &w, &i)
			if err != nil || n != 2 || w < 0 || w >= writers {
				t.Fatalf("torn packet at %q", all[:min(len(all), 20)])
			}
			if i != next[w] {
				t.Fatalf("writer %d: packet %d arrived when %d was due", w, i, next[w])
			}
			next[w]++
			all = all[bytes.IndexByte(all, '>')+1:]
		}
		for w, n := range next {
			if n != packets {
				t.Fatalf("writer %d: %d packets arrived, want %d", w, n, packets)
			}
		}
	})
}

// TestPacedReaderWakesForOneByte: a paced reader raises the socket's
// receive low-water mark only while it sleeps; a read that then finds
// nothing waits with the mark at one byte, so a lone small packet arriving
// later still wakes it.
func TestPacedReaderWakesForOneByte(t *testing.T) {
	c, s := tcpPair(t)
	b := newBufConn(c, 5*time.Second, 5*time.Millisecond)
	defer b.Close()
	if pr, ok := b.lowatOf(); !ok || (runtime.GOOS == "linux" && !pr) {
		t.Fatalf("paced reader %v, low-water mark set %v", ok, pr)
	}
	got := make(chan byte)
	go func() {
		for {
			x, err := b.r.ReadByte()
			if err != nil {
				close(got)
				return
			}
			got <- x
		}
	}()
	for i := range 5 {
		// Each byte goes out once the previous one was read and the
		// reader slept its pace and found nothing: it waits in the poller
		// when the byte arrives. (Were the mark left high, it would never
		// wake.)
		testwait.Until(t, "the reader to wait in the poller", func() bool {
			return pacedReadWaits("TestPacedReaderWakesForOneByte")
		})
		if _, err := s.Write([]byte{byte('a' + i)}); err != nil {
			t.Fatal(err)
		}
		if x, ok := <-got; !ok || x != byte('a'+i) {
			t.Fatalf("byte %d: got %q (ok %v)", i, x, ok)
		}
	}
}

// pacedReadWaits reports whether a goroutine started by the function named
// startedBy waits in the network poller inside a paced read.
func pacedReadWaits(startedBy string) bool {
	buf := make([]byte, 64<<10)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	for _, g := range strings.Split(string(buf), "\n\n") {
		header, _, _ := strings.Cut(g, "\n")
		if strings.Contains(header, "[IO wait") && strings.Contains(g, "(*pacedReader).Read") && strings.Contains(g, startedBy) {
			return true
		}
	}
	return false
}
