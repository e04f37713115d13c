package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/rekuiper/rekuiper/internal/netlimit"
	"github.com/rekuiper/rekuiper/internal/tap"
)

// tapRing bounds the emissions a /rules/{id}/tap client may fall behind by.
const tapRing = 64

// sseKeepalive is how often an idle event stream gets a comment, so that
// proxies do not close it.
const sseKeepalive = 15 * time.Second

func (s *Server) tapRoutes() {
	s.handle("GET /rules/{id}/tap", s.ruleTap)
}

// ruleTap streams the results a rule hands to its sinks as server-sent
// events, one event per emission: data {"rows":[...]} with "dropped": n
// when n emissions were dropped just before it because the client fell
// behind. The rule never waits for the client: each client has a ring of
// tapRing emissions that drops its oldest. The stream stays open across
// the rule's restarts; while nobody listens the tap costs the rule one
// atomic load per emission.
func (s *Server) ruleTap(w http.ResponseWriter, r *http.Request) error {
	if s.opts.Taps == nil {
		return fmt.Errorf("rule tap: %w", errNoRoute)
	}
	id := r.PathValue("id")
	var sub *tap.Sub
	es, err := s.startEventStream(w, r, "rule "+id, func() error {
		if _, err := s.rules.Status(id); err != nil {
			return err
		}
		sub = s.opts.Taps.Subscribe(id, tapRing)
		return nil
	})
	if sub != nil {
		defer sub.Close()
	}
	if err != nil {
		if errors.Is(err, netlimit.ErrBusy) || errors.Is(err, netlimit.ErrTooMany) {
			return fmt.Errorf("rule tap: %w", err)
		}
		return err
	}
	return es.serve(sub.Ready(), func() error {
		emissions, dropped := sub.Take()
		for _, rows := range emissions {
			if err := writeEvent(w, tapEvent{Rows: rows, Dropped: dropped}); err != nil {
				return err
			}
			dropped = 0
		}
		return nil
	})
}

type tapEvent struct {
	Rows    []map[string]any `json:"rows"`
	Dropped int64            `json:"dropped,omitempty"`
}

// startEventStream takes an event-stream slot for key (a rule, a test
// run, a memory topic: limits.maxEventStreams and
// limits.maxEventStreamsPerRule), then calls check (the route's own
// checks, which may cost more than a refusal: a flood of streams past
// the limits is refused before any of it). It then lifts the write
// deadline (a stream outlives the server's write timeout; the controller
// reaches the connection through the audit log's wrapper), sends the
// event-stream headers and flushes them, so that the client sees the
// stream open at once. The stream's context ends after
// limits.eventStreamLifetime; done releases the slot and the context.
func (s *Server) startEventStream(w http.ResponseWriter, r *http.Request, key string, check func() error) (es *eventStream, err error) {
	release, err := s.streams.Acquire(key)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			release()
		}
	}()
	if check != nil {
		if err := check(); err != nil {
			return nil, err
		}
	}
	rc := http.NewResponseController(w)
	if err := rc.SetWriteDeadline(time.Time{}); err != nil {
		return nil, fmt.Errorf("response cannot stream: %w", err)
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	rc.Flush() //nolint:errcheck // a gone client ends the stream at the next write
	lim := s.opts.Config.Limits
	ctx, cancel := context.WithTimeout(r.Context(), lim.EventStreamLifetime.Std())
	return &eventStream{
		ctx: ctx, w: w, rc: rc, idle: lim.EventStreamIdleTimeout.Std(),
		done: func() { cancel(); release() },
	}, nil
}

// eventStream is an open event-stream answer.
type eventStream struct {
	ctx  context.Context
	w    http.ResponseWriter
	rc   *http.ResponseController
	idle time.Duration
	done func()
}

// writeEvent writes v as one event's JSON data line; a value that does not
// encode is sent as {"error": ...} instead.
func writeEvent(w http.ResponseWriter, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"error": err.Error()})
	}
	_, err = fmt.Fprintf(w, "data: %s\n\n", b)
	return err
}

// serve calls write each time ready fires and flushes what it wrote,
// with a keepalive comment when idle, until the stream's context ends, no
// event was sent for limits.eventStreamIdleTimeout, or a write fails (the
// client left: not an error of the route). It releases the stream.
func (es *eventStream) serve(ready <-chan struct{}, write func() error) error {
	defer es.done()
	keepalive := time.NewTicker(min(sseKeepalive, es.idle))
	defer keepalive.Stop()
	last := time.Now()
	for {
		select {
		case <-es.ctx.Done():
			return nil
		case now := <-keepalive.C:
			if now.Sub(last) >= es.idle {
				return nil
			}
			if _, err := fmt.Fprint(es.w, ": keepalive\n\n"); err != nil {
				return nil
			}
		case <-ready:
			if err := write(); err != nil {
				return nil
			}
			last = time.Now()
		}
		if err := es.rc.Flush(); err != nil {
			return nil
		}
	}
}
