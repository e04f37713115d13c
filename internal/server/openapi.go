package server

import (
	_ "embed"
	"net/http"
)

// openAPI describes every route (OpenAPI 3); TestOpenAPI checks that it
// names every route of the table and that real responses match it.
//
//go:embed openapi.json
var openAPI []byte

func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) error {
	return writeRawJSON(w, http.StatusOK, openAPI)
}
