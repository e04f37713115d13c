// Package file provides the file source (read records from files in a
// folder, once or periodically) and the file sink (append encoded results
// to a file, with optional rolling).
package file

import (
	"path/filepath"
	"strings"

	"github.com/rekuiper/rekuiper/internal/connector"
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
