package server

import (
	"errors"
	"fmt"
	"net/http"
)

// errNotImplemented marks eKuiper features rekuiper deliberately lacks: 501.
var errNotImplemented = errors.New("not implemented")

// The extension routes of eKuiper that rekuiper does not offer. Lists
// answer empty, so clients that only read keep working; reads of one item
// answer 404; writes answer 501 naming what to use instead.
func (s *Server) unsupportedRoutes() {
	const (
		plugins  = "native and portable plugins are not supported: build connectors and functions into kuiperd with the public Go SDK (see docs/extensions.md)"
		services = "external services are not supported: call HTTP services with the rest sink or httppull lookups, or extend kuiperd with the public Go SDK"
		schemas  = "schema upload as a multipart form is not supported: POST or PUT /schemas/{type} with {\"name\",\"content\"} or a file:// URL of an uploaded file"
	)
	empty := func(v any) handlerFunc {
		return func(w http.ResponseWriter, r *http.Request) error { return writeJSON(w, http.StatusOK, v) }
	}
	none := func(what string) handlerFunc {
		return func(w http.ResponseWriter, r *http.Request) error {
			return notFound(fmt.Errorf("%s %s", what, r.URL.Path))
		}
	}
	refuse := func(msg string) handlerFunc {
		return func(w http.ResponseWriter, r *http.Request) error {
			return fmt.Errorf("%s %s: %w: %s", r.Method, r.URL.Path, errNotImplemented, msg)
		}
	}
	for _, k := range []string{"sources", "sinks", "functions", "portables"} {
		s.handle("GET /plugins/"+k, empty([]string{}))
		s.handle("POST /plugins/"+k, refuse(plugins))
		s.handle("GET /plugins/"+k+"/{name}", none("plugin"))
		s.handle("PUT /plugins/"+k+"/{name}", refuse(plugins))
		s.handle("DELETE /plugins/"+k+"/{name}", refuse(plugins))
	}
	for _, k := range []string{"sources", "sinks", "functions"} {
		s.handle("GET /plugins/"+k+"/prebuild", empty(map[string]string{}))
	}
	s.handle("GET /plugins/portables/{name}/status", none("plugin"))
	s.handle("GET /plugins/udfs", empty([]string{}))
	s.handle("GET /plugins/udfs/{name}", none("function plugin"))
	s.handle("POST /plugins/functions/{name}/register", refuse(plugins))

	s.handle("GET /services", empty([]string{}))
	s.handle("POST /services", refuse(services))
	s.handle("GET /services/functions", empty([]string{}))
	s.handle("GET /services/functions/{name}", none("service function"))
	s.handle("GET /services/{name}", none("service"))
	s.handle("PUT /services/{name}", refuse(services))
	s.handle("DELETE /services/{name}", refuse(services))

	s.handle("PUT /schemas/{type}/{name}/upload", refuse(schemas))

}
