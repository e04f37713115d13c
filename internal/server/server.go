// Package server is kuiperd's REST API, compatible with eKuiper v2's paths,
// bodies and success responses. Handlers return errors; one function
// renders them as {"error": code, "message": text} and one function maps
// them to a status: 400 malformed input, 404 unknown name, 409 name exists
// or still referenced, 422 a rule that does not validate, 500 storage
// failure. Secret properties never leave the server unmasked.
package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/rekuiper/rekuiper/internal/auth"
	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/cluster"
	"github.com/rekuiper/rekuiper/internal/config"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/connector/builtin"
	"github.com/rekuiper/rekuiper/internal/connector/connection"
	"github.com/rekuiper/rekuiper/internal/connector/membus"
	"github.com/rekuiper/rekuiper/internal/console"
	"github.com/rekuiper/rekuiper/internal/function"
	access "github.com/rekuiper/rekuiper/internal/guard"
	"github.com/rekuiper/rekuiper/internal/jsudf"
	"github.com/rekuiper/rekuiper/internal/metrics"
	"github.com/rekuiper/rekuiper/internal/netlimit"
	"github.com/rekuiper/rekuiper/internal/rule"
	"github.com/rekuiper/rekuiper/internal/rulemgr"
	"github.com/rekuiper/rekuiper/internal/schema"
	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/tap"
	"github.com/rekuiper/rekuiper/internal/tracing"
	"github.com/rekuiper/rekuiper/internal/trial"
	"github.com/rekuiper/rekuiper/internal/version"
)

// Options configure a Server. Catalog and Rules are required.
type Options struct {
	Catalog *catalog.Catalog
	Rules   *rulemgr.Manager
	// Config gives the etc folder whose confKey files GET /metadata/... and
	// /data/export merge with the catalog. Nil means defaults.
	Config *config.Config
	// Environ is the environment for confKey file overrides.
	Environ []string
	Logger  *slog.Logger
	Clock   clock.Clock
	// Version and Commit are reported by GET /; an empty Version means the
	// binary's own (package version).
	Version, Commit string
	// Connections reports the live state of named connections in GET
	// /connections. Nil: every connection reads disconnected, refCount 0.
	Connections *connection.Registry
	// Connectors and Functions feed the /metadata routes and connection
	// checks. Nil: the built-in connectors and functions.
	Connectors *connector.Registry
	Functions  *function.Registry
	// Memory is the daemon's memory bus, tapped by GET /memory/events. Nil:
	// that route answers 404.
	Memory *membus.Bus
	// Streams checks stream and table definitions when they are created,
	// replaced or imported (engine.Engine.CheckStream). Nil: definitions
	// are only parsed.
	Streams StreamChecker
	// Warnings are shown in GET / (e.g. a listener exposed without
	// authentication).
	Warnings []string
	// JSLimits bound the run of a JavaScript function's script when it is
	// checked at create and update. Zero: jsudf.DefaultLimits.
	JSLimits jsudf.Limits
	// Cluster names this node (GET / and rule status show its id as
	// "node") and lists the members (GET /cluster/nodes). Nil: a node
	// without id, alone.
	Cluster *cluster.Membership
	// Taps carries the running rules' emissions to GET /rules/{id}/tap.
	// Nil: that route answers 404.
	Taps *tap.Hub
	// History serves GET /metrics/history and /rules/{id}/metrics/history.
	// Nil: those routes answer 404.
	History *metrics.History
	// Tracing is the rules' data tracing, read by the trace routes. Nil:
	// starting a trace answers 501 and no trace is found.
	Tracing *tracing.Service
}

// StreamChecker checks a stream or table definition against the engine:
// connector type, format, confKey, connection and properties.
type StreamChecker interface {
	CheckStream(ctx context.Context, def *ast.CreateStreamStmt) error
}

// Server is the REST API. It is an http.Handler.
type Server struct {
	opts    Options
	cat     *catalog.Catalog
	rules   *rulemgr.Manager
	log     *slog.Logger
	access  *access.Guard // the file and network guard
	mux     *http.ServeMux
	started time.Time
	// patterns are the routes in registration order (GET /openapi.json
	// describes them; a test checks it describes every one).
	patterns []string
	guard    guard
	schemas  *schema.Registry
	// builtins are the functions compiled in (built-in and extension),
	// whose names JavaScript functions may not take.
	builtins *function.Registry
	// trials are the rule test runs of /ruletest.
	trials *trial.Manager
	// imports are the latest data import's answer and the async imports.
	imports *imports
	// streams caps the open event streams (limits.maxEventStreams);
	// unauthenticated bounds the requests without a valid token per
	// address, nil when authentication is off.
	streams         *netlimit.Slots
	unauthenticated *netlimit.Rate
}

var _ http.Handler = (*Server)(nil)

// New builds the REST API over opts.
func New(opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Clock == nil {
		opts.Clock = clock.Wall{}
	}
	if opts.Config == nil {
		opts.Config = config.Default()
	}
	if opts.Connectors == nil {
		opts.Connectors = connector.NewRegistry()
		if err := builtin.Register(opts.Connectors); err != nil {
			opts.Logger.Error("register built-in connectors", "err", err)
		}
	}
	if opts.Functions == nil {
		opts.Functions = function.Builtins()
	}
	if opts.Version == "" {
		v := version.Get()
		opts.Version, opts.Commit = v.Version, v.Commit
	}
	if opts.Cluster == nil {
		opts.Cluster = cluster.New(cluster.Config{Version: opts.Version, Clock: opts.Clock})
	}
	if opts.JSLimits == (jsudf.Limits{}) {
		opts.JSLimits = jsudf.DefaultLimits()
	}
	s := &Server{
		opts: opts, cat: opts.Catalog, rules: opts.Rules, log: opts.Logger,
		access: opts.Config.Guard(), mux: http.NewServeMux(), started: opts.Clock.Now(),
		builtins: opts.Functions, imports: newImports(opts.Clock),
	}
	s.guard = guard{audit: opts.Config.Basic.EnableRestAuditLog, cors: map[string]bool{}}
	for _, o := range opts.Config.Basic.CORS {
		s.guard.cors[strings.TrimSuffix(o, "/")] = true
	}
	lim := opts.Config.Limits
	if lim == (config.Limits{}) { // a configuration built by hand
		lim = config.DefaultLimits()
		opts.Config.Limits = lim
	}
	s.streams = netlimit.NewSlots("event streams", lim.MaxEventStreams, "limits.maxEventStreams",
		lim.MaxEventStreamsPerRule, "limits.maxEventStreamsPerRule")
	if opts.Config.Basic.Authentication {
		s.guard.verifier = auth.NewVerifier(filepath.Join(opts.Config.Paths.Etc, auth.KeyDir), opts.Clock.Now)
		s.unauthenticated = netlimit.NewRate(lim.UnauthenticatedRate, lim.UnauthenticatedBurst, opts.Clock.Now)
	}
	s.routes()
	return s
}

// EventStreams returns the number of event streams open now and of those
// refused by the limits so far.
func (s *Server) EventStreams() (open int, refused int64) {
	return s.streams.Open(), s.streams.Refused()
}

// Routes returns the route patterns ("METHOD /path/{var}") in the order
// they were registered.
func (s *Server) Routes() []string { return slices.Clone(s.patterns) }

// ServeHTTP checks the request (origin, token, content type; see
// serveGuarded), dispatches it to its route and, with
// basic.enableRestAuditLog, logs mutating requests.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.guard.audit && isMutating(r.Method) {
		s.serveAudited(w, r)
		return
	}
	s.serveGuarded(w, r)
}

// Mount serves h at pattern (a ServeMux pattern) behind the same checks as
// the API's routes; the daemon mounts /metrics and /debug/pprof/ this way
// when they share the REST port. Call it before serving.
func (s *Server) Mount(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// handle serves pattern with h; errors h returns are rendered by
// renderError. When the handler fails and a name in the path (a {wildcard}) is one the
// name validator refuses, the answer is the name's problem (400): such a
// name can be neither found nor created. The handler runs first, so that
// rows with such names written by older versions can still be read and
// deleted.
func (s *Server) handle(pattern string, h handlerFunc) {
	s.patterns = append(s.patterns, pattern)
	names := pathNames(pattern)
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			for _, n := range names {
				if nerr := validName(n.what, r.PathValue(n.wildcard)); nerr != nil {
					err = nerr
					break
				}
			}
			s.renderError(w, r, err)
		}
	})
}

// pathName is a wildcard of a route pattern and what it names in errors.
type pathName struct{ wildcard, what string }

// pathNames lists the wildcards of a route pattern, each described by the
// path segment before it: "/rules/{id}" names a "rule id", "/streams/{name}"
// a "stream".
func pathNames(pattern string) []pathName {
	_, path, _ := strings.Cut(pattern, " ")
	segs := strings.Split(path, "/")
	var out []pathName
	for i, seg := range segs {
		if len(seg) < 3 || seg[0] != '{' || seg[len(seg)-1] != '}' || seg == "{$}" || strings.HasSuffix(seg, "...}") {
			continue
		}
		n := pathName{wildcard: seg[1 : len(seg)-1], what: seg[1 : len(seg)-1]}
		if i > 0 && segs[i-1] != "" {
			noun := strings.TrimSuffix(segs[i-1], "s")
			n.what = noun + " " + n.what
			if n.wildcard == "name" {
				n.what = noun
			}
		}
		out = append(out, n)
	}
	return out
}

func (s *Server) routes() {
	s.handle("GET /{$}", s.info)
	s.handle("POST /{$}", s.info)
	s.handle("GET /ping", func(w http.ResponseWriter, r *http.Request) error { return nil })
	s.streamRoutes()
	s.ruleRoutes()
	s.connectionRoutes()
	s.transferRoutes()
	s.udfRoutes()
	s.metadataRoutes()
	s.unsupportedRoutes()
	s.schemaRoutes()
	s.uploadRoutes()
	s.memoryRoutes()
	s.ruleTestRoutes()
	s.replayRoutes()
	s.tapRoutes()
	s.historyRoutes()
	s.Mount("/console/", console.Handler())
	s.traceRoutes()
	s.handle("POST /batch/req", s.batch)
	s.handle("GET /rules/{id}/schema", s.ruleSchema)
	s.handle("GET /openapi.json", s.openAPI)
	s.handle("GET /cluster/nodes", s.clusterNodes)
	s.importTaskRoutes()
	s.compatRoutes()
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.renderError(w, r, fmt.Errorf("%s %s: %w", r.Method, r.URL.Path, errNoRoute))
	})
}

func (s *Server) info(w http.ResponseWriter, r *http.Request) error {
	if r.Method == http.MethodGet && console.WantsPage(r) {
		http.Redirect(w, r, "/console/", http.StatusFound)
		return nil
	}
	up := s.opts.Clock.Now().Sub(s.started)
	out := map[string]any{
		"version":       s.opts.Version,
		"commit":        s.opts.Commit,
		"os":            runtime.GOOS,
		"arch":          runtime.GOARCH,
		"upTimeSeconds": int64(up.Seconds()),
	}
	si := readSysInfo(up)
	for k, v := range map[string]string{"cpuUsage": si.CPUUsage, "memoryUsed": si.MemoryUsed, "memoryTotal": si.MemoryTotal} {
		if v != "" {
			out[k] = v
		}
	}
	if len(s.opts.Warnings) > 0 {
		out["warnings"] = s.opts.Warnings
	}
	if id := s.opts.Cluster.ID(); id != "" {
		out["node"] = id
	}
	return writeJSON(w, http.StatusOK, out)
}

// clusterNodes lists the daemons sharing the catalog (this one alone with
// the embedded SQLite catalog).
func (s *Server) clusterNodes(w http.ResponseWriter, r *http.Request) error {
	nodes, err := s.opts.Cluster.Nodes(r.Context())
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, nodes)
}

// Errors the handlers return besides those of catalog, rule and rulemgr.
var (
	errBadRequest = errors.New("bad request")
	errReferenced = errors.New("still referenced")
	errNoRoute    = errors.New("no such route")
)

// requestError is a 400: the problem, and the eKuiper error code to answer
// with where eKuiper's clients compare code and text byte for byte
// (connection pings, import results); 0 answers the code of the status.
type requestError struct {
	code int
	msg  string
}

func (e *requestError) Error() string { return e.msg }

// Is makes a requestError a bad request for statusOf.
func (e *requestError) Is(target error) bool { return target == errBadRequest }

func badRequest(format string, args ...any) error {
	return &requestError{msg: fmt.Sprintf(format, args...)}
}

// ekuiperError is a 400 answered with code and exactly this message, as
// eKuiper answers it.
func ekuiperError(code int, format string, args ...any) error {
	return &requestError{code: code, msg: fmt.Sprintf(format, args...)}
}

// statusOf is the one mapping from errors to HTTP status codes.
func statusOf(err error) int {
	switch {
	case errors.Is(err, errNoRoute), errors.Is(err, catalog.ErrNotFound), errors.Is(err, errNotFound):
		return http.StatusNotFound
	case errors.Is(err, errBadRequest), errors.Is(err, rule.ErrMalformed), errors.Is(err, catalog.ErrInvalid), errors.Is(err, access.ErrName):
		return http.StatusBadRequest
	case errors.Is(err, catalog.ErrConflict), errors.Is(err, errReferenced), errors.Is(err, rulemgr.ErrNotRunning):
		return http.StatusConflict
	case errors.Is(err, rule.ErrInvalid), errors.Is(err, access.ErrOutside), errors.Is(err, access.ErrBlockedAddress):
		return http.StatusUnprocessableEntity
	case errors.Is(err, errNotImplemented):
		return http.StatusNotImplemented
	case errors.Is(err, auth.ErrUnauthorized):
		return http.StatusUnauthorized
	case errors.Is(err, errForbiddenOrigin):
		return http.StatusForbidden
	case errors.Is(err, errMediaType):
		return http.StatusUnsupportedMediaType
	case errors.Is(err, rulemgr.ErrClosed), errors.Is(err, catalog.ErrClosed), errors.Is(err, netlimit.ErrBusy):
		return http.StatusServiceUnavailable
	case errors.Is(err, netlimit.ErrTooMany):
		return http.StatusTooManyRequests
	default:
		return http.StatusInternalServerError
	}
}

// errorCode is the "error" field: eKuiper's error code families.
func errorCode(status int) int {
	switch status {
	case http.StatusNotFound:
		return 1002 // not found
	case http.StatusInternalServerError, http.StatusServiceUnavailable:
		return 1003 // IO
	case http.StatusUnprocessableEntity:
		return 4000 // rule
	default:
		return 1001 // general
	}
}

// renderError is the one place errors become responses.
func (s *Server) renderError(w http.ResponseWriter, r *http.Request, err error) {
	status := statusOf(err)
	code, msg := errorCode(status), rule.MaskText(err.Error())
	var re *requestError
	if errors.As(err, &re) && re.code != 0 {
		code, msg = re.code, rule.MaskText(re.msg)
	}
	if errors.Is(err, netlimit.ErrBusy) || errors.Is(err, netlimit.ErrTooMany) {
		// A flood would fill the log: refusals are counted in metrics.
		w.Header().Set("Retry-After", "1")
		s.log.Debug("rest call refused", "method", r.Method, "path", r.URL.Path, "status", status, "err", msg)
	} else if status >= 500 {
		s.log.Error("rest call failed", "method", r.Method, "path", r.URL.Path, "status", status, "err", msg)
	} else {
		s.log.Debug("rest call rejected", "method", r.Method, "path", r.URL.Path, "status", status, "err", msg)
	}
	// One line ending with a newline, as eKuiper's. <, > and & stay
	// escaped: messages echo what clients sent.
	var b bytes.Buffer
	json.NewEncoder(&b).Encode(map[string]any{"error": code, "message": msg}) //nolint:errcheck // a map of a string and an int
	writeRawJSON(w, status, b.Bytes())                                        //nolint:errcheck // the client is gone
}

func writeJSON(w http.ResponseWriter, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode response: %w", err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, err = w.Write(b)
	return err
}

func writeRawJSON(w http.ResponseWriter, status int, b []byte) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, err := w.Write(b)
	return err
}

func writeText(w http.ResponseWriter, status int, format string, args ...any) error {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	_, err := fmt.Fprintf(w, format, args...)
	return err
}

const maxBody = 32 << 20

func readBody(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return nil, badRequest("read body: %v", err)
	}
	if len(b) > maxBody {
		return nil, badRequest("body larger than %d bytes", maxBody)
	}
	return b, nil
}

// decodeStrict decodes a JSON body into dst, refusing unknown fields and
// trailing data; errors are 400 naming the problem.
func decodeStrict(r *http.Request, dst any) error {
	b, err := readBody(r)
	if err != nil {
		return err
	}
	return decodeBytes(b, dst)
}

func decodeBytes(b []byte, dst any) error {
	if len(bytes.TrimSpace(b)) == 0 {
		return badRequest("empty body")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(dst); err != nil {
		return badRequest("decode body: %v", strings.TrimPrefix(err.Error(), "json: "))
	}
	if dec.More() {
		return badRequest("decode body: trailing data after the json value")
	}
	return nil
}

// validName checks a name a client gave with the engine's one name
// validator; errors are 400 naming what the name is for.
func validName(what, name string) error {
	if err := access.Name(what, name); err != nil {
		return badRequest("%s", strings.TrimPrefix(err.Error(), access.ErrName.Error()+": "))
	}
	return nil
}
