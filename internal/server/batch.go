package server

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/rekuiper/rekuiper/internal/rule"
)

// maxBatch bounds the calls of one POST /batch/req.
const maxBatch = 1000

type batchCall struct {
	Method string `json:"method"`
	Path   string `json:"path"`
	Body   string `json:"body"`
}

type batchAnswer struct {
	Code     int    `json:"code"`
	Response string `json:"response,omitempty"`
	Error    string `json:"error,omitempty"`
}

// batch runs each call through the route table in order, with the batch
// request's headers, and answers their statuses and bodies (eKuiper's
// /batch/req). A call that cannot be made (bad method or path, a nested
// batch) has an error instead of a code.
func (s *Server) batch(w http.ResponseWriter, r *http.Request) error {
	var calls []batchCall
	if err := decodeStrict(r, &calls); err != nil {
		return err
	}
	if len(calls) > maxBatch {
		return badRequest("batch of %d calls, at most %d allowed", len(calls), maxBatch)
	}
	out := make([]batchAnswer, 0, len(calls))
	for _, c := range calls {
		if !strings.HasPrefix(c.Path, "/") {
			out = append(out, batchAnswer{Error: "path " + c.Path + " must start with /"})
			continue
		}
		if strings.HasPrefix(c.Path, "/batch/") {
			out = append(out, batchAnswer{Error: "a batch cannot contain a batch"})
			continue
		}
		req, err := http.NewRequestWithContext(r.Context(), strings.ToUpper(c.Method), c.Path, bytes.NewBufferString(c.Body))
		if err != nil {
			out = append(out, batchAnswer{Error: rule.MaskText(err.Error())})
			continue
		}
		req.Header = r.Header.Clone()
		rec := httptest.NewRecorder()
		s.mux.ServeHTTP(rec, req)
		out = append(out, batchAnswer{Code: rec.Code, Response: rec.Body.String()})
	}
	return writeJSON(w, http.StatusOK, out)
}
