package server

import (
	"fmt"
	"net/http"

	"github.com/rekuiper/rekuiper/internal/metrics"
)

func (s *Server) historyRoutes() {
	s.handle("GET /metrics/history", s.nodeHistory)
	s.handle("GET /rules/{id}/metrics/history", s.ruleHistory)
}

// historyBody is the answer of both history routes: the sampling interval
// in seconds and the points, oldest first.
type historyBody struct {
	Interval int64           `json:"interval"`
	Points   []metrics.Point `json:"points"`
}

func (s *Server) writeHistory(w http.ResponseWriter, points []metrics.Point) error {
	if points == nil {
		points = []metrics.Point{}
	}
	return writeJSON(w, http.StatusOK, historyBody{Interval: int64(s.opts.History.Interval().Seconds()), Points: points})
}

// nodeHistory answers the records in and out and the errors of every rule
// summed, per interval, over the last hour.
func (s *Server) nodeHistory(w http.ResponseWriter, r *http.Request) error {
	if s.opts.History == nil {
		return fmt.Errorf("metrics history: %w", errNoRoute)
	}
	return s.writeHistory(w, s.opts.History.Node())
}

// ruleHistory answers one rule's records in and out and errors per
// interval; a rule created since the last sample has no points yet.
func (s *Server) ruleHistory(w http.ResponseWriter, r *http.Request) error {
	if s.opts.History == nil {
		return fmt.Errorf("metrics history: %w", errNoRoute)
	}
	id := r.PathValue("id")
	if _, err := s.rules.Status(id); err != nil {
		return err
	}
	points, _ := s.opts.History.Rule(id)
	return s.writeHistory(w, points)
}
