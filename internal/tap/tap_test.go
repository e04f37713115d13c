package tap

import (
	"fmt"
	"sync"
	"testing"
)

func rows(i int) []map[string]any { return []map[string]any{{"i": i}} }

func TestSubscriberReceivesOnlyItsRule(t *testing.T) {
	h := NewHub()
	a := h.Subscribe("a", 4)
	defer a.Close()
	h.Publish("a", rows(1))
	h.Publish("b", rows(2))
	h.Publish("a", rows(3))
	got, dropped := a.Take()
	if dropped != 0 || len(got) != 2 || got[0][0]["i"] != 1 || got[1][0]["i"] != 3 {
		t.Fatalf("got %v dropped %d, want emissions 1 and 3, none dropped", got, dropped)
	}
	if got, _ := a.Take(); len(got) != 0 {
		t.Fatalf("second take returned %v, want nothing", got)
	}
}

func TestRingDropsOldestAndCounts(t *testing.T) {
	h := NewHub()
	s := h.Subscribe("r", 3)
	defer s.Close()
	for i := range 10 {
		h.Publish("r", rows(i))
	}
	got, dropped := s.Take()
	if dropped != 7 {
		t.Fatalf("dropped %d, want 7", dropped)
	}
	for k, want := range []int{7, 8, 9} {
		if got[k][0]["i"] != want {
			t.Fatalf("emission %d is %v, want %d", k, got[k], want)
		}
	}
	if _, dropped := s.Take(); dropped != 0 {
		t.Fatalf("dropped count not reset: %d", dropped)
	}
}

func TestCloseStopsDeliveryAndWatching(t *testing.T) {
	h := NewHub()
	s := h.Subscribe("r", 0)
	if !h.Watching("r") {
		t.Fatal("rule not watched after Subscribe")
	}
	s.Close()
	s.Close()
	if h.Watching("r") || h.active.Load() != 0 {
		t.Fatalf("still watched after Close (active %d)", h.active.Load())
	}
	h.Publish("r", rows(1))
	if got, _ := s.Take(); len(got) != 0 {
		t.Fatalf("closed subscriber received %v", got)
	}
}

func TestReadySignalsAfterPublish(t *testing.T) {
	h := NewHub()
	s := h.Subscribe("r", 2)
	defer s.Close()
	select {
	case <-s.Ready():
		t.Fatal("ready before any emission")
	default:
	}
	h.Publish("r", rows(1))
	<-s.Ready()
}

func TestConcurrentPublishSubscribe(t *testing.T) {
	h := NewHub()
	var wg sync.WaitGroup
	for p := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				h.Publish(fmt.Sprint("r", p%2), rows(i))
			}
		}()
	}
	for range 50 {
		s := h.Subscribe("r0", 8)
		s.Take()
		s.Close()
	}
	wg.Wait()
	if h.active.Load() != 0 {
		t.Fatalf("active = %d after every subscriber closed", h.active.Load())
	}
}

func TestNilHubPublishIsNoop(t *testing.T) {
	var h *Hub
	h.Publish("r", rows(1))
}

func BenchmarkPublishNoSubscriber(b *testing.B) {
	h := NewHub()
	r := rows(1)
	for b.Loop() {
		h.Publish("r", r)
	}
}
