package planner

import (
	"strings"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/function"
	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/sql/parser"
)

func TestWindowSizeBounds(t *testing.T) {
	st, err := parser.ParseStatement(`CREATE STREAM s () WITH (TYPE="memory", DATASOURCE="t")`)
	if err != nil {
		t.Fatal(err)
	}
	defs := map[string]*ast.CreateStreamStmt{"s": st.(*ast.CreateStreamStmt)}
	build := func(window string) error {
		stmt, err := parser.ParseSelect("SELECT count(*) FROM s GROUP BY " + window)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Build(stmt, defs, Options{}, function.Builtins(), time.UTC)
		return err
	}
	for _, w := range []string{"TUMBLINGWINDOW(dd, 366)", "HOPPINGWINDOW(ss, 31622400, 10)", "COUNTWINDOW(1000000)", "SLIDINGWINDOW(ms, 31622400000)"} {
		if err := build(w); err != nil {
			t.Errorf("%s: %v", w, err)
		}
	}
	for w, want := range map[string]string{
		"TUMBLINGWINDOW(dd, 367)":                 "argument 367 DD exceeds the limit of 366 days",
		"TUMBLINGWINDOW(ss, 9223372036854775807)": "exceeds the limit of 366 days",
		"HOPPINGWINDOW(ss, 10, 31622401)":         "exceeds the limit of 366 days",
		"SESSIONWINDOW(hh, 1, 8785)":              "exceeds the limit of 366 days",
		"COUNTWINDOW(1000001)":                    "COUNTWINDOW length 1000001 exceeds the limit of 1000000 rows",
	} {
		if err := build(w); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want %q", w, err, want)
		}
	}
}
