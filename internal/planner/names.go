package planner

import (
	"slices"
	"strings"

	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/sql/token"
)

// checkNames resolves every column the query names against the schemas of
// the streams and tables it reads, as eKuiper's analyzer does, so that a
// misspelt field is refused at creation instead of reading nil forever:
//
//   - When any input is schemaless (declared without fields) nothing is
//     checked: a schemaless stream may carry any field.
//   - An unqualified name is a SELECT alias, or a field of exactly one
//     input: none is "unknown field", several "ambiguous field".
//   - `s.a` with s a stream, table or alias of the rule is field a of s.
//     Otherwise it is key a of field s (`s->a`), and s must be a field.
//   - Keys after `->` (and `.` on an expression), struct sub-fields, the
//     arguments of meta() and mqtt() and EXCEPT lists are not checked, as
//     in eKuiper.
//
// Names compare case-insensitively, as eKuiper's do. Every clause is
// checked: SELECT, JOIN ... ON, WHERE, GROUP BY with the window's
// arguments, FILTER, OVER and PARTITION BY, HAVING and ORDER BY. Within the
// expression of alias a, `a` names the column a (as the compiler reads it).
func (b *builder) checkNames() error {
	schemas := map[string]map[string]bool{}
	var names []string // input names in FROM/JOIN order
	for _, in := range b.inputs {
		if len(in.Def.Fields) == 0 {
			return nil
		}
		if _, dup := schemas[in.Name]; dup {
			continue
		}
		fields := map[string]bool{}
		for _, f := range in.Def.Fields {
			fields[strings.ToLower(f.Name)] = true
		}
		schemas[in.Name] = fields
		names = append(names, in.Name)
	}
	aliases := map[string]bool{}
	for _, f := range b.stmt.Fields {
		if f.Alias != "" {
			aliases[strings.ToLower(f.Alias)] = true
		}
	}
	nc := &nameChecker{b: b, schemas: schemas, names: names, aliases: aliases}
	s := b.stmt
	for _, f := range s.Fields {
		nc.self = strings.ToLower(f.Alias)
		if err := nc.expr(f.Expr); err != nil {
			return err
		}
	}
	nc.self = ""
	exprs := []ast.Expr{}
	for _, j := range s.Joins {
		exprs = append(exprs, j.On)
	}
	exprs = append(exprs, s.Where)
	exprs = append(exprs, s.Dimensions...)
	if w := s.Window; w != nil {
		exprs = append(exprs, w.Args...)
		exprs = append(exprs, w.Filter, w.TriggerCond)
		exprs = append(exprs, w.Partition...)
	}
	exprs = append(exprs, s.Having)
	for _, o := range s.OrderBy {
		exprs = append(exprs, o.Expr)
	}
	for _, e := range exprs {
		if err := nc.expr(e); err != nil {
			return err
		}
	}
	return nil
}

type nameChecker struct {
	b       *builder
	schemas map[string]map[string]bool // input name → lower-cased fields
	names   []string
	aliases map[string]bool
	self    string // alias of the SELECT field being checked
}

func (nc *nameChecker) expr(e ast.Expr) error {
	var err error
	ast.Walk(e, func(n ast.Expr) bool {
		if err != nil {
			return false
		}
		switch x := n.(type) {
		case *ast.BinaryExpr:
			if x.Op == token.ARROW {
				// The key is no column: check the object only.
				err = nc.expr(x.LHS)
				return false
			}
		case *ast.Call:
			if name := strings.ToLower(x.Name); name == "meta" || name == "mqtt" {
				return false
			}
		case *ast.Wildcard:
			if x.Stream != "" {
				if _, ok := nc.b.streams[x.Stream]; !ok {
					err = errAt(x, "unknown field %s: %s.* names no stream of the rule (%s)", x.Stream, x.Stream, strings.Join(nc.names, ", "))
					return false
				}
			}
		case *ast.FieldRef:
			err = nc.ref(x)
			return false
		}
		return true
	})
	return err
}

func (nc *nameChecker) ref(r *ast.FieldRef) error {
	if r.Stream != "" {
		if stream, ok := nc.b.streams[r.Stream]; ok {
			if nc.schemas[stream][strings.ToLower(r.Name)] {
				return nil
			}
			return errAt(r, "unknown field %s.%s: stream %s has no field %s", r.Stream, r.Name, stream, r.Name)
		}
		// Not a stream: `s.a` reads key a of field s.
		if nc.known(r.Stream) {
			return nc.unqualified(r, r.Stream)
		}
		return errAt(r, "unknown field %s: %s.%s names neither a stream of the rule (%s) nor a field", r.Stream, r.Stream, r.Name, strings.Join(nc.names, ", "))
	}
	return nc.unqualified(r, r.Name)
}

// known reports whether name is an alias or a field of some input.
func (nc *nameChecker) known(name string) bool {
	l := strings.ToLower(name)
	if nc.aliases[l] && l != nc.self {
		return true
	}
	for _, n := range nc.names {
		if nc.schemas[n][l] {
			return true
		}
	}
	return false
}

// unqualified checks name, read without a stream, at r.
func (nc *nameChecker) unqualified(r *ast.FieldRef, name string) error {
	l := strings.ToLower(name)
	if nc.aliases[l] && l != nc.self {
		return nil
	}
	var in []string
	for _, n := range nc.names {
		if nc.schemas[n][l] {
			in = append(in, n)
		}
	}
	switch len(in) {
	case 1:
		return nil
	case 0:
		return errAt(r, "unknown field %s", name)
	}
	slices.Sort(in)
	return errAt(r, "ambiguous field %s: it is a field of %s; qualify it as %s.%s", name, strings.Join(in, " and "), in[0], name)
}
