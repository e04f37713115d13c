package mqtt

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/eclipse/paho.golang/packets"
	"github.com/eclipse/paho.golang/paho"
	"github.com/eclipse/paho.golang/paho/session"
)

// Drain stops the broker from sending this source more messages of its
// shared subscriptions ($share/<group>/<filter>) and hands over those it
// already sent: it sends UNSUBSCRIBE for them and returns once the broker
// acknowledged it (UNSUBACK; MQTT 3.1.1 and 5, 3.10.4: no new message of
// those filters follows it), every message that came before had been
// queued for Read or pushed, and, when every filter of the source was
// unsubscribed, the broker has sent what it still had queued for it
// (settle). Read then returns what is queued, then io.EOF; the
// engine processes and acknowledges those messages like any other before
// it calls Close. Without Drain, a member of a share group that leaves
// with a clean session loses the messages the broker had sent it and it
// had not acknowledged: mosquitto gives them to no other member.
//
// Only filters no other source on the pooled connection still uses are
// unsubscribed; on a persistent session nothing is (the broker keeps the
// subscription and redelivers what was not acknowledged). The wait is
// bounded by ctx and by the connection timeout; when the broker does not
// answer in time Drain returns the error and Read still ends, so the
// caller goes on to Close. Drain runs while another goroutine goes on
// calling Read (whose messages it waits for) or taking pushed messages,
// after Connect and before Close.
func (s *Source) Drain(ctx context.Context) error {
	if s.conn == nil {
		return nil
	}
	defer s.sub.drainOnce.Do(func() { close(s.sub.drained) })
	return s.conn.unsubscribeShared(ctx, s.sub)
}

// unsubscribeShared unsubscribes the shared filters only sub uses and
// waits for the UNSUBACK (see Source.Drain).
func (c *conn) unsubscribeShared(ctx context.Context, sub *subscription) error {
	if c.cfg.session {
		return nil
	}
	c.mu.Lock()
	others := c.filtersLocked(sub)
	var drop []string
	for f := range sub.filters {
		if _, used := others[f]; !used && strings.HasPrefix(f, "$share/") {
			drop = append(drop, f)
		}
	}
	tr := c.tr
	c.mu.Unlock()
	if tr == nil || len(drop) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, c.pool.connectTimeout)
	defer cancel()
	err := tr.unsubscribe(ctx, drop)
	if err == nil && len(drop) == len(sub.filters) {
		// Only when every filter of sub is unsubscribed does a quiet
		// round mean the broker has nothing left for it.
		err = c.settle(ctx, tr, sub, drop)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if sub.unsubscribed == nil {
		sub.unsubscribed = map[string]bool{}
	}
	for _, f := range drop {
		// Also after a failure: the UNSUBSCRIBE was sent, and
		// resending it at Close would only wait again.
		sub.unsubscribed[f] = true
		if c.tr == tr {
			delete(c.acked, f)
		}
	}
	return err
}

// settle waits until the broker has sent sub everything it had queued for
// it. After the UNSUBACK a broker stops adding messages of the filters for
// the client but may go on delivering those it had already queued for it
// (MQTT 3.1.1 3.10.4): mosquitto does, as acknowledgements free its
// in-flight window. So, in rounds: once every message sub received is
// acknowledged, UNSUBSCRIBE the filters again (the broker answers "no
// subscription"; the answer is a round trip that comes after whatever
// those acknowledgements released); a round that brings no message ends
// the wait.
func (c *conn) settle(ctx context.Context, tr transport, sub *subscription, filters []string) error {
	for {
		if err := waitAcked(ctx, sub); err != nil {
			return err
		}
		if c.cfg.version == 5 {
			// paho.golang sends manual acknowledgements every
			// ackInterval, on its own goroutine.
			if err := sleepCtx(ctx, 3*ackInterval); err != nil {
				return err
			}
		}
		before := sub.received.Load()
		if sub.unacked.Load() != 0 {
			continue
		}
		if err := tr.unsubscribe(ctx, filters); err != nil {
			return err
		}
		if sub.received.Load() == before {
			return nil
		}
	}
}

// ackPoll is how often waitAcked looks at the count.
const ackPoll = time.Millisecond

// waitAcked waits until every message sub received was acknowledged.
func waitAcked(ctx context.Context, sub *subscription) error {
	for sub.unacked.Load() != 0 {
		if err := sleepCtx(ctx, ackPoll); err != nil {
			return fmt.Errorf("wait for %d messages to be acknowledged: %w", sub.unacked.Load(), err)
		}
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// markingSession is the session of a v5 transport. paho.golang reads
// packets on one goroutine and runs the PUBLISH handlers on another, fed
// by a queue: an UNSUBACK can complete Unsubscribe while PUBLISHes read
// before it still wait in that queue. On every UNSUBACK the session puts a
// marker into the queue first (on the reading goroutine, the one that
// queues PUBLISHes), so that the handler meets it after them.
type markingSession struct {
	session.SessionManager
	t *v5
}

func (s markingSession) PacketReceived(p *packets.ControlPacket, pubs chan<- *packets.Publish) error {
	if _, ok := p.Content.(*packets.Unsuback); ok {
		pubs <- s.t.marks.next()
	}
	return s.SessionManager.PacketReceived(p, pubs)
}

// markerKey is the user property of a marker; markers have an empty topic,
// which a broker's PUBLISH never has without topic aliases (and the
// transport allows none).
const markerKey = "rekuiper-unsuback-marker"

// unsubackMarks counts the markers queued and handled.
type unsubackMarks struct {
	mu     sync.Mutex
	queued uint64
	done   uint64
	moved  chan struct{} // closed and replaced when done moves
}

// next returns a new marker; called before its UNSUBACK completes.
func (m *unsubackMarks) next() *packets.Publish {
	m.mu.Lock()
	m.queued++
	n := m.queued
	m.mu.Unlock()
	return &packets.Publish{Properties: &packets.Properties{
		User: []packets.User{{Key: markerKey, Value: strconv.FormatUint(n, 10)}}}}
}

// handled reports whether p is a marker, and records it as handled.
func (m *unsubackMarks) handled(p *paho.Publish) bool {
	if p.Topic != "" || p.Properties == nil {
		return false
	}
	v := p.Properties.User.Get(markerKey)
	n, err := strconv.ParseUint(v, 10, 64)
	if v == "" || err != nil {
		return false
	}
	m.mu.Lock()
	m.done = max(m.done, n)
	if m.moved != nil {
		close(m.moved)
		m.moved = nil
	}
	m.mu.Unlock()
	return true
}

// wait returns once every marker queued so far was handled, ctx ended or
// the transport closed.
func (m *unsubackMarks) wait(ctx context.Context, dead <-chan struct{}) error {
	m.mu.Lock()
	want := m.queued
	m.mu.Unlock()
	for {
		m.mu.Lock()
		if m.done >= want {
			m.mu.Unlock()
			return nil
		}
		if m.moved == nil {
			m.moved = make(chan struct{})
		}
		moved := m.moved
		m.mu.Unlock()
		select {
		case <-moved:
		case <-dead:
			return errors.New("connection closed")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
