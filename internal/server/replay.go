package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/rekuiper/rekuiper/internal/conformance"
	"github.com/rekuiper/rekuiper/internal/engine"
	"github.com/rekuiper/rekuiper/internal/rule"
)

// Bounds of POST /rules/replay: a replay runs inside the daemon, so the
// case's size, its output and its run time are all capped.
const (
	replayMaxBody      = 1 << 20
	replayMaxRecords   = 10000 // input records, table rows and timeline steps, each
	replayMaxStreams   = 32
	replayMaxVariants  = 8
	replayMaxEmissions = 10000   // per variant
	replayMaxSteps     = 1000000 // records and timer firings per variant
	replayTimeout      = 10 * time.Second
	replayConcurrent   = 2
)

// replayRoutes serve POST /rules/replay: the engine of `kuiper test` on
// the daemon, for the console's rule test page and for scripts.
func (s *Server) replayRoutes() {
	slots := make(chan struct{}, replayConcurrent)
	s.handle("POST /rules/replay", func(w http.ResponseWriter, r *http.Request) error {
		return s.replayCase(w, r, slots)
	})
}

// replayResult is the answer of POST /rules/replay. Passed is set when the
// case has an expectation.
type replayResult struct {
	Passed *bool       `json:"passed,omitempty"`
	Runs   []replayRun `json:"runs"`
}

// replayRun is the replay of one option variant.
type replayRun struct {
	Options   map[string]any   `json:"options"`
	Passed    *bool            `json:"passed,omitempty"`
	Mismatch  string           `json:"mismatch,omitempty"`
	Emissions []replayEmission `json:"emissions"`
}

// replayEmission sets the i-th expected emission beside the i-th actual
// one, each as JSON text in the case format (floats keep their fraction,
// so 31.0 and 31 stay different). Match is set when the case has an
// expectation.
type replayEmission struct {
	Index    int     `json:"index"`
	Expected *string `json:"expected,omitempty"`
	Actual   *string `json:"actual,omitempty"`
	Match    *bool   `json:"match,omitempty"`
	Reason   string  `json:"reason,omitempty"`
}

// replayCase replays a case in the corpus format (docs/kuiper-test.md) on
// a virtual clock and compares each emission with the expected one. The
// case is self-contained: its streams are its CREATE statements, not the
// catalog's, and nothing is stored or connected.
func (s *Server) replayCase(w http.ResponseWriter, r *http.Request, slots chan struct{}) error {
	b, err := io.ReadAll(io.LimitReader(r.Body, replayMaxBody+1))
	if err != nil {
		return badRequest("read body: %v", err)
	}
	if len(b) > replayMaxBody {
		return badRequest("case larger than %d bytes, the replay limit", replayMaxBody)
	}
	var c conformance.Case
	if err := decodeBytes(b, &c); err != nil {
		return err
	}
	if err := checkReplayCase(&c); err != nil {
		return err
	}
	if err := c.NormalizeValues(); err != nil {
		return badRequest("%v", err)
	}
	variants := c.OptionVariants
	if len(variants) == 0 {
		variants = []map[string]any{c.Rule.Options}
	}
	if c.Rule.ID == "" {
		c.Rule.ID = "replay"
	}

	select {
	case slots <- struct{}{}:
		defer func() { <-slots }()
	case <-r.Context().Done():
		return badRequest("replay not started: %v", r.Context().Err())
	}
	ctx, cancel := context.WithTimeout(r.Context(), replayTimeout)
	defer cancel()
	hasExpected := c.RawExpected != nil
	out := replayResult{Runs: []replayRun{}}
	all := true
	for i, v := range variants {
		actual, err := conformance.ReplayBounded(ctx, &c, v, s.opts.Functions, conformance.Limits{MaxEmissions: replayMaxEmissions, MaxSteps: replayMaxSteps})
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			return badRequest("replay of variant %d took longer than %s, the limit: shorten the timeline", i, replayTimeout)
		case errors.Is(err, conformance.ErrLimit):
			return badRequest("variant %d: %v: shorten the timeline, or widen the windows or the checkpoint interval", i, err)
		case err != nil:
			return fmt.Errorf("%w: variant %d: %w", rule.ErrInvalid, i, err)
		}
		run := compareRun(c.Expected, conformance.AsExpected(actual), hasExpected)
		run.Options = v
		if run.Options == nil {
			run.Options = map[string]any{}
		}
		if run.Passed != nil && !*run.Passed {
			all = false
		}
		out.Runs = append(out.Runs, run)
	}
	if hasExpected {
		out.Passed = &all
	}
	return writeJSON(w, http.StatusOK, out)
}

// checkReplayCase refuses a case over the bounds or whose timeline or
// streams are broken, naming the problem.
func checkReplayCase(c *conformance.Case) error {
	if c.Rule.SQL == "" {
		return badRequest("rule.sql is empty")
	}
	if len(c.Streams) > replayMaxStreams {
		return badRequest("%d stream definitions, more than %d", len(c.Streams), replayMaxStreams)
	}
	if len(c.OptionVariants) > replayMaxVariants {
		return badRequest("%d option variants, more than %d", len(c.OptionVariants), replayMaxVariants)
	}
	if len(c.RawExpected) > replayMaxEmissions {
		return badRequest("%d expected emissions, more than %d", len(c.RawExpected), replayMaxEmissions)
	}
	records, rows := 0, 0
	for _, evs := range c.Inputs {
		records += len(evs)
	}
	for _, t := range c.Tables {
		rows += len(t)
	}
	if records > replayMaxRecords || rows > replayMaxRecords || len(c.Timeline) > replayMaxRecords {
		return badRequest("%d input records, %d table rows and %d timeline steps: each may be at most %d", records, rows, len(c.Timeline), replayMaxRecords)
	}
	for i, sql := range c.Streams {
		if _, err := engine.ParseDefs([]string{sql}); err != nil {
			return fmt.Errorf("%w: streams[%d]: %w", rule.ErrInvalid, i, err)
		}
	}
	last := c.StartTime
	for i, st := range c.Timeline {
		evs, ok := c.Inputs[st.Stream]
		switch {
		case !ok:
			return badRequest("timeline[%d]: no inputs for stream %q", i, st.Stream)
		case st.Index < 0 || st.Index >= len(evs):
			return badRequest("timeline[%d]: inputs.%s has no record %d", i, st.Stream, st.Index)
		case st.At < last:
			return badRequest("timeline[%d]: at %d is before %d (start_time or the step before): time only moves forward", i, st.At, last)
		}
		last = st.At
	}
	return nil
}

// compareRun sets expected and actual emissions side by side. Whether the
// run passes is conformance.Compare's verdict, as for `kuiper test`; each
// pair is compared alone to mark where the differences are.
func compareRun(expected, actual [][]map[string]any, hasExpected bool) replayRun {
	run := replayRun{Emissions: []replayEmission{}}
	if hasExpected {
		m, _ := conformance.Compare(expected, actual)
		ok := m == nil
		run.Passed = &ok
		if m != nil {
			run.Mismatch = m.Reason
			if m.Index >= 0 {
				run.Mismatch = fmt.Sprintf("emission %d: %s", m.Index, m.Reason)
			}
		}
	}
	n := max(len(expected), len(actual))
	for i := range n {
		e := replayEmission{Index: i}
		if i < len(expected) {
			e.Expected = ptr(conformance.Show(expected[i]))
		}
		if i < len(actual) {
			e.Actual = ptr(conformance.Show(actual[i]))
		}
		if hasExpected {
			match, reason := false, ""
			switch {
			case i >= len(actual):
				reason = "not emitted"
			case i >= len(expected):
				match = len(actual[i]) == 0
				reason = "not expected"
				if match {
					reason = "an extra empty emission, ignored"
				}
			default:
				m, _ := conformance.Compare(expected[i:i+1], actual[i:i+1])
				match = m == nil
				if m != nil {
					reason = m.Reason
				}
			}
			e.Match, e.Reason = &match, reason
		}
		run.Emissions = append(run.Emissions, e)
	}
	return run
}

func ptr[T any](v T) *T { return &v }
