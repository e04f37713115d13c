package operator

import (
	"fmt"
	"sort"
	"time"

	"github.com/rekuiper/rekuiper/internal/eval"
	"github.com/rekuiper/rekuiper/internal/row"
	"github.com/rekuiper/rekuiper/internal/value"
)

// GroupBy splits a set's rows into groups by the GROUP BY expressions, in
// order of first appearance. With no expressions the whole set is one group
// (aggregates over the window).
type GroupBy struct {
	Dims []eval.Expr

	key []byte // reused to build group keys
}

func (g *GroupBy) Name() string { return "aggregate" }

func (g *GroupBy) Process(ctx *Context, it Item, emit Emit) error {
	if it.Kind != Data || it.Set == nil {
		forward(it, emit)
		return nil
	}
	set := *it.Set
	if len(g.Dims) == 0 {
		// The whole window is one group, even when empty: aggregates over
		// an empty window still produce a row.
		set.Groups = []*row.Group{{Rows: set.Rows}}
		it.Set = &set
		emit(it)
		return nil
	}
	index := map[string]*row.Group{}
	var groups []*row.Group
	for _, r := range set.Rows {
		ec := evalCtx(ctx, r)
		ec.Window, ec.HasWindow = set.Window, true
		// The key is the typed encoding of the values: "1" and 1, or
		// ("a,b", "c") and ("a", "b,c"), are different groups.
		g.key = g.key[:0]
		for _, d := range g.Dims {
			v, err := d(ec)
			if err != nil {
				return fmt.Errorf("run Group By error: %w", err)
			}
			g.key = value.AppendValue(g.key, v)
		}
		grp, ok := index[string(g.key)]
		if !ok {
			key := string(g.key)
			grp = &row.Group{Key: key}
			index[key] = grp
			groups = append(groups, grp)
		}
		grp.Rows = append(grp.Rows, r)
	}
	if len(groups) == 0 {
		// A grouped window with no rows has no groups and emits nothing,
		// as in eKuiper (an ungrouped one still emits its one row).
		return nil
	}
	set.Groups = groups
	it.Set = &set
	emit(it)
	return nil
}

// Having keeps groups (or rows, when not grouped) whose condition is true.
type Having struct {
	Cond    eval.Expr
	Grouped bool
}

func (h *Having) Name() string { return "having" }

func (h *Having) Process(ctx *Context, it Item, emit Emit) error {
	if it.Kind != Data || it.Set == nil {
		forward(it, emit)
		return nil
	}
	set := *it.Set
	if h.Grouped {
		var kept []*row.Group
		for _, g := range set.Groups {
			ok, err := h.holds(&eval.Ctx{Row: first(g.Rows), Group: g, Window: set.Window, HasWindow: true, Env: ctx.Env, Rule: ctx.Rule})
			if err != nil {
				return err
			}
			if ok {
				kept = append(kept, g)
			}
		}
		set.Groups = kept
	} else {
		var kept []row.Row
		for _, r := range set.Rows {
			ok, err := h.holds(&eval.Ctx{Row: r, Window: set.Window, HasWindow: true, Env: ctx.Env, Rule: ctx.Rule})
			if err != nil {
				return err
			}
			if ok {
				kept = append(kept, r)
			}
		}
		set.Rows = kept
	}
	if (h.Grouped && len(set.Groups) == 0) || (!h.Grouped && len(set.Rows) == 0) {
		return nil
	}
	it.Set = &set
	emit(it)
	// Count the hit after emitting, so the SELECT of this window still
	// reads the previous last_agg_hit_count() and last_agg_hit_time().
	ctx.Rule.AggHitCount++
	ctx.Rule.AggHitTime = set.Window.End
	return nil
}

// holds evaluates the condition for one group or row.
func (h *Having) holds(ec *eval.Ctx) (bool, error) {
	v, err := h.Cond(ec)
	if err != nil {
		return false, fmt.Errorf("run Having error: %w", err)
	}
	ok, err := eval.Truthy(v)
	if err != nil {
		return false, fmt.Errorf("run Having error: %w", err)
	}
	return ok, nil
}

// first returns the first row of a group, or an empty row for an empty group.
func first(rows []row.Row) row.Row {
	if len(rows) == 0 {
		return &row.Tuple{}
	}
	return rows[0]
}

// SortKey is one compiled ORDER BY item.
type SortKey struct {
	Expr eval.Expr
	Desc bool
}

// Order sorts a set's groups (Grouped) or rows by the ORDER BY keys; the sort
// is stable so ties keep arrival order.
type Order struct {
	Keys    []SortKey
	Grouped bool
}

func (o *Order) Name() string { return "order" }

func (o *Order) Process(ctx *Context, it Item, emit Emit) error {
	if it.Kind != Data || it.Set == nil {
		forward(it, emit)
		return nil
	}
	set := *it.Set
	n := len(set.Rows)
	if o.Grouped {
		n = len(set.Groups)
	}
	keys := make([][]any, n)
	for i := 0; i < n; i++ {
		ec := &eval.Ctx{Window: set.Window, HasWindow: true, Env: ctx.Env, Rule: ctx.Rule}
		if o.Grouped {
			ec.Group = set.Groups[i]
			ec.Row = first(set.Groups[i].Rows)
		} else {
			ec.Row = set.Rows[i]
		}
		keys[i] = make([]any, len(o.Keys))
		for j, k := range o.Keys {
			v, err := k.Expr(ec)
			if err != nil {
				return fmt.Errorf("run Order By error: %w", err)
			}
			keys[i][j] = v
		}
	}
	if err := comparableKeys(keys, len(o.Keys)); err != nil {
		return fmt.Errorf("run Order By error: %w", err)
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		ka, kb := keys[idx[a]], keys[idx[b]]
		for j, k := range o.Keys {
			// Nulls come last in both directions, as in eKuiper.
			if an, bn := ka[j] == nil, kb[j] == nil; an || bn {
				if an != bn {
					return bn
				}
				continue
			}
			if value.Less(ka[j], kb[j]) {
				return !k.Desc
			}
			if value.Less(kb[j], ka[j]) {
				return k.Desc
			}
		}
		return false
	})
	if o.Grouped {
		groups := make([]*row.Group, n)
		for i, j := range idx {
			groups[i] = set.Groups[j]
		}
		set.Groups = groups
	} else {
		rows := make([]row.Row, n)
		for i, j := range idx {
			rows[i] = set.Rows[j]
		}
		set.Rows = rows
	}
	it.Set = &set
	emit(it)
	return nil
}

// comparableKeys checks that each ORDER BY key holds values of one kind
// (numbers, strings, ...), ignoring nulls. Objects and arrays have no
// order: one of them in a key is an error, even in a window of one row or
// one group, as in eKuiper (diff_window/order_by_composite,
// diff_window/order_by_composite_alone).
func comparableKeys(keys [][]any, width int) error {
	for j := 0; j < width; j++ {
		var first any
		for _, k := range keys {
			v := k[j]
			if v != nil && kindRank(v) == unorderedRank {
				return fmt.Errorf("incompatible types for comparison: %s has no order", kindName(v))
			}
			if v == nil {
				continue
			}
			if first == nil {
				first = v
				continue
			}
			if kindRank(first) != kindRank(v) {
				return fmt.Errorf("incompatible types for comparison: %s and %s", kindName(first), kindName(v))
			}
		}
	}
	return nil
}

// unorderedRank is the rank of values that have no order (objects,
// arrays, bytes).
const unorderedRank = 5

func kindRank(v any) int {
	switch v.(type) {
	case int64, float64:
		return 1
	case string:
		return 2
	case bool:
		return 3
	case time.Time:
		return 4
	}
	return unorderedRank
}

func kindName(v any) string {
	switch v.(type) {
	case int64:
		return "int"
	case float64:
		return "float"
	case string:
		return "string"
	case bool:
		return "bool"
	case time.Time:
		return "datetime"
	}
	return value.TypeName(v)
}
