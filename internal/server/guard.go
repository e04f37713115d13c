package server

import (
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/rekuiper/rekuiper/internal/auth"
	"github.com/rekuiper/rekuiper/internal/netlimit"
)

// Errors of the request guard, mapped by statusOf.
var (
	errForbiddenOrigin = errors.New("origin not allowed")
	errMediaType       = errors.New("unsupported media type")
)

// guard holds what the server checks before any route runs: the browser
// origins it trusts, the token verifier (nil: authentication off) and
// whether mutating requests are written to the audit log.
type guard struct {
	cors     map[string]bool
	verifier *auth.Verifier
	audit    bool
}

// serveGuarded applies, in order: the origin check and CORS (a request
// with an Origin header that is neither the server's own nor listed in
// basic.cors gets 403; listed origins get CORS headers and their preflight
// answered), authentication, and the content type of mutating requests
// (a body must be application/json). It returns the token's subject, "-"
// when there is none.
func (s *Server) serveGuarded(w http.ResponseWriter, r *http.Request) string {
	subject := "-"
	if origin := r.Header.Get("Origin"); origin != "" {
		done, err := s.checkOrigin(w, r, origin)
		if err != nil {
			s.renderError(w, r, err)
			return subject
		}
		if done {
			return subject
		}
	}
	if s.guard.verifier != nil && !auth.IsOpenPath(r.URL.Path) {
		claims, err := s.guard.verifier.Verify(r.Header.Get("Authorization"))
		if err != nil && !s.unauthenticated.Allow(netlimit.AddrOf(r.RemoteAddr)) {
			// A valid token always gets in; guesses are rationed.
			lim := s.opts.Config.Limits
			err = fmt.Errorf("%w: too many requests without a valid token from this address (limits.unauthenticatedRate %v a second, limits.unauthenticatedBurst %d)",
				netlimit.ErrTooMany, lim.UnauthenticatedRate, lim.UnauthenticatedBurst)
		}
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="kuiper"`)
			s.renderError(w, r, err)
			return subject
		}
		if claims.Subject != "" {
			subject = claims.Subject
		}
	}
	if isMutating(r.Method) && r.ContentLength != 0 {
		if err := checkJSONBody(r); err != nil {
			s.renderError(w, r, err)
			return subject
		}
	}
	if hasDotSegment(r.URL.Path) {
		// No route has a "." or ".." segment; the mux would redirect to
		// the cleaned path, which turns a traversal probe into a request
		// for another route. Refuse it instead.
		s.renderError(w, r, badRequest("path %q: '.' and '..' segments are not allowed", r.URL.Path))
		return subject
	}
	s.mux.ServeHTTP(w, r)
	return subject
}

// hasDotSegment reports whether p (decoded) has a "." or ".." segment.
func hasDotSegment(p string) bool {
	for seg := range strings.SplitSeq(p, "/") {
		if seg == "." || seg == ".." {
			return true
		}
	}
	return false
}

// checkOrigin allows the server's own origin and the listed ones, sets the
// CORS headers for the listed ones and answers their preflight requests
// (done is then true).
func (s *Server) checkOrigin(w http.ResponseWriter, r *http.Request, origin string) (done bool, err error) {
	listed := s.guard.cors[origin]
	if !listed && !sameOrigin(origin, r) {
		return false, fmt.Errorf("%w: %q may not call this API; list it in basic.cors to allow it", errForbiddenOrigin, origin)
	}
	if !listed {
		return false, nil
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
	if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
		h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE")
		h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type")
		h.Set("Access-Control-Max-Age", "600")
		w.WriteHeader(http.StatusNoContent)
		return true, nil
	}
	return false, nil
}

// sameOrigin reports whether origin names the host and port the request
// was sent to.
func sameOrigin(origin string, r *http.Request) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false
	}
	return strings.EqualFold(withPort(u.Host, u.Scheme), withPort(r.Host, u.Scheme))
}

// withPort adds the scheme's default port to a host without one.
func withPort(host, scheme string) string {
	if u := (&url.URL{Host: host}); u.Port() != "" {
		return host
	}
	if scheme == "https" {
		return host + ":443"
	}
	return host + ":80"
}

func isMutating(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// checkJSONBody refuses a request body that is not declared JSON, so that
// a web page cannot send one with an HTML form or a "simple" fetch. A body
// without any Content-Type is read as JSON when the request has no Origin
// header: forms always declare a type, and browsers send Origin with every
// POST, PUT, PATCH and DELETE, so only non-browser clients (curl, scripts,
// eKuiper's own clients, which send PUT bodies untyped) get there. The one
// other exception is a multipart/form-data upload to POST /config/uploads
// (eKuiper's upload form); the origin check and authentication still
// apply to it.
func checkJSONBody(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		if r.Header.Get("Origin") == "" {
			return nil
		}
		return fmt.Errorf("%w: a request body needs the header Content-Type: application/json", errMediaType)
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil && mt == "multipart/form-data" && r.Method == http.MethodPost && r.URL.Path == uploadsPath {
		return nil
	}
	if err != nil || mt != "application/json" {
		return fmt.Errorf("%w: %q; send the body as application/json", errMediaType, ct)
	}
	return nil
}

// statusWriter records the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// serveAudited serves a mutating request and logs who did what: the token
// subject, the method, the route pattern and the status; never the body,
// the query or the headers.
func (s *Server) serveAudited(w http.ResponseWriter, r *http.Request) {
	sw := &statusWriter{ResponseWriter: w}
	subject := s.serveGuarded(sw, r)
	_, route := s.mux.Handler(r)
	if _, path, ok := strings.Cut(route, " "); ok {
		route = path // the method is logged on its own
	}
	if route == "" || route == "/" {
		route = "-"
	}
	if sw.status == 0 {
		sw.status = http.StatusOK
	}
	s.log.Info("rest audit", "subject", subject, "method", r.Method, "route", route, "status", sw.status)
}
