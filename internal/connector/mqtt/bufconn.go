package mqtt

import (
	"bufio"
	"errors"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rekuiper/rekuiper/internal/panics"
)

// bufConn cuts the system calls of a client that reads and writes one small
// packet at a time:
//
//   - reads go through a buffer, so a burst of packets costs one read;
//   - writes are appended to a buffer that a flusher goroutine writes out:
//     while it is writing, further packets gather, so under load many
//     packets leave in one write, and an idle connection adds only the
//     handoff to the flusher. Write blocks once maxPending bytes wait
//     (backpressure), and reports the first error of an earlier flush.
//
// A writer that knows more packets follow soon (a sink in the middle of a
// batch) appends with hold instead of Write: the flusher is not woken, and
// the writer calls writeHeld at the end of its batch, which writes what
// is pending on the writer's own goroutine (one system call, no hand-off)
// unless the flusher is writing already, which then takes it. Held bytes
// never wait for anything but that call, a Write from another writer, or
// holdMax bytes gathering.
//
// With a read pace, a read is not issued sooner than the pace after the
// previous one returned: packets arriving in between are read together, at
// the cost of at most the pace in latency.
//
// Close flushes what is pending, within the write timeout, before closing:
// a DISCONNECT written just before must reach the broker.
type bufConn struct {
	net.Conn
	r       *bufio.Reader
	pr      io.Reader // what r reads from: c, or a pacedReader around it
	timeout time.Duration
	limit   int // pending bytes beyond which Write blocks

	mu       sync.Mutex
	cond     *sync.Cond // signalled when pending shrinks or the flusher stops
	pending  []byte
	spare    []byte // writeHeld's buffer, while it does not write
	writing  bool   // writeHeld is writing; the flusher waits
	flushing bool   // the flusher is writing; writeHeld leaves pending to it
	err      error  // first write error; sticky
	closing  bool
	wake     chan struct{}
	// writeWakes counts the times a write (not writeHeld or Close) woke
	// the flusher: held writes below holdMax must not.
	writeWakes atomic.Int64
	done       chan struct{} // closed when the flusher returned
	once       sync.Once
}

const (
	bufConnReadSize = 64 << 10
	maxPending      = 4 << 20
	// holdMax is the most a writer may hold back before the flusher is
	// woken anyway.
	holdMax = 64 << 10
)

var errConnClosed = errors.New("connection closed")

func newBufConn(c net.Conn, writeTimeout, readPace time.Duration) *bufConn {
	var r io.Reader = c
	if readPace > 0 {
		r = newPacedReader(c, readPace)
	}
	b := &bufConn{Conn: c, r: bufio.NewReaderSize(r, bufConnReadSize), pr: r, timeout: writeTimeout, limit: maxPending,
		wake: make(chan struct{}, 1), done: make(chan struct{})}
	b.cond = sync.NewCond(&b.mu)
	go b.flusher()
	return b
}

// pacedReader spaces reads at least pace apart, so that the packets
// arriving in between are read (and handed on) together.
//
// Where the platform allows (sock, Linux), a busy paced reader of a plain
// TCP connection costs three system calls per pace and wakes no other
// thread (under TLS it also lowers and raises the mark each pace, as the
// TLS layer must do the read):
//
//   - it sleeps on its own thread (a blocking system call, sleepThread),
//     not on a Go timer: waking from a timer takes the runtime's poller,
//     and readying the goroutine starts a second, spinning thread that
//     finds nothing to do, several context switches per pace. The thread
//     keeps its processor (P) while it sleeps, so at most half of the
//     processors are held that way (threadSleep); other readers sleep on
//     a timer;
//   - while it is between reads the socket's receive low-water mark is
//     raised, so the packets the broker sends meanwhile wake nothing (the
//     runtime's poller would otherwise wake a thread for each, to find
//     nobody waiting);
//   - after the sleep it reads without waiting (tryRead), which the mark
//     does not limit. Only when that finds nothing is the mark lowered to
//     a byte, before the reader waits in the poller: a lone small packet
//     arriving later still wakes it. A reader that keeps finding data
//     leaves the mark high.
type pacedReader struct {
	r      io.Reader
	pace   time.Duration
	last   time.Time // when the previous read returned
	sock   *socket   // nil: no socket options (not Linux, or no socket)
	raw    bool      // r reads sock directly, so tryRead may bypass r
	raised bool      // the low-water mark is at sleepLowat
	// yielded is when yield last passed through the scheduler.
	yielded time.Time
}

// yieldEvery bounds how long a paced reader that keeps finding data (and
// so never waits in the poller) stays off the Go scheduler. Its monitor
// treats a goroutine that has not been through the scheduler for 10ms as
// running too long: it signals the thread and, the goroutine being in a
// system call, takes its processor away, which costs several thread
// wake-ups each time and keeps the monitor polling every 20µs.
const yieldEvery = 4 * time.Millisecond

// sleepSlots counts the readers sleeping on their thread now.
type sleepSlots struct{ n atomic.Int32 }

// threadSleepers are the process's paced readers sleeping on their thread.
var threadSleepers sleepSlots

// threadSleep sleeps d on the caller's thread when fewer than half of the
// processors are held by readers sleeping so (none with one processor),
// and reports whether it did.
func threadSleep(d time.Duration) bool {
	return threadSleepers.sleep(d, runtime.GOMAXPROCS(0))
}

// sleep sleeps d on the caller's thread when fewer than procs/2 sleepers
// hold a slot, and reports whether it did.
func (s *sleepSlots) sleep(d time.Duration, procs int) bool {
	if int(s.n.Add(1)) > procs/2 {
		s.n.Add(-1)
		return false
	}
	sleepThread(d)
	s.n.Add(-1)
	return true
}

// yield passes through the scheduler once yieldEvery has gone by.
func (p *pacedReader) yield() {
	if now := time.Now(); now.Sub(p.yielded) >= yieldEvery {
		runtime.Gosched()
		p.yielded = now
	}
}

// sleepLowat is the low-water mark while a paced reader is between reads:
// more than a pace usually brings, less than the receive buffer.
const sleepLowat = 32 << 10

func newPacedReader(c net.Conn, pace time.Duration) *pacedReader {
	s, raw := socketOf(c)
	return &pacedReader{r: c, pace: pace, sock: s, raw: raw}
}

func (p *pacedReader) Read(b []byte) (int, error) {
	if !p.last.IsZero() {
		if wait := p.pace - time.Since(p.last); wait > 0 {
			if p.sock != nil && !p.raised {
				p.sock.setLowat(sleepLowat)
				p.raised = true
			}
			if p.sock != nil && threadSleep(wait) {
				p.yield()
			} else {
				time.Sleep(wait)
			}
		}
	}
	if p.raised && p.raw {
		if n, err, ok := p.sock.tryRead(b); ok {
			p.last = time.Now()
			return n, err
		}
	}
	if p.raised {
		p.sock.setLowat(1)
		p.raised = false
	}
	n, err := p.r.Read(b)
	p.last = time.Now()
	return n, err
}

func (b *bufConn) Read(p []byte) (int, error) { return b.r.Read(p) }

// lowatOf reports whether b reads through a pacedReader (ok) and whether
// that one sets the socket's low-water mark while it sleeps.
func (b *bufConn) lowatOf() (lowat, ok bool) {
	p, ok := b.pr.(*pacedReader)
	return ok && p.sock != nil, ok
}

func (b *bufConn) Write(p []byte) (int, error) { return b.write(p, false) }

// hold appends p like Write but leaves waking the flusher to writeHeld,
// unless holdMax bytes are pending.
func (b *bufConn) hold(p []byte) error {
	_, err := b.write(p, true)
	return err
}

func (b *bufConn) write(p []byte, hold bool) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.err == nil && !b.closing && len(b.pending) >= b.limit {
		b.cond.Wait()
	}
	if b.err != nil {
		return 0, b.err
	}
	if b.closing {
		return 0, errConnClosed
	}
	b.pending = append(b.pending, p...)
	if !hold || len(b.pending) >= holdMax {
		b.writeWakes.Add(1)
		b.wakeFlusher()
	}
	return len(p), nil
}

// wakeFlusher makes the flusher look at pending.
func (b *bufConn) wakeFlusher() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// writeHeld writes what is pending on the caller's goroutine, after hold.
// When the flusher (or another writeHeld) is writing already, it leaves
// the bytes to the flusher, which writes again as soon as it is done, so
// packets keep their order. It reports the connection's write error.
func (b *bufConn) writeHeld() error {
	b.mu.Lock()
	if b.err != nil || len(b.pending) == 0 {
		err := b.err
		b.mu.Unlock()
		return err
	}
	if b.writing || b.flushing || b.closing {
		b.wakeFlusher()
		b.mu.Unlock()
		return nil
	}
	out := b.pending
	b.pending, b.spare = b.spare[:0], nil
	b.writing = true
	b.cond.Broadcast()
	b.mu.Unlock()

	err := b.netWrite(out)

	b.mu.Lock()
	b.writing = false
	if cap(out) <= holdMax*4 {
		b.spare = out[:0]
	}
	if len(b.pending) > 0 || b.closing {
		b.wakeFlusher()
	}
	b.mu.Unlock()
	if err != nil {
		b.fail(err)
		return err
	}
	return nil
}

// netWrite writes out to the network, bounded by the write timeout.
func (b *bufConn) netWrite(out []byte) error {
	if b.timeout > 0 {
		_ = b.Conn.SetWriteDeadline(time.Now().Add(b.timeout))
	}
	_, err := b.Conn.Write(out)
	return err
}

// SetWriteDeadline is ignored: writes only fill the buffer; the flusher
// bounds every network write by the write timeout.
func (b *bufConn) SetWriteDeadline(time.Time) error { return nil }

func (b *bufConn) SetDeadline(t time.Time) error { return b.Conn.SetReadDeadline(t) }

func (b *bufConn) flusher() {
	defer close(b.done)
	// A panic while writing (in a TLS or proxy layer under the
	// connection) fails the connection like a write error: the reader
	// sees it closed, the connection reconnects; the process goes on.
	defer panics.Catch("mqtt write", func(e *panics.Error) { b.fail(e) })
	var out []byte
	for {
		b.mu.Lock()
		for (len(b.pending) == 0 && !b.closing) || b.writing {
			b.mu.Unlock()
			<-b.wake
			b.mu.Lock()
		}
		if len(b.pending) == 0 {
			b.mu.Unlock()
			return
		}
		out, b.pending = b.pending, out[:0]
		closing := b.closing
		b.flushing = true
		b.cond.Broadcast()
		b.mu.Unlock()

		err := b.netWrite(out)
		b.mu.Lock()
		b.flushing = false
		b.mu.Unlock()
		if err != nil {
			b.fail(err)
			return
		}
		if closing {
			b.mu.Lock()
			empty := len(b.pending) == 0
			b.mu.Unlock()
			if empty {
				return
			}
		}
	}
}

// fail makes err the connection's write error, drops what is pending and
// closes the connection, which unblocks the reader too: the connection is
// unusable.
func (b *bufConn) fail(err error) {
	b.mu.Lock()
	if b.err == nil {
		b.err = err
	}
	b.pending = nil
	b.cond.Broadcast()
	b.mu.Unlock()
	_ = b.Conn.Close()
}

// Close flushes pending bytes (bounded by the write timeout) and closes the
// connection.
func (b *bufConn) Close() error {
	b.once.Do(func() {
		b.mu.Lock()
		b.closing = true
		b.cond.Broadcast()
		b.mu.Unlock()
		select {
		case b.wake <- struct{}{}:
		default:
		}
		wait := b.timeout
		if wait <= 0 {
			wait = time.Second
		}
		t := time.NewTimer(wait)
		select {
		case <-b.done:
		case <-t.C:
		}
		t.Stop()
	})
	return b.Conn.Close()
}
