package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
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
	if _, err := s.rules.Status(id); err != nil {
		return err
	}
	sub := s.opts.Taps.Subscribe(id, tapRing)
	defer sub.Close()
	rc, err := startEventStream(w)
	if err != nil {
		return fmt.Errorf("rule tap: %w", err)
	}
	return serveEvents(r.Context(), w, rc, sub.Ready(), func() error {
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

// startEventStream lifts the write deadline (a stream outlives the
// server's write timeout; the controller reaches the connection through
// the audit log's wrapper), sends the event-stream headers and flushes
// them, so that the client sees the stream open at once.
func startEventStream(w http.ResponseWriter) (*http.ResponseController, error) {
	rc := http.NewResponseController(w)
	if err := rc.SetWriteDeadline(time.Time{}); err != nil {
		return nil, fmt.Errorf("response cannot stream: %w", err)
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	rc.Flush() //nolint:errcheck // a gone client ends the stream at the next write
	return rc, nil
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

// serveEvents calls write each time ready fires and flushes what it wrote,
// with a keepalive comment when idle, until ctx ends or a write fails
// (the client left: not an error of the route).
func serveEvents(ctx context.Context, w http.ResponseWriter, rc *http.ResponseController, ready <-chan struct{}, write func() error) error {
	keepalive := time.NewTicker(sseKeepalive)
	defer keepalive.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-keepalive.C:
			if _, err := fmt.Fprint(w, ": keepalive\n\n"); err != nil {
				return nil
			}
		case <-ready:
			if err := write(); err != nil {
				return nil
			}
		}
		if err := rc.Flush(); err != nil {
			return nil
		}
	}
}
