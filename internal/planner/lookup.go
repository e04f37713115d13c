package planner

import (
	"strings"

	"github.com/rekuiper/rekuiper/internal/operator"
	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/sql/token"
)

// IsLookup reports whether def is a lookup table (KIND="lookup"): one whose
// rows are queried by key when a stream row joins it, instead of being
// read as a stream.
func IsLookup(def *ast.CreateStreamStmt) bool {
	if def == nil || def.Kind != ast.KindTable {
		return false
	}
	k, _ := def.Option("KIND")
	return strings.EqualFold(k, "lookup")
}

// checkLookups refuses the queries a lookup join cannot serve, as eKuiper
// does: a lookup table is only ever the right side of an INNER or LEFT
// JOIN whose ON clause has an equality between a column of the table and
// an expression of the other inputs.
func (b *builder) checkLookups() error {
	s := b.stmt
	if b.inputs[0].Lookup {
		return errAt(s, "lookup table %s cannot be the FROM input; join it to a stream with INNER JOIN or LEFT JOIN", s.From.Name)
	}
	for i, j := range s.Joins {
		if !b.inputs[i+1].Lookup {
			continue
		}
		if j.Type != ast.InnerJoin && j.Type != ast.LeftJoin {
			return errAt(s, "lookup table %s can only be joined with INNER JOIN or LEFT JOIN", j.Name)
		}
		if j.On == nil {
			return errAt(s, "join with lookup table %s needs an ON condition", j.Name)
		}
		cols, _, _ := b.splitLookupOn(j)
		if len(cols) == 0 {
			return errAt(j.On, "ON of lookup table %s needs an equality between a column of %s and an expression of the stream, such as s.id = %s.id", j.Name, j.Name, j.Name)
		}
		if typ, _ := b.inputs[i+1].Def.Option("TYPE"); strings.EqualFold(typ, "redis") && len(cols) > 1 {
			return errAt(j.On, "redis lookup table %s is looked up by one key, but ON has %d equalities with its columns (%s); keep one and move the others out of ON", j.Name, len(cols), strings.Join(cols, ", "))
		}
	}
	return nil
}

// splitLookupOn splits the ON clause of a lookup join into the equalities
// that make the lookup query (table column = expression not reading the
// table) and the rest, which is applied to the joined rows.
func (b *builder) splitLookupOn(j ast.Join) (cols []string, keys []ast.Expr, rest ast.Expr) {
	seen := map[string]bool{}
	for _, c := range conjuncts(j.On, nil) {
		if be, ok := c.(*ast.BinaryExpr); ok && be.Op == token.EQ {
			col, other := b.tableColumn(j, be.LHS), be.RHS
			if col == "" {
				col, other = b.tableColumn(j, be.RHS), be.LHS
			}
			if col != "" && !seen[col] && !b.readsTable(j, other) {
				seen[col] = true
				cols = append(cols, col)
				keys = append(keys, other)
				continue
			}
		}
		if rest == nil {
			rest = c
		} else {
			rest = &ast.BinaryExpr{P: c.Pos(), Op: token.AND, LHS: rest, RHS: c}
		}
	}
	return cols, keys, rest
}

func conjuncts(e ast.Expr, out []ast.Expr) []ast.Expr {
	switch x := e.(type) {
	case *ast.ParenExpr:
		return conjuncts(x.X, out)
	case *ast.BinaryExpr:
		if x.Op == token.AND {
			return conjuncts(x.RHS, conjuncts(x.LHS, out))
		}
	}
	return append(out, e)
}

// tableColumn returns the column e names when e is a qualified column of
// the joined table (`t.id`, or `a.id` with a its alias).
func (b *builder) tableColumn(j ast.Join, e ast.Expr) string {
	ref, ok := unparen(e).(*ast.FieldRef)
	if !ok || ref.Stream == "" {
		return ""
	}
	if ref.Stream == j.Name || (j.Alias != "" && ref.Stream == j.Alias) {
		return ref.Name
	}
	return ""
}

func (b *builder) readsTable(j ast.Join, e ast.Expr) bool {
	found := false
	ast.Walk(e, func(x ast.Expr) bool {
		switch r := x.(type) {
		case *ast.FieldRef:
			if r.Stream == j.Name || (j.Alias != "" && r.Stream == j.Alias) {
				found = true
			}
		case *ast.Wildcard:
			found = true
		}
		return !found
	})
	return found
}

// lookupJoins builds one LookupJoin per lookup table of the query, in JOIN
// order. They run after the join of streams and scan tables.
func (b *builder) lookupJoins() ([]operator.Operator, error) {
	var ops []operator.Operator
	for i, j := range b.stmt.Joins {
		in := b.inputs[i+1]
		if !in.Lookup {
			continue
		}
		cols, keys, rest := b.splitLookupOn(j)
		lj := &operator.LookupJoin{Type: j.Type, Table: in.Name, Layout: Layout(in.Def), Columns: cols}
		for _, k := range keys {
			x, err := b.comp.Compile(k)
			if err != nil {
				return nil, err
			}
			lj.Keys = append(lj.Keys, x)
		}
		if rest != nil {
			x, err := b.comp.Compile(rest)
			if err != nil {
				return nil, err
			}
			lj.Residual = x
		}
		ops = append(ops, lj)
	}
	return ops, nil
}
