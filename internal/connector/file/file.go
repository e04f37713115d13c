// Package file provides the file source (read records from files in a
// folder, once or periodically) and the file sink (append encoded results
// to a file, with optional rolling).
package file

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/guard"
)

// Type is the connector type name.
const Type = "file"

// File types.
const (
	typeJSON  = "json"
	typeCSV   = "csv"
	typeLines = "lines"
)

// Register adds the file source and sink to r.
func Register(r *connector.Registry) error {
	if err := r.RegisterSource(Type, SourceSpec(), NewSource); err != nil {
		return err
	}
	return r.RegisterSink(Type, SinkSpec(), NewSink)
}

// ErrProps marks a property CheckPaths refuses for its form rather than
// for where it points (test with errors.Is).
var ErrProps = errors.New("invalid file property")

// CheckPaths checks the paths a client set in props of a file source
// (path, datasource, moveTo) or sink (path) against g, with the same
// resolution the connector uses. REST calls it at create time; the
// connector checks again when it is built and opens, moves and removes
// every file through the guard. A path outside the allowed folders wraps
// guard.ErrOutside; a datasource that is not one file name wraps ErrProps.
func CheckPaths(g *guard.Guard, dataDir string, k connector.Kind, props map[string]any) error {
	str := func(k, def string) string {
		if v, ok := props[k].(string); ok && v != "" {
			return v
		}
		return def
	}
	switch k {
	case connector.KindSource:
		dir := resolve(dataDir, str("path", "data"))
		if err := g.Path("path", dir); err != nil {
			return err
		}
		if ds := str("datasource", ""); ds != "" {
			// Where it points first: an absolute DATASOURCE is checked as
			// the path it names, a relative one inside path, so that one
			// leading outside the data folder is refused as such.
			p := ds
			if !filepath.IsAbs(ds) {
				p = filepath.Join(dir, ds)
			}
			if err := g.Path("datasource", p); err != nil {
				return err
			}
			if strings.ContainsAny(ds, `/\`) || ds == "." || ds == ".." {
				return fmt.Errorf("%w: datasource %q must be a file name inside path", ErrProps, ds)
			}
		}
		if mv := str("moveTo", ""); mv != "" {
			return g.Path("moveTo", resolve(dataDir, mv))
		}
	case connector.KindSink:
		return g.Path("path", resolve(dataDir, str("path", "cache")))
	}
	return nil
}

// resolve makes p absolute. Relative paths are relative to the data
// directory, and a leading "data" element names the data directory itself,
// so eKuiper's usual `path: data` and `data/sub` keep their meaning.
func resolve(dataDir, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	p = filepath.ToSlash(filepath.Clean(p))
	if p == "data" {
		p = "."
	} else if rest, ok := strings.CutPrefix(p, "data/"); ok {
		p = rest
	}
	return filepath.Join(dataDir, filepath.FromSlash(p))
}
