package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/function"
	"github.com/rekuiper/rekuiper/internal/jsudf"
	"github.com/rekuiper/rekuiper/internal/sql/ast"
)

// jsFunctionBody is eKuiper's JavaScript function shape, in requests and in
// GET /udf/javascript/{id}.
type jsFunctionBody struct {
	ID          string `json:"id"`
	Description string `json:"description"`
	Script      string `json:"script"`
	IsAgg       bool   `json:"isAgg"`
}

func (b jsFunctionBody) function() catalog.JSFunction {
	return catalog.JSFunction{ID: b.ID, Description: b.Description, Script: b.Script, IsAgg: b.IsAgg}
}

func (s *Server) udfRoutes() {
	s.handle("GET /udf/javascript", s.listJSFunctions)
	s.handle("POST /udf/javascript", s.createJSFunction)
	s.handle("GET /udf/javascript/{id}", s.describeJSFunction)
	s.handle("PUT /udf/javascript/{id}", s.updateJSFunction)
	s.handle("DELETE /udf/javascript/{id}", s.deleteJSFunction)
}

func (s *Server) listJSFunctions(w http.ResponseWriter, r *http.Request) error {
	all, err := s.cat.ListJSFunctions(r.Context())
	if err != nil {
		return err
	}
	ids := make([]string, len(all))
	for i, f := range all {
		ids[i] = f.ID
	}
	return writeJSON(w, http.StatusOK, ids)
}

// checkJSFunction validates f and refuses an id that differs only in case
// from another function's (SQL names ignore case).
func (s *Server) checkJSFunction(ctx context.Context, f catalog.JSFunction) error {
	if err := jsudf.Check(f, s.builtins, s.opts.JSLimits); err != nil {
		return badRequest("javascript function %s: %v", f.ID, err)
	}
	if other, ok, err := jsudf.Find(ctx, s.cat, f.ID); err != nil {
		return err
	} else if ok && other.ID != f.ID {
		return fmt.Errorf("javascript function %s: %s exists, and SQL function names ignore case: %w", f.ID, other.ID, catalog.ErrConflict)
	}
	return nil
}

func (s *Server) createJSFunction(w http.ResponseWriter, r *http.Request) error {
	var b jsFunctionBody
	if err := decodeStrict(r, &b); err != nil {
		return err
	}
	f := b.function()
	if err := s.checkJSFunction(r.Context(), f); err != nil {
		return err
	}
	if _, err := s.cat.PutJSFunction(r.Context(), f, catalog.Create); err != nil {
		if errors.Is(err, catalog.ErrConflict) {
			return fmt.Errorf("javascript function %s already exists: %w", f.ID, err)
		}
		return err
	}
	return writeText(w, http.StatusCreated, "javascript function %s is created", f.ID)
}

func (s *Server) describeJSFunction(w http.ResponseWriter, r *http.Request) error {
	if err := jsudf.CheckID(r.PathValue("id")); err != nil {
		return badRequest("javascript function: %v", err)
	}
	f, err := s.cat.GetJSFunction(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, jsFunctionBody{ID: f.ID, Description: f.Description, Script: f.Script, IsAgg: f.IsAgg})
}

// updateJSFunction replaces a function, or creates it, as eKuiper does.
// Rules already running keep the script they were started with.
func (s *Server) updateJSFunction(w http.ResponseWriter, r *http.Request) error {
	var b jsFunctionBody
	if err := decodeStrict(r, &b); err != nil {
		return err
	}
	id := r.PathValue("id")
	if b.ID == "" {
		b.ID = id
	}
	if b.ID != id {
		return badRequest("javascript function id %q in the body differs from %q in the path", b.ID, id)
	}
	f := b.function()
	if err := s.checkJSFunction(r.Context(), f); err != nil {
		return err
	}
	// A rule calling a scalar as an aggregate (or the reverse) would no
	// longer plan at its next start.
	if old, err := s.cat.GetJSFunction(r.Context(), id); err == nil && old.IsAgg != f.IsAgg {
		if refs := s.rulesCalling(id); len(refs) > 0 {
			return fmt.Errorf("javascript function %s: isAgg cannot change while rules %s call it: %w", id, strings.Join(refs, ", "), errReferenced)
		}
	}
	if _, err := s.cat.PutJSFunction(r.Context(), f, catalog.Upsert); err != nil {
		return err
	}
	return writeText(w, http.StatusOK, "javascript function %s is updated", f.ID)
}

func (s *Server) deleteJSFunction(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := jsudf.CheckID(id); err != nil {
		return badRequest("javascript function: %v", err)
	}
	if _, err := s.cat.GetJSFunction(r.Context(), id); err != nil {
		return err
	}
	if refs := s.rulesCalling(id); len(refs) > 0 {
		return fmt.Errorf("javascript function %s is used by rules %s: %w", id, strings.Join(refs, ", "), errReferenced)
	}
	if err := s.cat.DeleteJSFunction(r.Context(), id); err != nil {
		return err
	}
	return writeText(w, http.StatusOK, "javascript function %s is deleted", id)
}

// rulesCalling lists the rules whose SQL calls the function name (ignoring
// case, as SQL does).
func (s *Server) rulesCalling(name string) []string {
	return s.rulesWhoseSQL(func(stmt *ast.SelectStmt) bool { return callsFunction(stmt, name) })
}

func callsFunction(stmt *ast.SelectStmt, name string) bool {
	exprs := []ast.Expr{stmt.Where, stmt.Having}
	for _, f := range stmt.Fields {
		exprs = append(exprs, f.Expr)
	}
	for _, j := range stmt.Joins {
		exprs = append(exprs, j.On)
	}
	exprs = append(exprs, stmt.Dimensions...)
	for _, o := range stmt.OrderBy {
		exprs = append(exprs, o.Expr)
	}
	if w := stmt.Window; w != nil {
		exprs = append(exprs, w.Filter, w.TriggerCond)
		exprs = append(exprs, w.Args...)
		exprs = append(exprs, w.Partition...)
	}
	found := false
	for _, e := range exprs {
		if e == nil || found {
			continue
		}
		ast.Walk(e, func(n ast.Expr) bool {
			if c, ok := n.(*ast.Call); ok && strings.EqualFold(c.Name, name) {
				found = true
			}
			return !found
		})
	}
	return found
}

// jsFunctionMeta describes the JavaScript functions for GET
// /metadata/functions, in the shape of the built-ins' entries: a script
// takes any number of arguments.
func (s *Server) jsFunctionMeta(ctx context.Context) ([]map[string]any, error) {
	all, err := s.cat.ListJSFunctions(ctx)
	if err != nil {
		return nil, fmt.Errorf("list javascript functions: %w", err)
	}
	out := make([]map[string]any, 0, len(all))
	for _, f := range all {
		kind := function.Scalar
		if f.IsAgg {
			kind = function.Aggregate
		}
		out = append(out, map[string]any{
			"name": f.ID, "aliases": []string{}, "type": kind.String(), "aggregate": f.IsAgg,
			"minArgs": 0, "maxArgs": -1, "description": f.Description,
		})
	}
	return out, nil
}

// exportJSFunctions is the "scripts" section of /data/export: id → the
// function's JSON in the shape of GET /udf/javascript/{id}.
func (s *Server) exportJSFunctions(ctx context.Context) (map[string]string, error) {
	all, err := s.cat.ListJSFunctions(ctx)
	if err != nil {
		return nil, fmt.Errorf("export javascript functions: %w", err)
	}
	out := make(map[string]string, len(all))
	for _, f := range all {
		b, err := json.Marshal(jsFunctionBody{ID: f.ID, Description: f.Description, Script: f.Script, IsAgg: f.IsAgg})
		if err != nil {
			return nil, fmt.Errorf("export javascript function %s: %w", f.ID, err)
		}
		out[f.ID] = string(b)
	}
	return out, nil
}

// importedJSFunction decodes one item of the "scripts" section of
// /data/import and checks it as POST does (but for case twins, which a full
// import's reset may remove).
func (s *Server) importedJSFunction(id, js string) (catalog.JSFunction, error) {
	var b jsFunctionBody
	if err := decodeBytes([]byte(js), &b); err != nil {
		return catalog.JSFunction{}, err
	}
	if b.ID == "" {
		b.ID = id
	}
	if b.ID != id {
		return catalog.JSFunction{}, badRequest("id %q in the function differs from its key %q", b.ID, id)
	}
	f := b.function()
	if err := jsudf.Check(f, s.builtins, s.opts.JSLimits); err != nil {
		return catalog.JSFunction{}, badRequest("javascript function %s: %v", f.ID, err)
	}
	return f, nil
}

// checkImportJSFunctions checks the "scripts" section before an import
// changes anything.
func (s *Server) checkImportJSFunctions(scripts map[string]string, res *importResult) {
	for _, id := range sortedKeys(scripts) {
		if _, err := s.importedJSFunction(id, scripts[id]); err != nil {
			res.fail("scripts", id, err)
		}
	}
}

// importJSFunctions upserts the "scripts" section of /data/import and
// records failures in res.
func (s *Server) importJSFunctions(ctx context.Context, scripts map[string]string, res *importResult) {
	for _, id := range sortedKeys(scripts) {
		f, err := s.importedJSFunction(id, scripts[id])
		if err == nil {
			err = s.checkJSFunction(ctx, f)
		}
		if err == nil {
			_, err = s.cat.PutJSFunction(ctx, f, catalog.Upsert)
		}
		if err != nil {
			res.fail("scripts", id, err)
		}
	}
}

// resetJSFunctions deletes every JavaScript function (full /data/import,
// after the rules are gone).
func (s *Server) resetJSFunctions(ctx context.Context) error {
	all, err := s.cat.ListJSFunctions(ctx)
	if err != nil {
		return err
	}
	for _, f := range all {
		if err := s.cat.DeleteJSFunction(ctx, f.ID); err != nil && !errors.Is(err, catalog.ErrNotFound) {
			return err
		}
	}
	return nil
}
