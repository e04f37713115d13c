// Package console is kuiperd's web console: hand-written HTML, CSS and
// JavaScript modules embedded in the binary and served at /console/ on the
// REST port. The assets hold no data and need no token; every call the
// console makes goes to the REST API with the user's token, through the
// same checks as any other client.
package console

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

//go:embed assets
var assets embed.FS

// Prefix is the path the console is served under.
const Prefix = "/console/"

// contentSecurityPolicy allows the console's own scripts, styles and API
// calls and nothing else: no inline script, no third-party origin, no
// framing.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"

// Handler serves the console's assets; mount it at Prefix.
func Handler() http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree always has the folder
	}
	files := http.StripPrefix(Prefix, http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		// The assets change with the binary: revalidate every time
		// (the file server answers 304 while they are the same).
		h.Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}

// WantsPage reports whether a request for / comes from a browser
// navigating (it accepts HTML and does not ask for JSON), which is sent
// to the console; API clients (curl's */*, application/json) are not.
func WantsPage(r *http.Request) bool {
	accept := r.Header.Get("Accept")
	return strings.Contains(accept, "text/html") && !strings.Contains(accept, "application/json")
}
