package mqtt

import (
	"bufio"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/packets"
)

// TestPahoConnKeepsPacketsWhole writes publishes from two goroutines and
// PINGREQs from a third, as paho.golang's publisher, sink callers and
// pinger do, through the buffered connection, and parses what arrives:
// every packet must come out whole. Without pahoConn (paho writing to
// the buffered connection directly) a packet's header and body are
// separate writes, and the others' packets land between them.
func TestPahoConnKeepsPacketsWhole(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	defer server.Close()
	conn := pahoConn(newBufConn(client, 5*time.Second, 0))

	const writers, each, pings = 2, 500, 500
	got := make(chan error, 1)
	go func() {
		r := bufio.NewReader(server)
		publishes := 0
		for n := 0; n < writers*each+pings; n++ {
			cp, err := packets.ReadPacket(r)
			if err != nil {
				got <- fmt.Errorf("packet %d: %w", n, err)
				return
			}
			switch cp.Type {
			case packets.PUBLISH:
				p := cp.Content.(*packets.Publish)
				if want := "payload of " + p.Topic; string(p.Payload) != want {
					got <- fmt.Errorf("packet %d: publish on %q carries %q", n, p.Topic, p.Payload)
					return
				}
				publishes++
			case packets.PINGREQ:
			default:
				got <- fmt.Errorf("packet %d: unexpected type %d", n, cp.Type)
				return
			}
		}
		if publishes != writers*each {
			got <- fmt.Errorf("%d publishes, want %d", publishes, writers*each)
			return
		}
		got <- nil
	}()

	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				topic := fmt.Sprintf("w%d/%d", w, i)
				p := &packets.Publish{Topic: topic, Payload: []byte("payload of " + topic)}
				if _, err := p.WriteTo(conn); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Go(func() {
		for range pings {
			if _, err := packets.NewControlPacket(packets.PINGREQ).WriteTo(conn); err != nil {
				t.Error(err)
				return
			}
		}
	})
	wg.Wait()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the packets did not all arrive")
	}
}
