package server

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"github.com/rekuiper/rekuiper/internal/connector/membus"
)

// tapBuffer bounds the messages a /memory/events client may fall behind
// by; older ones are dropped for that client only (and counted in a
// "dropped" event), never held back from the rules.
const tapBuffer = 1024

func (s *Server) memoryRoutes() {
	s.handle("GET /memory/events", s.memoryEvents)
}

// memoryEvents streams the rows published to memory topics matching the
// "topic" filter (MQTT wildcards) as server-sent events: one "data:" line
// of JSON per message, an object for a row, an array for the rows a sink
// published together (as eKuiper's memory topics carry a list), a comment
// every 15 s to keep proxies from closing an
// idle stream. A slow reader never slows a rule down: the bus subscription
// is drained at once into a bounded queue that drops its oldest rows and
// reports how many in an "event: dropped" message. `kuiper query` reads a
// temporary rule's results this way.
func (s *Server) memoryEvents(w http.ResponseWriter, r *http.Request) error {
	if s.opts.Memory == nil {
		return fmt.Errorf("memory events: %w", errNoRoute)
	}
	filter := r.URL.Query().Get("topic")
	if filter == "" {
		return badRequest("query parameter topic is required")
	}
	if err := membus.ValidFilter(filter); err != nil {
		return badRequest("topic %q: %v", filter, err)
	}
	sub, err := s.opts.Memory.Subscribe(filter, 64)
	if err != nil {
		return badRequest("topic %q: %v", filter, err)
	}
	defer sub.Close()
	es, err := s.startEventStream(w, r, "memory topic "+filter, nil)
	if err != nil {
		return fmt.Errorf("memory events: %w", err)
	}
	ctx, cancel := context.WithCancel(es.ctx)
	defer cancel()
	q := &tapQueue{wake: make(chan struct{}, 1)}
	go func() {
		for {
			m, err := sub.Receive(ctx)
			if err != nil {
				return
			}
			if m.Rows != nil {
				q.push(m.Rows) // several rows published together: one event
			} else {
				q.push(m.Data)
			}
		}
	}()
	return es.serve(q.wake, func() error {
		rows, dropped := q.take()
		if dropped > 0 {
			fmt.Fprintf(w, "event: dropped\ndata: %s\n\n", strconv.Itoa(dropped))
		}
		for _, row := range rows {
			if err := writeEvent(w, row); err != nil {
				return err
			}
		}
		return nil
	})
}

// tapQueue is a bounded queue of messages (a row, or the rows published
// together) that drops the oldest when full.
type tapQueue struct {
	mu      sync.Mutex
	rows    []any
	dropped int
	wake    chan struct{}
}

func (q *tapQueue) push(row any) {
	q.mu.Lock()
	if len(q.rows) == tapBuffer {
		q.rows = q.rows[1:]
		q.dropped++
	}
	q.rows = append(q.rows, row)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *tapQueue) take() ([]any, int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	rows, dropped := q.rows, q.dropped
	q.rows, q.dropped = nil, 0
	return rows, dropped
}
