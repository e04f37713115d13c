package server

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/rule"
	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/sql/parser"
)

// usedSchema is the schema of a schemaless stream as eKuiper infers it:
// the fields that the stream's running rules read, each with an unknown
// type (null). A rule that reads every field (SELECT *) makes the schema
// open: {}.
func (s *Server) usedSchema(stream string) map[string]any {
	out := map[string]any{}
	for _, brief := range s.rules.List() {
		st, err := s.rules.Status(brief.ID)
		if err != nil || st.Wanted != catalog.RuleRunning {
			continue
		}
		def, err := s.rules.Def(brief.ID)
		if err != nil {
			continue
		}
		stmt, err := parser.ParseSelect(def.SQL)
		if err != nil {
			continue
		}
		fields, wildcard, reads := fieldsRead(stmt, stream)
		if !reads {
			continue
		}
		if wildcard {
			return map[string]any{}
		}
		for _, f := range fields {
			out[f] = nil
		}
	}
	return out
}

// fieldsRead returns the fields of stream that stmt reads, whether it reads
// them all (a wildcard), and whether stmt reads stream at all.
func fieldsRead(stmt *ast.SelectStmt, stream string) (fields []string, wildcard, reads bool) {
	names := map[string]bool{}
	single := len(stmt.Joins) == 0
	if stmt.From.Name == stream {
		reads = true
		names[stmt.From.Name] = true
		if stmt.From.Alias != "" {
			names[stmt.From.Alias] = true
		}
	}
	for _, j := range stmt.Joins {
		if j.Name == stream {
			reads = true
			names[j.Name] = true
			if j.Alias != "" {
				names[j.Alias] = true
			}
		}
	}
	if !reads {
		return nil, false, false
	}
	aliases := map[string]bool{}
	for _, f := range stmt.Fields {
		if f.Alias != "" {
			aliases[f.Alias] = true
		}
	}
	mine := func(qualifier string) bool { return names[qualifier] || (qualifier == "" && single) }
	var visit func(e ast.Expr) bool
	visit = func(e ast.Expr) bool {
		switch n := e.(type) {
		case *ast.Call:
			if name := strings.ToLower(n.Name); name == "meta" || name == "mqtt" {
				return false // their arguments name metadata, not fields
			}
			for _, a := range n.Args {
				if _, star := a.(*ast.Wildcard); !star { // count(*) reads no field
					ast.Walk(a, visit)
				}
			}
			if n.Over != nil {
				ast.Walk(&ast.Call{Args: append(append([]ast.Expr{n.Over.When}, n.Over.Partition...), sortExprs(n.Over.OrderBy)...)}, visit)
			}
			return false
		case *ast.Wildcard:
			if mine(n.Stream) {
				wildcard = true
			}
		case *ast.FieldRef:
			if mine(n.Stream) && !(n.Stream == "" && aliases[n.Name]) && !slices.Contains(fields, n.Name) {
				fields = append(fields, n.Name)
			}
		}
		return true
	}
	var exprs []ast.Expr
	for _, f := range stmt.Fields {
		exprs = append(exprs, f.Expr)
	}
	for _, j := range stmt.Joins {
		exprs = append(exprs, j.On)
	}
	exprs = append(exprs, stmt.Where, stmt.Having)
	exprs = append(exprs, stmt.Dimensions...)
	for _, o := range stmt.OrderBy {
		exprs = append(exprs, o.Expr)
	}
	for _, e := range exprs {
		ast.Walk(e, visit)
	}
	slices.Sort(fields)
	return fields, wildcard, true
}

func sortExprs(sf []ast.SortField) []ast.Expr {
	out := make([]ast.Expr, 0, len(sf))
	for _, o := range sf {
		out = append(out, o.Expr)
	}
	return out
}

// ruleSchema is GET /rules/{id}/schema: the fields a running rule sends to
// its sinks (eKuiper's sink schema), field name → {"hasIndex": true,
// "index": its position among the output fields}. A field that is a
// column of a stream with declared fields also has that column's type;
// others (expressions, columns of schemaless streams) do not. `*` adds
// nothing.
func (s *Server) ruleSchema(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if _, err := s.rules.Topo(id); err != nil {
		return err
	}
	def, err := s.rules.Def(id)
	if err != nil {
		return err
	}
	stmt, err := parser.ParseSelect(def.SQL)
	if err != nil {
		return fmt.Errorf("%w: parse sql: %v", rule.ErrInvalid, err)
	}
	streams := map[string]*ast.CreateStreamStmt{}
	load := func(name, alias string) {
		cs, err := s.streamDef(name)
		if err != nil {
			return
		}
		streams[name] = cs
		if alias != "" {
			streams[alias] = cs
		}
	}
	load(stmt.From.Name, stmt.From.Alias)
	for _, j := range stmt.Joins {
		load(j.Name, j.Alias)
	}
	out := map[string]any{}
	// index is the field's position among the rule's output fields, with
	// hasIndex, as eKuiper reports its sink schema.
	index := 0
	for i, f := range stmt.Fields {
		if _, star := f.Expr.(*ast.Wildcard); star || f.Invisible {
			continue
		}
		name := f.Name()
		if name == "" {
			name = "kuiper_field_" + strconv.Itoa(i)
		}
		if _, dup := out[name]; dup {
			return fmt.Errorf("%w: duplicate field definition %s", rule.ErrInvalid, name)
		}
		field := map[string]any{}
		if ref, ok := f.Expr.(*ast.FieldRef); ok {
			for qual, cs := range streams {
				if ref.Stream != "" && ref.Stream != qual {
					continue
				}
				for _, sf := range cs.Fields {
					if sf.Name == ref.Name {
						field = schemaType(sf.Type)
					}
				}
			}
		}
		field["hasIndex"], field["index"] = true, index
		index++
		out[name] = field
	}
	return writeJSON(w, http.StatusOK, out)
}

// streamDef parses the stored statement of a stream or table.
func (s *Server) streamDef(name string) (*ast.CreateStreamStmt, error) {
	st, err := s.cat.Stream(name)
	if err != nil {
		return nil, err
	}
	stmt, err := parser.ParseStatement(st.SQL)
	if err != nil {
		return nil, err
	}
	cs, ok := stmt.(*ast.CreateStreamStmt)
	if !ok {
		return nil, fmt.Errorf("stream %s: stored statement is not CREATE", name)
	}
	return cs, nil
}
