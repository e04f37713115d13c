package operator

import (
	"fmt"
	"sort"
	"sync/atomic"

	"github.com/rekuiper/rekuiper/internal/eval"
	"github.com/rekuiper/rekuiper/internal/row"
	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/value"
)

// JoinSpec is one JOIN of a rule.
type JoinSpec struct {
	Type   ast.JoinType
	Stream string // emitter of the right side
	On     eval.Expr
	// Table sides are fed on input port Input and hold their latest rows.
	Table  bool
	Input  int
	Retain int // rows kept for a table; 0 keeps the latest batch
}

// Join joins the rows of a window set (or one stream tuple) with the other
// streams of the set and with tables.
type Join struct {
	Left string
	// LeftTable is set when the FROM side is a table fed on LeftInput.
	LeftTable bool
	LeftInput int
	Joins     []JoinSpec

	tables map[string][]*row.Tuple
	// published is tables as of its last change, for readers outside the
	// operator's goroutine (ScanTables). Each change stores a new map; a
	// slice once stored is never written below its length again (appends
	// write past it, trimming copies), so readers need no lock.
	published atomic.Pointer[map[string][]*row.Tuple]
}

func (j *Join) Name() string { return "join" }

func (j *Join) Process(ctx *Context, it Item, emit Emit) error {
	if it.Kind != Data {
		forward(it, emit)
		return nil
	}
	if it.Tuples != nil && it.Input > 0 {
		j.updateTable(it)
		return nil
	}
	if it.Set != nil {
		rows, err := j.join(ctx, it.Set.Rows)
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			// Nothing joined: the window emits nothing.
			return nil
		}
		set := *it.Set
		set.Rows = rows
		it.Set = &set
		emit(it)
		return nil
	}
	for _, t := range it.Tuples {
		rows, err := j.join(ctx, []row.Row{t})
		if err != nil {
			return err
		}
		if len(rows) > 0 {
			emit(Item{Kind: Data, Set: &row.Set{Rows: rows}})
		}
	}
	return nil
}

func (j *Join) updateTable(it Item) {
	if j.tables == nil {
		j.tables = map[string][]*row.Tuple{}
	}
	defer j.publish()
	if j.LeftTable && it.Input == j.LeftInput {
		j.tables[j.Left] = append([]*row.Tuple(nil), it.Tuples...)
		return
	}
	for _, spec := range j.Joins {
		if !spec.Table || spec.Input != it.Input {
			continue
		}
		if spec.Retain <= 0 {
			j.tables[spec.Stream] = append([]*row.Tuple(nil), it.Tuples...)
			return
		}
		rows := append(j.tables[spec.Stream], it.Tuples...)
		if len(rows) > spec.Retain {
			rows = append([]*row.Tuple(nil), rows[len(rows)-spec.Retain:]...)
		}
		j.tables[spec.Stream] = rows
	}
}

// publish stores a copy of the table map for ScanTables.
func (j *Join) publish() {
	m := make(map[string][]*row.Tuple, len(j.tables))
	for name, rows := range j.tables {
		m[name] = rows
	}
	j.published.Store(&m)
}

// ScanTables returns the rows each table side holds, in FROM and JOIN
// order, as of the last change. It may be called from any goroutine; the
// tuples are shared with the running rule and must not be mutated.
func (j *Join) ScanTables() []TableRows {
	var out []TableRows
	var m map[string][]*row.Tuple
	if p := j.published.Load(); p != nil {
		m = *p
	}
	if j.LeftTable {
		out = append(out, TableRows{Table: j.Left, Rows: m[j.Left]})
	}
	for _, spec := range j.Joins {
		if spec.Table {
			out = append(out, TableRows{Table: spec.Stream, Rows: m[spec.Stream]})
		}
	}
	return out
}

// TableRows is the content of one scan table as a join holds it.
type TableRows struct {
	Table string
	Rows  []*row.Tuple
}

func byEmitter(rows []row.Row, emitter string) []*row.Tuple {
	var out []*row.Tuple
	for _, r := range rows {
		if t, ok := r.(*row.Tuple); ok && t.Emitter == emitter {
			out = append(out, t)
		}
	}
	return out
}

func (j *Join) join(ctx *Context, rows []row.Row) ([]row.Row, error) {
	var acc []*row.Joined
	left := byEmitter(rows, j.Left)
	if j.LeftTable {
		left = j.tables[j.Left]
	}
	for _, t := range left {
		acc = append(acc, &row.Joined{Tuples: []*row.Tuple{t}})
	}
	for _, spec := range j.Joins {
		right := j.tables[spec.Stream]
		if !spec.Table {
			right = byEmitter(rows, spec.Stream)
		}
		next, err := joinOne(ctx, acc, right, spec)
		if err != nil {
			return nil, fmt.Errorf("run Join error: %w", err)
		}
		acc = next
	}
	out := make([]row.Row, len(acc))
	for i, r := range acc {
		out[i] = r
	}
	return out, nil
}

func joinOne(ctx *Context, left []*row.Joined, right []*row.Tuple, spec JoinSpec) ([]*row.Joined, error) {
	var out []*row.Joined
	width := 1
	if len(left) > 0 {
		width = len(left[0].Tuples)
	}
	if spec.Type == ast.RightJoin {
		return rightJoin(ctx, left, right, spec, width)
	}
	matchedRight := make([]bool, len(right))
	for _, l := range left {
		matched := false
		for ri, r := range right {
			cand := &row.Joined{Tuples: append(append([]*row.Tuple(nil), l.Tuples...), r)}
			ok := true
			if spec.Type != ast.CrossJoin && spec.On != nil {
				v, err := spec.On(evalCtx(ctx, cand))
				if err != nil {
					return nil, err
				}
				if ok, err = eval.Truthy(v); err != nil {
					return nil, err
				}
			}
			if ok {
				matched = true
				matchedRight[ri] = true
				out = append(out, cand)
			}
		}
		if !matched && (spec.Type == ast.LeftJoin || spec.Type == ast.FullJoin) {
			out = append(out, &row.Joined{Tuples: append(append([]*row.Tuple(nil), l.Tuples...), nil)})
		}
	}
	if spec.Type == ast.RightJoin || spec.Type == ast.FullJoin {
		for ri, r := range right {
			if !matchedRight[ri] {
				tuples := make([]*row.Tuple, width+1)
				tuples[width] = r
				out = append(out, &row.Joined{Tuples: tuples})
			}
		}
	}
	return out, nil
}

// rightJoin joins in the order of the right rows, as eKuiper does: each
// right row is followed by its matches, or stands alone.
func rightJoin(ctx *Context, left []*row.Joined, right []*row.Tuple, spec JoinSpec, width int) ([]*row.Joined, error) {
	var out []*row.Joined
	for _, r := range right {
		matched := false
		for _, l := range left {
			cand := &row.Joined{Tuples: append(append([]*row.Tuple(nil), l.Tuples...), r)}
			if spec.On != nil {
				v, err := spec.On(evalCtx(ctx, cand))
				if err != nil {
					return nil, err
				}
				ok, err := eval.Truthy(v)
				if err != nil {
					return nil, err
				}
				if !ok {
					continue
				}
			}
			matched = true
			out = append(out, cand)
		}
		if !matched {
			tuples := make([]*row.Tuple, width+1)
			tuples[width] = r
			out = append(out, &row.Joined{Tuples: tuples})
		}
	}
	return out, nil
}

// Snapshot encodes the table contents held by the join.
func (j *Join) Snapshot() ([]byte, error) {
	names := make([]string, 0, len(j.tables))
	for n := range j.tables {
		names = append(names, n)
	}
	sort.Strings(names)
	buf := value.AppendValue([]byte{1}, int64(len(names)))
	for _, n := range names {
		buf = value.AppendString(buf, n)
		buf = row.AppendTuples(buf, j.tables[n])
	}
	return buf, nil
}

// Restore loads table contents from a snapshot.
func (j *Join) Restore(data []byte) error {
	if len(data) == 0 || data[0] != 1 {
		return fmt.Errorf("restore join: unsupported snapshot version")
	}
	r := value.NewReader(data[1:])
	n, _ := r.Value().(int64)
	tables := map[string][]*row.Tuple{}
	for i := int64(0); i < n && r.Err() == nil; i++ {
		name := r.String()
		tables[name] = row.ReadTuples(r)
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("restore join: %w", err)
	}
	j.tables = tables
	j.publish()
	return nil
}
