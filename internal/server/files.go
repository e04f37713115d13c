package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/connector/file"
	access "github.com/rekuiper/rekuiper/internal/guard"
	"github.com/rekuiper/rekuiper/internal/rule"
	"github.com/rekuiper/rekuiper/internal/sql/ast"
)

// dataDir is the folder relative file paths resolve against.
func (s *Server) dataDir() string { return s.opts.Config.Paths.Data }

// checkStreamFiles checks, at create time, the paths a file stream names:
// its confKey's path and moveTo, DATASOURCE and the EXTRA properties,
// resolved as the engine resolves them. Other stream types name no files.
func (s *Server) checkStreamFiles(cs *ast.CreateStreamStmt) error {
	typ, _ := cs.Option("TYPE")
	if !strings.EqualFold(typ, file.Type) {
		return nil
	}
	key, _ := cs.Option("CONF_KEY")
	if key == "" {
		key = "default"
	}
	props := map[string]any{}
	merged, err := s.mergedConfKeys("sources", file.Type)
	if err != nil {
		return err
	}
	maps.Copy(props, merged["default"])
	maps.Copy(props, merged[key])
	if ds, ok := cs.Option("DATASOURCE"); ok {
		props["datasource"] = ds
	}
	if extra, ok := cs.Option("EXTRA"); ok && extra != "" {
		var m map[string]any
		if err := json.Unmarshal([]byte(extra), &m); err == nil {
			maps.Copy(props, m)
		}
	}
	if err := checkFilePaths(s.access, s.dataDir(), connector.KindSource, props); err != nil {
		return fmt.Errorf("%s %s: %w", strings.ToLower(cs.Kind.String()), cs.Name, err)
	}
	return nil
}

// checkFilePaths is file.CheckPaths with its answers: a path outside the
// data folder is a 422 (guard.ErrOutside, docs/security.md), a property of
// the wrong form a 400 like every source property (docs/limits.md).
func checkFilePaths(g *access.Guard, dataDir string, k connector.Kind, props map[string]any) error {
	err := file.CheckPaths(g, dataDir, k, props)
	if errors.Is(err, file.ErrProps) {
		return badRequest("%s", strings.TrimPrefix(err.Error(), file.ErrProps.Error()+": "))
	}
	return err
}

// restoreStreamSQL returns the stored statement of stream name when sql is
// that statement with its secrets masked (an export imported back), and
// sql otherwise. A statement carrying a masked value that differs from the
// stored one is refused: the secret would go to a changed endpoint.
func (s *Server) restoreStreamSQL(name, sql string) (string, error) {
	if !strings.Contains(sql, rule.MaskedValue) {
		return sql, nil
	}
	old, err := s.cat.Stream(name)
	if err != nil {
		return sql, nil //nolint:nilerr // nothing stored: kept as given
	}
	return rule.RestoreText("stream "+name+": the statement", sql, old.SQL, rule.MaskStreamSQL)
}

// checkConfKeyFiles checks the paths of a file source or sink confKey.
func (s *Server) checkConfKeyFiles(c, typ string, props map[string]any) error {
	if typ != file.Type {
		return nil
	}
	k := connector.KindSource
	if c == "sinks" {
		k = connector.KindSink
	}
	return checkFilePaths(s.access, s.dataDir(), k, props)
}
