package operator

import (
	"context"
	"fmt"
	"maps"

	"github.com/rekuiper/rekuiper/internal/eval"
	"github.com/rekuiper/rekuiper/internal/row"
	"github.com/rekuiper/rekuiper/internal/sql/ast"
)

// Lookuper queries a lookup table: the rows whose columns equal every entry
// of keys. connector.LookupSource implements it.
type Lookuper interface {
	Lookup(ctx context.Context, keys map[string]any) ([]map[string]any, error)
}

// LookupJoin joins every row reaching it (a stream tuple, or each row of a
// window's set) with the rows a lookup table returns for the row's key
// values. The ON clause is split by the planner: Columns[i] of the table
// must equal Keys[i] evaluated on the row, the lookup's query; Residual,
// the rest of ON, is applied to each joined row. INNER drops rows without
// a match, LEFT keeps them with the table side null.
//
// The join holds no state that a checkpoint needs: the table is external
// and Cache, if any, is a per-rule read cache. Source and Ctx are set by
// the engine before the rule starts; Ctx ends when the rule stops, so a
// slow lookup does not hold up stopping.
type LookupJoin struct {
	Type     ast.JoinType // InnerJoin or LeftJoin
	Table    string       // the table's name: the emitter of its rows
	Layout   *row.Layout  // slot layout of a typed table, nil if schemaless
	Columns  []string
	Keys     []eval.Expr
	Residual eval.Expr
	Cache    *LookupCache

	Source Lookuper
	Ctx    context.Context
}

func (j *LookupJoin) Name() string { return "lookupjoin" }

func (j *LookupJoin) Process(ctx *Context, it Item, emit Emit) error {
	if it.Kind != Data {
		forward(it, emit)
		return nil
	}
	if it.Set != nil {
		rows, err := j.joinRows(ctx, it.Set.Rows)
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			return nil
		}
		set := *it.Set
		set.Rows = rows
		it.Set = &set
		emit(it)
		return nil
	}
	// A failed lookup loses its row only: the rest of the batch is joined
	// and the first error is reported once.
	var first error
	for _, t := range it.Tuples {
		rows, err := j.joinRows(ctx, []row.Row{t})
		if err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		if len(rows) > 0 {
			emit(Item{Kind: Data, Set: &row.Set{Rows: rows}})
		}
	}
	return first
}

func (j *LookupJoin) joinRows(ctx *Context, rows []row.Row) ([]row.Row, error) {
	var out []row.Row
	for _, r := range rows {
		var left []*row.Tuple
		switch x := r.(type) {
		case *row.Tuple:
			left = []*row.Tuple{x}
		case *row.Joined:
			left = x.Tuples
		default:
			return nil, fmt.Errorf("lookup join %s: unexpected row %T", j.Table, r)
		}
		found, err := j.lookup(ctx, r)
		if err != nil {
			return nil, err
		}
		matched := false
		for _, m := range found {
			if j.Layout == nil {
				m = maps.Clone(m) // cached rows stay read-only
			}
			t := row.NewTuple(j.Layout, m)
			t.Emitter = j.Table
			cand := &row.Joined{Tuples: append(append(make([]*row.Tuple, 0, len(left)+1), left...), t)}
			if j.Residual != nil {
				v, err := j.Residual(evalCtx(ctx, cand))
				if err != nil {
					return nil, fmt.Errorf("lookup join %s: %w", j.Table, err)
				}
				ok, err := eval.Truthy(v)
				if err != nil {
					return nil, fmt.Errorf("lookup join %s: %w", j.Table, err)
				}
				if !ok {
					continue
				}
			}
			matched = true
			out = append(out, cand)
		}
		if !matched && j.Type == ast.LeftJoin {
			out = append(out, &row.Joined{Tuples: append(append(make([]*row.Tuple, 0, len(left)+1), left...), nil)})
		}
	}
	return out, nil
}

// lookup evaluates the key expressions on r and queries the table, through
// the cache when there is one. A null key matches nothing, as in SQL.
func (j *LookupJoin) lookup(ctx *Context, r row.Row) ([]map[string]any, error) {
	keys := make(map[string]any, len(j.Keys))
	for i, k := range j.Keys {
		v, err := k(evalCtx(ctx, r))
		if err != nil {
			return nil, fmt.Errorf("lookup join %s: key %s: %w", j.Table, j.Columns[i], err)
		}
		if v == nil {
			return nil, nil
		}
		keys[j.Columns[i]] = v
	}
	var now int64
	if j.Cache != nil {
		if ctx.NowMS != nil {
			now = ctx.NowMS()
		}
		if rows, ok := j.Cache.Get(keys, now); ok {
			return rows, nil
		}
	}
	if j.Source == nil {
		return nil, fmt.Errorf("lookup join %s: lookup source not connected", j.Table)
	}
	c := j.Ctx
	if c == nil {
		c = context.Background()
	}
	rows, err := j.Source.Lookup(c, keys)
	if err != nil {
		return nil, fmt.Errorf("lookup table %s: %w", j.Table, err)
	}
	if j.Cache != nil {
		j.Cache.Put(keys, rows, now)
	}
	return rows, nil
}
