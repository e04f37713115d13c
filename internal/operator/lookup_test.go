package operator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/rekuiper/rekuiper/internal/eval"
	"github.com/rekuiper/rekuiper/internal/row"
	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/value"
)

// mapTable is a lookup table over a map (id → rows) that counts queries.
type mapTable struct {
	rows    map[string][]map[string]any
	queries int
}

func (m *mapTable) Lookup(_ context.Context, keys map[string]any) ([]map[string]any, error) {
	m.queries++
	if keys["id"] == "fail" {
		return nil, errors.New("table unreachable")
	}
	return m.rows[value.ToString(keys["id"])], nil
}

func column(stream, name string) eval.Expr {
	return func(c *eval.Ctx) (any, error) {
		v, _ := c.Row.Value(stream, name)
		return v, nil
	}
}

func tuples(ks ...any) []*row.Tuple {
	out := make([]*row.Tuple, len(ks))
	for i, k := range ks {
		out[i] = &row.Tuple{Emitter: "s", Message: map[string]any{"k": k}}
	}
	return out
}

// run feeds stream tuples through j and returns, per emitted row, the key
// of the stream side and the table's "name" (nil when not joined).
func run(t *testing.T, j *LookupJoin, ctx *Context, ts []*row.Tuple) [][2]any {
	t.Helper()
	var out [][2]any
	err := j.Process(ctx, Item{Kind: Data, Tuples: ts}, func(it Item) {
		for _, r := range it.Set.Rows {
			k, _ := r.Value("s", "k")
			n, _ := r.Value("t", "name")
			out = append(out, [2]any{k, n})
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestLookupJoinInnerAndLeft(t *testing.T) {
	tbl := &mapTable{rows: map[string][]map[string]any{
		"1": {{"id": int64(1), "name": "one"}},
		"2": {{"id": int64(2), "name": "two"}, {"id": int64(2), "name": "deux"}},
	}}
	for _, tc := range []struct {
		typ  ast.JoinType
		want string
	}{
		{ast.InnerJoin, "[[1 one] [2 two] [2 deux]]"},
		{ast.LeftJoin, "[[1 one] [2 two] [2 deux] [3 <nil>] [<nil> <nil>]]"},
	} {
		j := &LookupJoin{Type: tc.typ, Table: "t", Columns: []string{"id"}, Keys: []eval.Expr{column("s", "k")}, Source: tbl}
		got := fmt.Sprint(run(t, j, &Context{}, tuples(int64(1), int64(2), int64(3), nil)))
		if got != tc.want {
			t.Errorf("join type %v: %s, want %s", tc.typ, got, tc.want)
		}
	}
}

func TestLookupJoinResidual(t *testing.T) {
	tbl := &mapTable{rows: map[string][]map[string]any{
		"2": {{"id": int64(2), "name": "two"}, {"id": int64(2), "name": "deux"}},
	}}
	notDeux := func(c *eval.Ctx) (any, error) {
		n, _ := c.Row.Value("t", "name")
		return n != "deux", nil
	}
	j := &LookupJoin{Type: ast.LeftJoin, Table: "t", Columns: []string{"id"}, Keys: []eval.Expr{column("s", "k")}, Residual: notDeux, Source: tbl}
	if got := fmt.Sprint(run(t, j, &Context{}, tuples(int64(2)))); got != "[[2 two]]" {
		t.Fatalf("residual ON: %s", got)
	}
	onlyDeux := func(c *eval.Ctx) (any, error) {
		n, _ := c.Row.Value("t", "name")
		return n == "nothing", nil
	}
	j.Residual = onlyDeux
	if got := fmt.Sprint(run(t, j, &Context{}, tuples(int64(2)))); got != "[[2 <nil>]]" {
		t.Fatalf("left join with no row passing ON: %s", got)
	}
}

func TestLookupCacheHitsExpiresAndEvicts(t *testing.T) {
	tbl := &mapTable{rows: map[string][]map[string]any{"1": {{"id": int64(1), "name": "one"}}}}
	now := int64(0)
	ctx := &Context{NowMS: func() int64 { return now }}
	j := &LookupJoin{Type: ast.InnerJoin, Table: "t", Columns: []string{"id"}, Keys: []eval.Expr{column("s", "k")},
		Source: tbl, Cache: NewLookupCache(1000, 2, true)}
	run(t, j, ctx, tuples(int64(1), int64(1), "1"))
	if tbl.queries != 1 {
		t.Fatalf("queries with the cache on = %d, want 1", tbl.queries)
	}
	tbl.rows["1"] = []map[string]any{{"id": int64(1), "name": "uno"}}
	if got := fmt.Sprint(run(t, j, ctx, tuples(int64(1)))); got != "[[1 one]]" {
		t.Fatalf("cached row: %s", got)
	}
	now = 1000
	if got := fmt.Sprint(run(t, j, ctx, tuples(int64(1)))); got != "[[1 uno]]" || tbl.queries != 2 {
		t.Fatalf("after the TTL: %s after %d queries", got, tbl.queries)
	}
	// Missing keys are cached too; a third key evicts the least recently used.
	run(t, j, ctx, tuples(int64(7), int64(8)))
	if j.Cache.Len() != 2 {
		t.Fatalf("cache holds %d keys, want its size 2", j.Cache.Len())
	}
	q := tbl.queries
	run(t, j, ctx, tuples(int64(8), int64(1)))
	if tbl.queries != q+1 {
		t.Fatalf("queries = %d, want only the evicted key 1 queried again (%d)", tbl.queries, q+1)
	}
}

func TestLookupCacheWithoutMissingKeys(t *testing.T) {
	tbl := &mapTable{rows: map[string][]map[string]any{}}
	j := &LookupJoin{Type: ast.InnerJoin, Table: "t", Columns: []string{"id"}, Keys: []eval.Expr{column("s", "k")},
		Source: tbl, Cache: NewLookupCache(1000, 10, false)}
	run(t, j, &Context{NowMS: func() int64 { return 0 }}, tuples(int64(5), int64(5)))
	if tbl.queries != 2 || j.Cache.Len() != 0 {
		t.Fatalf("cacheMissingKey off: %d queries, %d cached keys; want 2 and 0", tbl.queries, j.Cache.Len())
	}
}

// TestLookupErrorLosesOneRow: a failed lookup drops its row, reports the
// error, and the rest of the batch is joined.
func TestLookupErrorLosesOneRow(t *testing.T) {
	tbl := &mapTable{rows: map[string][]map[string]any{"1": {{"id": int64(1), "name": "one"}}}}
	j := &LookupJoin{Type: ast.LeftJoin, Table: "t", Columns: []string{"id"}, Keys: []eval.Expr{column("s", "k")}, Source: tbl}
	var got [][2]any
	err := j.Process(&Context{}, Item{Kind: Data, Tuples: tuples("fail", int64(1))}, func(it Item) {
		for _, r := range it.Set.Rows {
			k, _ := r.Value("s", "k")
			n, _ := r.Value("t", "name")
			got = append(got, [2]any{k, n})
		}
	})
	if err == nil || !strings.Contains(err.Error(), "lookup table t: table unreachable") {
		t.Fatalf("error %v, want the lookup failure", err)
	}
	if fmt.Sprint(got) != "[[1 one]]" {
		t.Fatalf("rows after a failed lookup: %v", got)
	}
}
