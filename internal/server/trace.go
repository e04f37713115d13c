package server

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/rekuiper/rekuiper/internal/rulemgr"
	"github.com/rekuiper/rekuiper/internal/tracing"
)

// traceRoutes are eKuiper's rule data tracing routes: turn tracing on and
// off for a running rule, list a rule's latest traces, read one trace's
// span tree. The collector is set in kuiper.yaml (openTelemetry), not over
// REST.
func (s *Server) traceRoutes() {
	s.handle("POST /rules/{id}/trace/start", s.startTrace)
	s.handle("POST /rules/{id}/trace/stop", s.stopTrace)
	s.handle("GET /trace/rule/{ruleID}", s.ruleTraces)
	s.handle("GET /trace/{id}", s.traceTree)
	s.handle("POST /tracer", func(w http.ResponseWriter, r *http.Request) error {
		return fmt.Errorf("POST /tracer: %w: the collector is set in kuiper.yaml (openTelemetry.enableRemoteCollector, remoteEndpoint, serviceName) and read at start", errNotImplemented)
	})
}

// errNoTracing answers the trace switches of a server built without a
// tracing service.
var errNoTracing = fmt.Errorf("%w: rule tracing is not available in this server", errNotImplemented)

func (s *Server) startTrace(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	var req struct {
		Strategy string `json:"strategy"`
	}
	b, err := readBody(r)
	if err != nil {
		return err
	}
	if len(b) > 0 {
		if err := decodeBytes(b, &req); err != nil {
			return err
		}
	}
	st, err := tracing.ParseStrategy(req.Strategy)
	if err != nil {
		return badRequest("%v", err)
	}
	if err := s.runningForTrace(id); err != nil {
		return err
	}
	s.opts.Tracing.Rule(id).Enable(st)
	w.WriteHeader(http.StatusOK)
	return nil
}

func (s *Server) stopTrace(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if _, err := s.rules.Status(id); err != nil {
		return err
	}
	if s.opts.Tracing == nil {
		return errNoTracing
	}
	s.opts.Tracing.Rule(id).Disable()
	w.WriteHeader(http.StatusOK)
	return nil
}

// runningForTrace checks that rule id exists and runs, as eKuiper traces
// only a running rule (each run starts untraced).
func (s *Server) runningForTrace(id string) error {
	st, err := s.rules.Status(id)
	if err != nil {
		return err
	}
	if s.opts.Tracing == nil {
		return errNoTracing
	}
	if st.State != rulemgr.StateRunning {
		return badRequest("rule %s is %s: tracing needs a running rule", id, st.State)
	}
	return nil
}

func (s *Server) ruleTraces(w http.ResponseWriter, r *http.Request) error {
	limit := 0
	if l := r.URL.Query().Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 0 {
			return badRequest("limit %q: want a whole number, 0 for all", l)
		}
		limit = n
	}
	ids := []string{}
	if st := s.opts.Tracing.Store(); st != nil {
		ids = st.TraceIDs(r.PathValue("ruleID"), limit)
	}
	return writeJSON(w, http.StatusOK, ids)
}

func (s *Server) traceTree(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if st := s.opts.Tracing.Store(); st != nil {
		if root, ok := st.Trace(id); ok {
			return writeJSON(w, http.StatusOK, root)
		}
	}
	return notFound(fmt.Errorf("trace %s", id))
}
