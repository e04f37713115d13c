package eval

import (
	"sort"
	"strings"

	"github.com/rekuiper/rekuiper/internal/function"
	"github.com/rekuiper/rekuiper/internal/row"
	"github.com/rekuiper/rekuiper/internal/sql/ast"
)

// AggSite is one aggregate call of a rule. The same call written twice in
// the same scope (in SELECT and in HAVING, say) is one site.
//
// A window can fold a site's rows as they arrive (see row.Group.Folded) when
// the site is Foldable: its function has an accumulator and its arguments
// depend on nothing but the row, so evaluating them when the row arrives
// gives what evaluating them when the window fires would.
type AggSite struct {
	Index    int
	Def      *function.Def
	Args     []Expr
	Star     []bool
	Foldable bool
}

// AggSites returns the aggregate call sites in compile order.
func (c *Compiler) AggSites() []*AggSite { return c.aggSites }

// aggSite returns the site of the aggregate call n, registering it on first
// sight.
func (c *Compiler) aggSite(n *ast.Call, def *function.Def, args []Expr, star []bool) *AggSite {
	key := n.String()
	if len(c.compiling) > 0 {
		// Inside an alias's own expression its name means the column, so
		// the same text may mean something else there.
		scope := make([]string, 0, len(c.compiling))
		for a := range c.compiling {
			scope = append(scope, a)
		}
		sort.Strings(scope)
		key += "\x00" + strings.Join(scope, ",")
	}
	if c.aggIndex == nil {
		c.aggIndex = map[string]*AggSite{}
	}
	if s, ok := c.aggIndex[key]; ok {
		return s
	}
	s := &AggSite{Index: len(c.aggSites), Def: def, Args: args, Star: star}
	s.Foldable = def.Accumulate != nil
	for _, a := range n.Args {
		s.Foldable = s.Foldable && c.RowOnly(a, def.Name == "count")
	}
	c.aggSites = append(c.aggSites, s)
	c.aggIndex[key] = s
	return s
}

// RowOnly reports whether e reads nothing but the row: columns, literals,
// operators and scalar functions that do not read the clock. Aliases,
// window and rule functions, analytic and aggregate functions and `*` do not
// qualify (starArg allows e itself to be a plain `*`, as in count(*)).
func (c *Compiler) RowOnly(e ast.Expr, starArg bool) bool {
	ok := true
	ast.Walk(e, func(n ast.Expr) bool {
		if !ok {
			return false
		}
		switch x := n.(type) {
		case *ast.FieldRef:
			if x.Stream == "" {
				if _, aliased := c.Aliases[x.Name]; aliased && !c.compiling[x.Name] {
					ok = false
				}
			}
		case *ast.Wildcard:
			ok = starArg && ast.Expr(x) == e && len(x.Except) == 0 && len(x.Replace) == 0
		case *ast.Call:
			switch strings.ToLower(x.Name) {
			case "meta", "mqtt":
				return true
			}
			d, found := c.Funcs.Lookup(x.Name)
			ok = found && d.Kind == function.Scalar && !d.ReadsClock && x.Over == nil
		}
		return ok
	})
	return ok
}

// folded answers an aggregate from the group's accumulators when the window
// folded it.
func folded(g *row.Group, index int) (ok bool, v any, err error) {
	if g == nil || g.Folded == nil {
		return false, nil, nil
	}
	v, err = g.Folded[index].Result()
	return true, v, err
}
