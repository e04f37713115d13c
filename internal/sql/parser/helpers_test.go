package parser

import (
	"reflect"
	"testing"

	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/sql/token"
)

var posType = reflect.TypeOf(token.Pos{})

// withoutPos returns a deep copy-free view of n with every token.Pos zeroed;
// it mutates n, so callers pass trees they own.
func withoutPos(n ast.Node) ast.Node {
	zeroPos(reflect.ValueOf(n))
	return n
}

func zeroPos(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			zeroPos(v.Elem())
		}
	case reflect.Struct:
		if v.Type() == posType {
			v.Set(reflect.Zero(posType))
			return
		}
		for i := 0; i < v.NumField(); i++ {
			zeroPos(v.Field(i))
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			zeroPos(v.Index(i))
		}
	}
}

// invalidPos returns the path of the first token.Pos field that is not set,
// or "".
func invalidPos(v reflect.Value, path string) string {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return invalidPos(v.Elem(), path)
		}
	case reflect.Struct:
		if v.Type() == posType {
			if !v.Interface().(token.Pos).IsValid() {
				return path
			}
			return ""
		}
		for i := 0; i < v.NumField(); i++ {
			if p := invalidPos(v.Field(i), path+"."+v.Type().Field(i).Name); p != "" {
				return p
			}
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			if p := invalidPos(v.Index(i), path); p != "" {
				return p
			}
		}
	}
	return ""
}

// checkRoundTrip asserts that stmt prints to SQL that parses to an equal
// tree and that printing is stable. It returns the printed SQL.
func checkRoundTrip(t testing.TB, src string, stmt ast.Statement) string {
	t.Helper()
	printed := stmt.String()
	again, err := ParseStatement(printed)
	if err != nil {
		t.Fatalf("reparse of printed form failed: %v\nsource:  %q\nprinted: %q", err, src, printed)
	}
	if p2 := again.String(); p2 != printed {
		t.Fatalf("printing is not stable\nsource: %q\nfirst:  %q\nsecond: %q", src, printed, p2)
	}
	if !reflect.DeepEqual(withoutPos(stmt), withoutPos(again)) {
		t.Fatalf("round trip changed the tree\nsource:  %q\nprinted: %q\nfirst:  %#v\nsecond: %#v", src, printed, stmt, again)
	}
	return printed
}
