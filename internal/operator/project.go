package operator

import (
	"fmt"

	"github.com/rekuiper/rekuiper/internal/eval"
	"github.com/rekuiper/rekuiper/internal/row"
)

// ProjField is one compiled SELECT field.
type ProjField struct {
	Name      string
	Expr      eval.Expr
	Invisible bool
	// Wildcard fields copy the columns of Stream ("" = all), minus Except,
	// with Replace fields evaluated over them.
	Wildcard bool
	Stream   string
	Except   map[string]bool
	Replace  []ProjField
	// Multi fields return an object whose entries become columns.
	Multi bool
	// SRF fields return an array (or object) expanded into several rows.
	SRF bool
	// Column is set when the field is a plain column reference: a column
	// present with a null value is output as null, an absent one omitted.
	Column *ColumnRef
	// Null writes a nil value as null instead of omitting it (an aliased
	// changed_cols with nothing changed, as eKuiper writes it).
	Null bool
}

// Project shapes output rows. On tuples it emits one emission per tuple; on
// a set one emission with a row per group (Grouped) or per row.
type Project struct {
	Fields  []ProjField
	Grouped bool
	// Limit truncates each emission's rows when HasLimit.
	Limit    int64
	HasLimit bool
	// SendNil keeps selected fields whose value is nil.
	SendNil bool
	// SendMeta adds the row's metadata as "__meta" (non-window rules).
	SendMeta bool

	// results is a chunk that one-row emissions are carved from, so that
	// an emission does not cost an allocation for its slice. Sinks may keep
	// an emission: a cell handed out is never reused, a full chunk is
	// replaced and left to the GC.
	results []map[string]any
	// slots, when set (EnableSlots), is where the emissions for tuples
	// are drawn from when the fields allow rows in slots (see slotted).
	slots *row.SlotPool
	block *row.SlotBlock // open block the emissions are carved from
}

// slotBlockRows is the number of one-row emissions carved from one block.
const slotBlockRows = 64

// EnableSlots makes the projection emit the rows it projects from tuples
// as Item.Slots instead of Results, when its fields allow: plain fields
// only (no wildcard, multi-column or set-returning field, no __meta). The
// runtime calls it; whoever receives an Item.Slots releases it.
func (p *Project) EnableSlots() {
	if !p.slotted() {
		return
	}
	var names []string
	for _, f := range p.Fields {
		if !f.Invisible {
			names = append(names, f.Name)
		}
	}
	p.slots, p.block = row.NewSlotPool(row.NewColumns(names)), nil
}

// slotted reports whether every row of the projection has the same columns
// (some possibly absent), so that they fit one Columns.
func (p *Project) slotted() bool {
	if p.SendMeta || p.HasLimit && p.Limit < 1 {
		return false
	}
	for _, f := range p.Fields {
		if f.Wildcard || f.Multi || f.SRF {
			return false
		}
	}
	return true
}

// resultChunk is the number of one-row emissions carved from one chunk.
const resultChunk = 64

func (p *Project) Name() string { return "project" }

// KeepsNoTuples: a projection keeps the values of the rows it projects
// (in its emissions), never the tuples.
func (p *Project) KeepsNoTuples() {}

func (p *Project) Process(ctx *Context, it Item, emit Emit) error {
	if it.Kind != Data {
		forward(it, emit)
		return nil
	}
	if it.Set != nil {
		return p.processSet(ctx, it.Set, emit)
	}
	if p.slots != nil {
		return p.processSlots(ctx, it.Tuples, emit)
	}
	var firstErr error
	for _, t := range it.Tuples {
		ec := evalCtx(ctx, t)
		ec.RowNumber = 1
		rows, err := p.rows(ec, p.emission())
		if err != nil {
			emitError(ctx, fmt.Errorf("run Select error: %w", err), emit)
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		if p.hasSRF() {
			for _, r := range p.limit(rows) {
				emit(Item{Kind: Data, Results: []map[string]any{r}})
			}
			continue
		}
		emit(Item{Kind: Data, Results: p.limit(rows)})
	}
	return reported(firstErr)
}

// processSlots projects each tuple into one emission of slot rows.
func (p *Project) processSlots(ctx *Context, ts []*row.Tuple, emit Emit) error {
	var firstErr error
	for _, t := range ts {
		ec := evalCtx(ctx, t)
		ec.RowNumber = 1
		out := p.slotEmission()
		if err := p.slotRow(ec, out.Add()); err != nil {
			out.Release()
			emitError(ctx, fmt.Errorf("run Select error: %w", err), emit)
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		emit(Item{Kind: Data, Slots: out})
	}
	return reported(firstErr)
}

// slotEmission returns a new emission carved from the open block, opening
// one when it is full: a block is shared by the emissions of several
// items (a filter passes tuples on one at a time) and recycled once all
// of them are released.
func (p *Project) slotEmission() *row.SlotRows {
	if p.block != nil && p.block.Len() == slotBlockRows {
		p.block.Done()
		p.block = nil
	}
	if p.block == nil {
		p.block = p.slots.Get(slotBlockRows)
	}
	return p.block.Rows()
}

// slotRow evaluates the fields for one row into dst, the slots of the
// visible fields in order, as rows does into a map.
func (p *Project) slotRow(ec *eval.Ctx, dst []any) error {
	j := 0
	for _, f := range p.Fields {
		v, err := f.Expr(ec)
		if err != nil {
			return fmt.Errorf("alias: %s expr: %w", f.Name, err)
		}
		if f.Invisible {
			continue
		}
		if v != nil || p.SendNil || f.Null || f.Column.present(ec) {
			dst[j] = v
		}
		j++
	}
	return nil
}

// emission returns an empty slice with room for one row, carved from a
// chunk.
func (p *Project) emission() []map[string]any {
	if len(p.results) == cap(p.results) {
		p.results = make([]map[string]any, 0, resultChunk)
	}
	i := len(p.results)
	p.results = p.results[:i+1]
	return p.results[i : i : i+1]
}

func (p *Project) processSet(ctx *Context, set *row.Set, emit Emit) error {
	var out []map[string]any
	add := func(ec *eval.Ctx) (err error) {
		out, err = p.rows(ec, out)
		return err
	}
	if p.Grouped {
		for _, g := range set.Groups {
			ec := &eval.Ctx{Row: first(g.Rows), Group: g, Window: set.Window, HasWindow: true, Env: ctx.Env, Rule: ctx.Rule, RowNumber: 1}
			if err := add(ec); err != nil {
				emitError(ctx, fmt.Errorf("run Select error: %w", err), emit)
				return reported(err)
			}
		}
	} else {
		for i, r := range set.Rows {
			ec := &eval.Ctx{Row: r, Window: set.Window, HasWindow: true, Env: ctx.Env, Rule: ctx.Rule, RowNumber: int64(i + 1)}
			if err := add(ec); err != nil {
				emitError(ctx, fmt.Errorf("run Select error: %w", err), emit)
				return reported(err)
			}
		}
	}
	if out == nil {
		out = []map[string]any{}
	}
	emit(Item{Kind: Data, Results: p.limit(out)})
	return nil
}

func (p *Project) hasSRF() bool {
	for _, f := range p.Fields {
		if f.SRF {
			return true
		}
	}
	return false
}

func (p *Project) limit(rows []map[string]any) []map[string]any {
	if p.HasLimit && int64(len(rows)) > p.Limit {
		return rows[:p.Limit]
	}
	return rows
}

// rows evaluates the fields for one row or group and appends the result to
// dst; several rows come out only when a set-returning function expands.
func (p *Project) rows(ec *eval.Ctx, dst []map[string]any) ([]map[string]any, error) {
	out := make(map[string]any, len(p.Fields))
	var srfVals []any
	srfName := ""
	srfIndex := -1
	for i, f := range p.Fields {
		if f.Wildcard {
			if err := p.wildcard(ec, f, out); err != nil {
				return nil, err
			}
			continue
		}
		v, err := f.Expr(ec)
		if err != nil {
			return nil, fmt.Errorf("alias: %s expr: %w", f.Name, err)
		}
		if f.Invisible {
			continue
		}
		switch {
		case f.SRF:
			arr, ok := v.([]any)
			if !ok {
				if m, isMap := v.(map[string]any); isMap {
					for k, x := range m {
						out[k] = x
					}
					continue
				}
				if v == nil {
					return dst, nil
				}
				return nil, fmt.Errorf("the argument for the unnest function should be array")
			}
			srfVals, srfName, srfIndex = arr, f.Name, i
		case f.Multi:
			if m, ok := v.(map[string]any); ok {
				for k, x := range m {
					out[k] = x
				}
			}
		default:
			if v != nil || p.SendNil || f.Null || f.Column.present(ec) {
				out[f.Name] = v
			}
		}
	}
	if p.SendMeta && ec.Row != nil {
		if m := ec.Row.MetaAll(""); m != nil {
			out["__meta"] = m
		}
	}
	if srfIndex < 0 {
		return append(dst, out), nil
	}
	for _, el := range srfVals {
		r := make(map[string]any, len(out)+1)
		for k, x := range out {
			r[k] = x
		}
		if m, ok := el.(map[string]any); ok {
			for k, x := range m {
				r[k] = x
			}
		} else {
			// A nil element is a row whose column is null, as in eKuiper.
			r[srfName] = el
		}
		dst = append(dst, r)
	}
	return dst, nil
}

func (p *Project) wildcard(ec *eval.Ctx, f ProjField, out map[string]any) error {
	if t, ok := ec.Row.(*row.Tuple); ok {
		// A slotted tuple would build a map for Columns.
		t.Range(f.Stream, func(k string, v any) {
			if !f.Except[k] {
				out[k] = v
			}
		})
	} else {
		for k, v := range ec.Row.Columns(f.Stream) {
			if !f.Except[k] {
				out[k] = v
			}
		}
	}
	for _, r := range f.Replace {
		v, err := r.Expr(ec)
		if err != nil {
			return fmt.Errorf("alias: %s expr: %w", r.Name, err)
		}
		if v != nil {
			out[r.Name] = v
		} else {
			delete(out, r.Name)
		}
	}
	return nil
}

// ColumnRef names a column of a stream ("" any stream).
type ColumnRef struct {
	Stream string
	Name   string
}

func (c *ColumnRef) present(ec *eval.Ctx) bool {
	if c == nil || ec.Row == nil {
		return false
	}
	_, ok := ec.Row.Value(c.Stream, c.Name)
	return ok
}
