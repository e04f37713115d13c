package mqtt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/connector/mqtt/mqtttest"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// TestDrainSharedSubscription stops one of two members of a share group
// cleanly (Drain, the rest of Read, Close) while a publisher sends at
// qos 1: every message is received by exactly one member.
func TestDrainSharedSubscription(t *testing.T) {
	m := mqtttest.StartMosquitto(t)
	for _, v := range []string{"3.1.1", "5"} {
		for _, push := range []bool{false, true} {
			t.Run(fmt.Sprintf("v%s/push=%v", v, push), func(t *testing.T) {
				testDrainShared(t, m.URL("plain"), v, push)
			})
		}
	}
}

// member is one source of a share group and what it received.
type member struct {
	src  *Source
	mu   sync.Mutex
	got  map[string]int
	done chan struct{} // closed when Read returned io.EOF
	err  error
}

func (m *member) add(msgs []*api.Message) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, msg := range msgs {
		m.got[string(msg.Payload)]++
		if msg.Ack != nil {
			msg.Ack()
		}
	}
	return true
}

func (m *member) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.got)
}

// readAll reads until Read fails, slowly when slow is set (so that
// messages wait in the source and at the broker for this member), and
// records why it stopped.
func (m *member) readAll(slow bool) {
	defer close(m.done)
	for {
		msg, err := m.src.Read(context.Background())
		if err != nil {
			m.err = err
			return
		}
		if slow {
			time.Sleep(2 * time.Millisecond) // a slow consumer, the behaviour under test; not a wait
		}
		m.add([]*api.Message{msg})
	}
}

func testDrainShared(t *testing.T, server, v string, push bool) {
	filter := "$share/g/" + uniqueTopic(t)
	props := map[string]any{"server": server, "datasource": filter, "qos": 1, "protocolVersion": v}
	join := func(slow bool) *member {
		mb := &member{got: map[string]int{}, done: make(chan struct{})}
		p := newTestPool(t)
		// The drain of a slow member's backlog may take seconds on a
		// busy machine; the bound is not what is tested.
		p.connectTimeout = 60 * time.Second
		if push {
			mb.src = mustPushSource(t, p, props, func(msgs []*api.Message) bool {
				if slow {
					time.Sleep(2 * time.Millisecond) // a slow consumer, the behaviour under test; not a wait
				}
				return mb.add(msgs)
			})
			close(mb.done)
			return mb
		}
		mb.src = mustSource(t, p, props)
		waitConnected(t, mb.src.Status)
		go mb.readAll(slow)
		return mb
	}
	leaving, staying := join(true), join(false)
	snk := mustSink(t, newTestPool(t), map[string]any{"server": server, "topic": stripShare(filter), "qos": 1, "protocolVersion": v})
	waitConnected(t, snk.Status)

	// The publisher runs until stop, at about 2000 messages/s: the
	// leaving member, at 2 ms a message, falls behind its share.
	var sentMu sync.Mutex
	published := 0
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := snk.Write(context.Background(), &api.SinkMessage{Payload: []byte(fmt.Sprint(i))}); err != nil {
				t.Errorf("publish %d: %v", i, err)
				return
			}
			sentMu.Lock()
			published = i + 1
			sentMu.Unlock()
			if i%10 == 9 {
				time.Sleep(5 * time.Millisecond) // paces the publisher; not a wait
			}
		}
	}()
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-stopped
	}()
	// Stop once the leaving member has a backlog (or, on a machine too
	// slow for 300, whatever it got within the limit).
	testwait.Poll(testwait.Limit, func() bool { return leaving.count() >= 300 })
	if leaving.count() == 0 {
		t.Fatal("the leaving member received nothing")
	}

	// The clean stop, as the engine does it.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := leaving.src.Drain(ctx); err != nil {
		t.Errorf("drain: %v", err)
	}
	select {
	case <-leaving.done:
	case <-ctx.Done():
		t.Fatal("Read did not end after Drain")
	}
	if !push && !errors.Is(leaving.err, io.EOF) {
		t.Errorf("Read after Drain ended with %v, want io.EOF", leaving.err)
	}
	atStop := leaving.count()
	if err := leaving.src.Close(context.Background()); err != nil {
		t.Errorf("close: %v", err)
	}
	// Publishing goes on after the stop, for the staying member alone.
	afterStop := staying.count()
	testwait.Poll(testwait.Limit, func() bool { return staying.count() >= afterStop+500 })
	close(stop)
	<-stopped
	flush(t, snk)

	seen := func() (lost, twice []int) {
		leaving.mu.Lock()
		defer leaving.mu.Unlock()
		staying.mu.Lock()
		defer staying.mu.Unlock()
		for i := range published {
			k := fmt.Sprint(i)
			switch leaving.got[k] + staying.got[k] {
			case 0:
				lost = append(lost, i)
			case 1:
			default:
				twice = append(twice, i)
			}
		}
		return lost, twice
	}
	// Messages published last may still be on their way to the staying
	// member.
	var lost, twice []int
	testwait.Poll(testwait.Limit, func() bool {
		lost, twice = seen()
		return len(lost) == 0
	})
	if leaving.count() != atStop {
		t.Errorf("the stopped member received %d messages after Close", leaving.count()-atStop)
	}
	t.Logf("published %d: the leaving member took %d, the staying one %d; %d lost, %d twice",
		published, atStop, staying.count(), len(lost), len(twice))
	if len(lost) > 0 {
		t.Errorf("%d of %d messages lost: %v", len(lost), published, head(lost))
	}
	if len(twice) > 0 {
		t.Errorf("%d messages received twice: %v", len(twice), head(twice))
	}
}

func head(s []int) []int { return s[:min(len(s), 20)] }

// TestDrainKeepsFilterOfPooledNeighbour: two sources on one pooled
// connection share a filter; draining one leaves the filter subscribed
// for the other.
func TestDrainKeepsFilterOfPooledNeighbour(t *testing.T) {
	m := mqtttest.StartMosquitto(t)
	server := m.URL("plain")
	filter := "$share/g/" + uniqueTopic(t)
	props := map[string]any{"server": server, "datasource": filter, "qos": 1}
	p := newTestPool(t)
	a, b := mustSource(t, p, props), mustSource(t, p, props)
	waitConnected(t, a.Status)
	waitConnected(t, b.Status)
	if a.conn != b.conn {
		t.Fatal("the two sources do not share a connection")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Drain(ctx); err != nil {
		t.Fatalf("drain: %v", err)
	}
	if _, err := a.Read(ctx); !errors.Is(err, io.EOF) {
		t.Fatalf("Read after Drain: %v, want io.EOF", err)
	}
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	snk := mustSink(t, newTestPool(t), map[string]any{"server": server, "topic": stripShare(filter), "qos": 1})
	for i := range 10 {
		write(t, snk, fmt.Sprint(i))
	}
	flush(t, snk)
	if got := collect(b, 10, 10*time.Second); len(got) != 10 {
		t.Fatalf("the remaining source received %d of 10 messages", len(got))
	}
}
