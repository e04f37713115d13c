package mqtt

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/connector/mqtt/mqtttest"
	"github.com/rekuiper/rekuiper/internal/row"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// TestBodyArena: bodies are reused from the chunk's start only after a
// settle that found nothing kept on a live transport; a kept body makes
// the arena abandon its chunk and allocate bodies one by one for a while.
func TestBodyArena(t *testing.T) {
	var a bodyArena
	b1, in1 := a.take(10)
	b2, in2 := a.take(20)
	if !in1 || !in2 || &b1[:1][0] == &b2[:1][0] || cap(b1) != 10 {
		t.Fatalf("bodies from the chunk: %v %v, cap %d", in1, in2, cap(b1))
	}
	if big, in := a.take(bodyArenaMax + 1); in || len(big) != bodyArenaMax+1 {
		t.Fatalf("a body over %d bytes came from the chunk", bodyArenaMax)
	}
	copy(b1, "0123456789")
	a.settle(true)
	again, _ := a.take(10)
	if &again[0] != &b1[0] {
		t.Fatal("a settled chunk was not reused from its start")
	}
	if row.PoisonRecycled && string(again) == "0123456789" {
		t.Fatal("a reused body kept its old contents in a poisoning build")
	}

	// Not live: the chunk is abandoned, not reused.
	copy(again, "abcdefghij")
	a.settle(false)
	fresh, in := a.take(10)
	if !in || &fresh[0] == &again[0] || string(again) != "abcdefghij" {
		t.Fatalf("a gone transport's chunk was reused (in %v, old %q)", in, again)
	}

	// Kept: abandoned, then skipAfterKept settles of bodies one by one.
	a.keep()
	a.settle(true)
	for i := range skipAfterKept {
		if _, in := a.take(10); in {
			t.Fatalf("settle %d after a kept body: body from a chunk", i)
		}
		a.settle(true)
	}
	if _, in := a.take(10); !in {
		t.Fatal("the arena did not come back into use")
	}
}

// TestPushReusesFreedBodies: a push source whose pushes report their
// messages free reads later payloads into the memory of earlier ones;
// one whose pushes keep them never does, and every payload it kept
// still reads as it arrived.
func TestPushReusesFreedBodies(t *testing.T) {
	m := mqtttest.StartMosquitto(t)
	for _, free := range []bool{true, false} {
		t.Run(fmt.Sprint("free ", free), func(t *testing.T) {
			topic := uniqueTopic(t)
			props := map[string]any{"server": m.URL("plain"), "datasource": topic, "readPace": "5ms"}
			var (
				mu    sync.Mutex
				kept  [][]byte // payloads as pushed (not copied)
				texts []string // their contents when pushed
				addrs = map[uintptr]int{}
			)
			push := func(msgs []*api.Message) bool {
				mu.Lock()
				defer mu.Unlock()
				for _, msg := range msgs {
					if len(msg.Payload) > 0 {
						addrs[uintptr(unsafe.Pointer(&msg.Payload[0]))]++
					}
					texts = append(texts, string(msg.Payload))
					if !free {
						kept = append(kept, msg.Payload)
					}
				}
				return true
			}
			v, err := SourceSpec().Validate(props)
			if err != nil {
				t.Fatal(err)
			}
			src, err := NewSource(newTestPool(t), v, connector.Deps{})
			if err != nil {
				t.Fatal(err)
			}
			src.PushTo(push)
			src.ReleaseWith(func() bool { return free })
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := src.Connect(ctx); err != nil {
				t.Fatal(err)
			}
			defer src.Close(context.Background())
			waitConnected(t, src.Status)

			snk := mustSink(t, newTestPool(t), map[string]any{"server": m.URL("plain"), "topic": topic})
			pushed := func(want int) func() bool {
				return func() bool {
					mu.Lock()
					defer mu.Unlock()
					return len(texts) >= want
				}
			}
			const n = 2000
			for i := range n {
				write(t, snk, fmt.Sprintf("message-%04d", i))
				if i%100 == 99 {
					// The next hundred come in later reads, after a
					// settle of the arena.
					flush(t, snk)
					testwait.Until(t, fmt.Sprintf("%d messages pushed", i+1), pushed(i+1))
				}
			}
			flush(t, snk)
			testwait.Poll(testwait.Limit, pushed(n))
			mu.Lock()
			defer mu.Unlock()
			if len(texts) != n {
				t.Fatalf("%d of %d messages pushed", len(texts), n)
			}
			for i, s := range texts {
				if want := fmt.Sprintf("message-%04d", i); s != want {
					t.Fatalf("message %d read as %q", i, s)
				}
			}
			reused := 0
			for _, c := range addrs {
				if c > 1 {
					reused++
				}
			}
			if free && reused == 0 {
				t.Fatal("no payload memory was reused although every push freed its messages")
			}
			if !free {
				if reused != 0 {
					t.Fatalf("%d payload addresses were used twice although pushes kept their messages", reused)
				}
				for i, p := range kept {
					if want := fmt.Sprintf("message-%04d", i); !bytes.Equal(p, []byte(want)) {
						t.Fatalf("kept payload %d now reads %q", i, strings.ToValidUTF8(string(p), "?"))
					}
				}
			}
		})
	}
}
