package engine

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/planner"
	"github.com/rekuiper/rekuiper/internal/sql/ast"
)

// CheckStream checks a stream or table definition the way starting a rule
// on it would, without connecting to anything (a KIND="lookup" table is
// checked by checkLookupTable instead): its TYPE is a registered
// source type, its FORMAT is
// one the engine decodes, its CONF_KEY exists (in the type's confKey file
// or stored over REST), a connectionSelector names a stored connection of
// that type, and the resolved properties pass the connector's property
// spec. A broker that is down is not found here: the rule starts and
// retries it. The REST layer calls it when streams and tables are created,
// replaced and imported; rules call it for every stream they read.
func (rn *Engine) CheckStream(_ context.Context, def *ast.CreateStreamStmt) error {
	typ := sourceType(def)
	if rn.cfg.Registry == nil {
		return fmt.Errorf("stream %s: no connector registry", def.Name)
	}
	if planner.IsLookup(def) {
		return rn.checkLookupTable(def)
	}
	entry, ok := rn.cfg.Registry.Source(typ)
	if !ok {
		return fmt.Errorf("stream %s: unknown TYPE %q; source types are %s",
			def.Name, typ, strings.Join(rn.cfg.Registry.Names(connector.KindSource), ", "))
	}
	if _, err := newDecoder(def, rn.cfg.Schemas); err != nil {
		f, _ := def.Option("FORMAT")
		return fmt.Errorf("stream %s: FORMAT %q: %w", def.Name, f, err)
	}
	_, props, err := rn.sourceProps(def)
	if err != nil {
		return err
	}
	if _, err := entry.Spec.Validate(props); err != nil {
		return fmt.Errorf("stream %s: %w", def.Name, err)
	}
	return nil
}

// confFileName names the confKey file of a source type for messages.
func (rn *Engine) confFileName(typ string) string {
	f := rn.cfg.Paths.SourceConfFile(typ)
	if rn.cfg.Paths.Etc == "" {
		return filepath.Base(f)
	}
	if rel, err := filepath.Rel(filepath.Dir(rn.cfg.Paths.Etc), f); err == nil {
		return rel
	}
	return f
}
