package server

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/trial"
)

// ruleTestRoutes serve eKuiper's rule test API: POST /ruletest creates a
// test run, GET /test/{id} streams its results as server-sent events,
// POST /ruletest/{id}/start feeds its mock records, DELETE /ruletest/{id}
// ends it. The event stream is served on the REST port (eKuiper: on
// source.httpServerPort); the port in the creation's answer says where.
func (s *Server) ruleTestRoutes() {
	s.trials = trial.New(trial.Options{
		Streams: s.trialStreamDef, Funcs: s.opts.Functions, Schemas: s.schemas,
		Clock: s.opts.Clock, Logger: s.log,
	})
	s.handle("POST /ruletest", s.createRuleTest)
	s.handle("POST /ruletest/{id}/start", s.startRuleTest)
	s.handle("DELETE /ruletest/{id}", s.deleteRuleTest)
	s.handle("GET /test/{id}", s.ruleTestEvents)
}

// Close ends the server's rule test runs.
func (s *Server) Close() { s.trials.Close() }

// trialStreamDef is streamDef with an error that names the missing stream
// for the rule test's 400.
func (s *Server) trialStreamDef(name string) (*ast.CreateStreamStmt, error) {
	cs, err := s.streamDef(name)
	if errors.Is(err, catalog.ErrNotFound) {
		return nil, fmt.Errorf("stream or table %s is not found", name)
	}
	return cs, err
}

// trialErr maps the trial manager's errors to the REST layer's.
func trialErr(err error) error {
	switch {
	case errors.Is(err, trial.ErrInvalid):
		return badRequest("%v", err)
	case errors.Is(err, trial.ErrNotFound):
		return notFound(err)
	case errors.Is(err, trial.ErrState):
		return fmt.Errorf("%w: %w", catalog.ErrConflict, err)
	}
	return err
}

func (s *Server) createRuleTest(w http.ResponseWriter, r *http.Request) error {
	var d trial.Def
	if err := decodeStrict(r, &d); err != nil {
		return err
	}
	if err := validName("rule test", d.ID); err != nil {
		return err
	}
	if err := s.trials.Create(d); err != nil {
		return trialErr(err)
	}
	port := 0
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if ta, ok := a.(*net.TCPAddr); ok {
			port = ta.Port
		}
	}
	return writeJSON(w, http.StatusOK, map[string]any{"id": d.ID, "port": port})
}

func (s *Server) startRuleTest(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := s.trials.Start(id); err != nil {
		return trialErr(err)
	}
	return writeText(w, http.StatusOK, "Test rule %s was started", id)
}

func (s *Server) deleteRuleTest(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := s.trials.Delete(id); err != nil {
		return trialErr(err)
	}
	return writeText(w, http.StatusOK, "Test rule %s was stopped.", id)
}

// ruleTestEvents streams a run's results: one event per payload, "data:"
// lines and a blank line. It ends when the run ends or the client leaves;
// a started run whose last listener leaves is deleted.
func (s *Server) ruleTestEvents(w http.ResponseWriter, r *http.Request) error {
	payloads, leave, err := s.trials.Listen(r.PathValue("id"))
	if err != nil {
		return trialErr(err)
	}
	defer leave()
	// The stream lives as long as the run, past the server's write
	// timeout; the run's lifetime and the stream limits bound it.
	es, err := s.startEventStream(w, r, "rule test "+r.PathValue("id"), nil)
	if err != nil {
		return err
	}
	defer es.done()
	idle := time.NewTimer(es.idle)
	defer idle.Stop()
	var buf bytes.Buffer
	for {
		select {
		case <-es.ctx.Done():
			return nil
		case <-idle.C:
			return nil
		case p, ok := <-payloads:
			if !ok {
				return nil
			}
			idle.Reset(es.idle)
			buf.Reset()
			for _, line := range bytes.Split(bytes.TrimRight(p, "\n"), []byte("\n")) {
				buf.WriteString("data: ")
				buf.Write(line)
				buf.WriteByte('\n')
			}
			buf.WriteByte('\n')
			if _, err := w.Write(buf.Bytes()); err != nil {
				return nil //nolint:nilerr // the client is gone
			}
			if err := es.rc.Flush(); err != nil {
				return nil //nolint:nilerr // the client is gone
			}
		}
	}
}
