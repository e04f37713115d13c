package server

import (
	"errors"
	"net/http"
	"strings"

	"github.com/rekuiper/rekuiper/internal/rule"
	"github.com/rekuiper/rekuiper/internal/sql/parser"
)

// streamCheck is the answer of POST /streams/validate and /tables/validate.
// Line and Col (1-based) are set when the statement has a syntax error.
type streamCheck struct {
	Valid   bool   `json:"valid"`
	Name    string `json:"name,omitempty"`
	Message string `json:"message,omitempty"`
	Line    int    `json:"line,omitempty"`
	Col     int    `json:"col,omitempty"`
}

// validateStream runs every check POST /streams runs on a statement (syntax,
// kind, name, connector properties, file paths) and stores nothing. A
// statement that fails a check is answered 200 with valid false, so that
// an editor validating as the user types reads one shape; a body that is
// not {"sql": "..."} is a 400.
func (s *Server) validateStream(k streamKind) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		var body struct {
			SQL string `json:"sql"`
		}
		if err := decodeStrict(r, &body); err != nil {
			return err
		}
		if strings.TrimSpace(body.SQL) == "" {
			return badRequest("field sql is required")
		}
		cs, err := parseCreateStream(body.SQL, k, true) // as POST does: the statement decides the kind
		if err == nil {
			err = s.checkStreamFiles(cs)
		}
		if err == nil {
			err = s.checkStream(r, cs)
		}
		if err != nil {
			out := streamCheck{Message: rule.MaskText(strings.TrimPrefix(err.Error(), errBadRequest.Error()+": "))}
			var pe *parser.Error
			if errors.As(err, &pe) && pe.Pos.IsValid() {
				out.Line, out.Col = pe.Pos.Line, pe.Pos.Col
			}
			return writeJSON(w, http.StatusOK, out)
		}
		return writeJSON(w, http.StatusOK, streamCheck{Valid: true, Name: cs.Name})
	}
}
