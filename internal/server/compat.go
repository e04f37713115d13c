package server

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/rekuiper/rekuiper/internal/connector"
)

// compatRoutes serves the rest of eKuiper's REST surface: the answers
// eKuiper gives with the features rekuiper refuses in kuiper.yaml switched
// off (CPU profiling, metric dumps), connection metadata, and 501s naming
// what to use instead of the routes rekuiper deliberately lacks.
func (s *Server) compatRoutes() {
	const (
		stop    = "stopping the daemon over REST is not supported: stop it with SIGTERM (systemctl stop kuiperd, docker stop)"
		configs = "configuration cannot be changed at run time: set it in kuiper.yaml or KUIPER__ environment variables and restart kuiperd"
		reset   = "resetting a source position is not supported: at qos 1 and 2 a rule resumes from its last checkpoint; delete and recreate the rule to start over"
		yamlIO  = "the YAML export and import are not supported: use GET /data/export and POST /data/import (JSON)"
		dump    = "metric dumps are not supported: read GET /metrics/history, GET /rules/{id}/metrics/history or the Prometheus metrics (basic.prometheus)"
	)
	refuse := func(msg string) handlerFunc {
		return func(w http.ResponseWriter, r *http.Request) error {
			return fmt.Errorf("%s %s: %w: %s", r.Method, r.URL.Path, errNotImplemented, msg)
		}
	}
	s.handle("GET /stop", refuse(stop))
	s.handle("POST /stop", refuse(stop))
	s.handle("PATCH /configs", refuse(configs))
	s.handle("PUT /rules/{id}/reset_state", refuse(reset))
	s.handle("GET /v2/data/export", refuse(yamlIO))
	s.handle("POST /v2/data/import", refuse(yamlIO))
	s.handle("GET /metrics/dump", refuse(dump))
	// basic.metricsDumpConfig.enable and resourceProfileConfig.enable are
	// refused at start, so these answer as eKuiper does with them off.
	s.handle("GET /metrics/dump/check", func(w http.ResponseWriter, r *http.Request) error {
		return writeText(w, http.StatusOK, "disabled")
	})
	s.handle("GET /rules/usage/cpu", func(w http.ResponseWriter, r *http.Request) error {
		return writeText(w, http.StatusOK, "cpu usage not enabled")
	})
	// The operators of eKuiper's graph rules; graph rules are refused.
	s.handle("GET /metadata/operators", func(w http.ResponseWriter, r *http.Request) error {
		return writeJSON(w, http.StatusOK, []any{})
	})
	s.handle("GET /metadata/connections", s.listConnectionMeta)
	s.handle("GET /metadata/connections/{type}", s.connectionMeta)
}

// connectionTypes are the connector types a named connection may have: the
// types whose connections are shared by key, that have a source or a sink.
func (s *Server) connectionTypes() []string {
	if s.opts.Connections == nil {
		return nil
	}
	var out []string
	for _, typ := range s.opts.Connections.Types() {
		if _, kind, ok := s.connectionSpec(typ); ok {
			out = append(out, s.connectorName(kind, typ))
		}
	}
	return out
}

// connectorName is typ as its connector is registered ("redisPub" for
// "redispub"): the connection registry keeps types in lower case.
func (s *Server) connectorName(kind connector.Kind, typ string) string {
	for _, name := range s.opts.Connectors.Names(kind) {
		if strings.EqualFold(name, typ) {
			return name
		}
	}
	return typ
}

// connectionSpec is the property spec of a connection type: its source's,
// or its sink's when it has no source.
func (s *Server) connectionSpec(typ string) (connector.Spec, connector.Kind, bool) {
	for _, k := range []connector.Kind{connector.KindSource, connector.KindSink} {
		if spec, err := s.opts.Connectors.Spec(k, typ); err == nil {
			return spec, k, true
		}
	}
	return connector.Spec{}, 0, false
}

// listConnectionMeta is GET /metadata/connections, eKuiper's list of
// connection types for the UI.
func (s *Server) listConnectionMeta(w http.ResponseWriter, r *http.Request) error {
	out := []map[string]any{}
	for _, typ := range s.connectionTypes() {
		out = append(out, map[string]any{"name": typ, "about": connectionAbout(typ), "type": "internal"})
	}
	return writeJSON(w, http.StatusOK, out)
}

// connectionMeta is GET /metadata/connections/{type}: the properties of a
// connection type, generated from its connector's spec.
func (s *Server) connectionMeta(w http.ResponseWriter, r *http.Request) error {
	typ := r.PathValue("type")
	for _, t := range s.connectionTypes() {
		if !strings.EqualFold(t, typ) {
			continue
		}
		typ = t
		spec, _, _ := s.connectionSpec(typ)
		return writeJSON(w, http.StatusOK, map[string]any{
			"about": connectionAbout(typ), "libs": []string{}, "node": nil, "type": "internal",
			"properties": map[string]any{"default": fieldsOf(spec)},
		})
	}
	return notFound(fmt.Errorf("connection type %q", typ))
}

func connectionAbout(typ string) *metaAbout {
	return &metaAbout{Installed: true, Description: text(fmt.Sprintf("the built-in %s connection", typ))}
}
