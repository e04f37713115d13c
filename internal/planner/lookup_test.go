package planner_test

import (
	"strings"
	"testing"

	"github.com/rekuiper/rekuiper/internal/operator"
	"github.com/rekuiper/rekuiper/internal/planner"
	"github.com/rekuiper/rekuiper/internal/sql/ast"
)

func lookupPlan(t *testing.T, sql string) (*planner.Plan, error) {
	t.Helper()
	return build(t, sql, append(testDefs,
		`CREATE TABLE lk () WITH (DATASOURCE="0", TYPE="redis", KIND="lookup")`,
		`CREATE TABLE lk2 () WITH (DATASOURCE="devices", TYPE="sql", KIND="lookup")`,
	))
}

func lookupOps(p *planner.Plan) (lookups []*operator.LookupJoin, joins int) {
	for _, op := range p.Ops {
		switch x := op.(type) {
		case *operator.LookupJoin:
			lookups = append(lookups, x)
		case *operator.Join:
			joins++
		}
	}
	return lookups, joins
}

func TestLookupJoinPlan(t *testing.T) {
	tests := []struct {
		sql      string
		cols     string
		residual bool
		joins    int
		typ      ast.JoinType
	}{
		{`SELECT * FROM free INNER JOIN lk ON free.k = lk.id`, "id", false, 0, ast.InnerJoin},
		{`SELECT * FROM free LEFT JOIN lk ON lk.id = free.a + 1`, "id", false, 0, ast.LeftJoin},
		{`SELECT * FROM free AS f INNER JOIN lk AS l ON (f.k = l.id AND f.v > l.limit)`, "id", true, 0, ast.InnerJoin},
		{`SELECT * FROM free INNER JOIN lk2 ON free.a = lk2.a AND lk2.b = free.b AND lk2.c > 0`, "a,b", true, 0, ast.InnerJoin},
		{`SELECT * FROM free INNER JOIN lk2 ON free.k = lk2.id AND free.k = lk2.id2 GROUP BY TUMBLINGWINDOW(ss, 1)`, "id,id2", false, 0, ast.InnerJoin},
		{`SELECT * FROM free INNER JOIN tbl ON free.id = tbl.id INNER JOIN lk ON tbl.name = lk.id`, "id", false, 1, ast.InnerJoin},
	}
	for _, tc := range tests {
		p, err := lookupPlan(t, tc.sql)
		if err != nil {
			t.Errorf("%s: %v", tc.sql, err)
			continue
		}
		lj, joins := lookupOps(p)
		if len(lj) != 1 || joins != tc.joins {
			t.Errorf("%s: %d lookup joins and %d joins, want 1 and %d", tc.sql, len(lj), joins, tc.joins)
			continue
		}
		if got := strings.Join(lj[0].Columns, ","); got != tc.cols || len(lj[0].Keys) != len(lj[0].Columns) {
			t.Errorf("%s: lookup columns %s (%d keys), want %s", tc.sql, got, len(lj[0].Keys), tc.cols)
		}
		if (lj[0].Residual != nil) != tc.residual || lj[0].Type != tc.typ {
			t.Errorf("%s: residual %v type %v, want %v %v", tc.sql, lj[0].Residual != nil, lj[0].Type, tc.residual, tc.typ)
		}
		for _, in := range p.Inputs {
			if (in.Name == "lk" || in.Name == "lk2") != in.Lookup {
				t.Errorf("%s: input %s Lookup=%v", tc.sql, in.Name, in.Lookup)
			}
		}
	}
}

func TestLookupJoinRefused(t *testing.T) {
	tests := []struct{ sql, want string }{
		{`SELECT * FROM lk INNER JOIN free ON free.k = lk.id`, "lookup table lk cannot be the FROM input"},
		{`SELECT * FROM free RIGHT JOIN lk ON free.k = lk.id`, "only be joined with INNER JOIN or LEFT JOIN"},
		{`SELECT * FROM free FULL JOIN lk ON free.k = lk.id`, "only be joined with INNER JOIN or LEFT JOIN"},
		{`SELECT * FROM free CROSS JOIN lk`, "only be joined with INNER JOIN or LEFT JOIN"},
		{`SELECT * FROM free INNER JOIN lk ON free.k > lk.id`, "needs an equality between a column of lk"},
		{`SELECT * FROM free INNER JOIN lk ON free.k = lk.id OR free.j = lk.id`, "needs an equality between a column of lk"},
		{`SELECT * FROM free INNER JOIN lk ON lk.a = lk.b`, "needs an equality between a column of lk"},
		{`SELECT * FROM free INNER JOIN lk ON free.a = lk.a AND free.b = lk.b`, "redis lookup table lk is looked up by one key, but ON has 2 equalities"},
	}
	for _, tc := range tests {
		_, err := lookupPlan(t, tc.sql)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.sql, err, tc.want)
		}
	}
}
