package operator

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/eval"
	"github.com/rekuiper/rekuiper/internal/row"
	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/sql/token"
)

func readColumn(name string) eval.Expr {
	return func(c *eval.Ctx) (any, error) {
		v, _ := c.Row.Value("", name)
		return v, nil
	}
}

var typedLayout = row.NewLayout([]string{"id", "v"})

func typedTuple(id int64, v any) *row.Tuple {
	t := row.NewTuple(typedLayout, map[string]any{"id": id, "v": v, "extra": id * 10})
	t.Emitter = "s"
	return t
}

// TestPreprocessCopies: every rule gets its own copy of each tuple, carved
// from chunks; copies and the slices carrying them stay intact as later
// batches are processed, and an alias cached on a copy is the copy's own.
func TestPreprocessCopies(t *testing.T) {
	p := &Preprocess{Schemas: map[string]*StreamSchema{}, Location: time.UTC}
	ctx := &Context{Rule: &eval.RuleStats{}}
	var inputs, outputs [][]*row.Tuple
	for b := range 5 {
		in := make([]*row.Tuple, 0, 20) // beyond a chunk of copies
		for i := range cap(in) {
			in = append(in, typedTuple(int64(b*100+i), float64(i)))
		}
		var got []*row.Tuple
		err := p.Process(ctx, Item{Kind: Data, Tuples: in}, func(it Item) { got = append(got, it.Tuples...) })
		if err != nil {
			t.Fatal(err)
		}
		inputs, outputs = append(inputs, in), append(outputs, got)
		for _, c := range got {
			c.SetAlias("mark", c)
		}
	}
	seen := map[*row.Tuple]bool{}
	for b, got := range outputs {
		if len(got) != len(inputs[b]) {
			t.Fatalf("batch %d: %d copies of %d tuples", b, len(got), len(inputs[b]))
		}
		for i, c := range got {
			in := inputs[b][i]
			if c == in || seen[c] {
				t.Fatalf("batch %d tuple %d: not a fresh copy", b, i)
			}
			seen[c] = true
			if !reflect.DeepEqual(c.Columns(""), in.Columns("")) || c.Emitter != "s" {
				t.Errorf("batch %d tuple %d: copy %v of %v", b, i, c.Columns(""), in.Columns(""))
			}
			if v, _ := c.Alias("mark"); v != c {
				t.Errorf("batch %d tuple %d: alias cache shared with another copy", b, i)
			}
			if _, ok := in.Alias("mark"); ok {
				t.Errorf("batch %d tuple %d: alias cached on the shared tuple", b, i)
			}
		}
	}
}

func TestPreprocessStrictConvertsTheCopyOnly(t *testing.T) {
	s := &StreamSchema{Strict: true, Check: []string{"id", "v"}, Fields: map[string]*ast.DataType{
		"id": {Kind: token.BIGINT}, "v": {Kind: token.FLOAT}}}
	p := &Preprocess{Schemas: map[string]*StreamSchema{"s": s}, Location: time.UTC}
	ok1, bad, ok2 := typedTuple(1, int64(3)), typedTuple(2, "three"), typedTuple(3, 4.5)
	var got []*row.Tuple
	var errs []error
	ctx := &Context{Rule: &eval.RuleStats{}, SendError: true}
	err := p.Process(ctx, Item{Kind: Data, Tuples: []*row.Tuple{ok1, bad, ok2}}, func(it Item) {
		got = append(got, it.Tuples...)
		if it.Kind == Error {
			errs = append(errs, it.Err)
			got = append(got, nil) // marks the error's place
		}
	})
	if err == nil || len(errs) != 1 || !strings.Contains(errs[0].Error(), "field v type mismatch") {
		t.Fatalf("error %v, emitted %v", err, errs)
	}
	if len(got) != 3 || got[1] != nil {
		t.Fatalf("emitted %v, want copy, error, copy in order", got)
	}
	if v, _ := got[0].Value("", "v"); v != 3.0 {
		t.Errorf("BIGINT 3 in a FLOAT column became %#v, want float64 3", v)
	}
	if v, _ := ok1.Value("", "v"); v != int64(3) {
		t.Errorf("validation changed the shared tuple: %#v", v)
	}
	if v, _ := got[2].Value("", "extra"); v != int64(30) {
		t.Errorf("undeclared column lost: %#v", v)
	}
}

func TestPreprocessTimestampFromSlot(t *testing.T) {
	p := &Preprocess{Schemas: map[string]*StreamSchema{"s": {TimestampField: "id"}}, Location: time.UTC}
	var got []*row.Tuple
	err := p.Process(&Context{Rule: &eval.RuleStats{}}, Item{Kind: Data, Tuples: []*row.Tuple{typedTuple(1234, nil)}},
		func(it Item) { got = append(got, it.Tuples...) })
	if err != nil || len(got) != 1 || got[0].Timestamp != 1234 {
		t.Fatalf("got %v, %v", got, err)
	}
}

func TestProjectEmissionsStayIntact(t *testing.T) {
	p := &Project{Fields: []ProjField{{Name: "id", Expr: readColumn("id")}}}
	ctx := &Context{Rule: &eval.RuleStats{}}
	var emissions [][]map[string]any
	for i := range 3 * resultChunk {
		err := p.Process(ctx, Item{Kind: Data, Tuples: []*row.Tuple{typedTuple(int64(i), nil)}},
			func(it Item) { emissions = append(emissions, it.Results) })
		if err != nil {
			t.Fatal(err)
		}
	}
	for i, e := range emissions {
		if len(e) != 1 || e[0]["id"] != int64(i) {
			t.Fatalf("emission %d is %v", i, e)
		}
	}
}

func TestProjectWildcardOfSlottedTuple(t *testing.T) {
	f := ProjField{Wildcard: true, Except: map[string]bool{"extra": true},
		Replace: []ProjField{{Name: "v", Expr: func(*eval.Ctx) (any, error) { return "replaced", nil }}}}
	p := &Project{Fields: []ProjField{f}}
	for _, tu := range []*row.Tuple{typedTuple(1, nil), {Emitter: "s", Message: map[string]any{"id": int64(1), "v": nil, "extra": int64(10)}}} {
		var out []map[string]any
		err := p.Process(&Context{Rule: &eval.RuleStats{}}, Item{Kind: Data, Tuples: []*row.Tuple{tu}},
			func(it Item) { out = it.Results })
		if err != nil {
			t.Fatal(err)
		}
		want := []map[string]any{{"id": int64(1), "v": "replaced"}}
		if !reflect.DeepEqual(out, want) {
			t.Errorf("layout %v: SELECT * EXCEPT(extra) REPLACE(... AS v) = %v, want %v", tu.Layout() != nil, out, want)
		}
	}
}

// TestConvertToNulls: strict validation passes a null ARRAY or STRUCT
// column, as eKuiper does, and refuses a null scalar column or a null
// element of an array (diff_schema/strict_nulls).
func TestConvertToNulls(t *testing.T) {
	arr := &ast.DataType{Kind: token.ARRAY, Elem: &ast.DataType{Kind: token.BIGINT}}
	tests := []struct {
		name    string
		v       any
		dt      *ast.DataType
		wantErr bool
	}{
		{"null array", nil, arr, false},
		{"null struct", nil, &ast.DataType{Kind: token.STRUCT}, false},
		{"null element", []any{int64(1), nil}, arr, true},
		{"null bigint", nil, &ast.DataType{Kind: token.BIGINT}, true},
		{"null string", nil, &ast.DataType{Kind: token.STRINGTYPE}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := convertTo(tt.v, tt.dt, time.UTC)
			if (err != nil) != tt.wantErr {
				t.Fatalf("convertTo(%#v) = %#v, %v; want an error: %v", tt.v, got, err, tt.wantErr)
			}
			if err == nil && tt.v == nil && got != nil {
				t.Fatalf("a null became %#v", got)
			}
		})
	}
}

// TestOrderKeysWithoutOrder: an object or array in an ORDER BY key is an
// error, beside a null too and alone (diff_window/order_by_composite,
// diff_window/order_by_composite_alone); nulls alone are not.
func TestOrderKeysWithoutOrder(t *testing.T) {
	tests := []struct {
		name    string
		keys    [][]any
		wantErr bool
	}{
		{"object beside null", [][]any{{map[string]any{}}, {nil}}, true},
		{"two arrays", [][]any{{[]any{int64(1)}}, {[]any{int64(2)}}}, true},
		{"one object", [][]any{{map[string]any{}}}, true},
		{"one empty array", [][]any{{[]any{}}}, true},
		{"nulls", [][]any{{nil}, {nil}}, false},
		{"numbers", [][]any{{int64(1)}, {2.5}, {nil}}, false},
		{"number and string", [][]any{{int64(1)}, {"a"}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := comparableKeys(tt.keys, 1); (err != nil) != tt.wantErr {
				t.Fatalf("comparableKeys = %v, want an error: %v", err, tt.wantErr)
			}
		})
	}
}
