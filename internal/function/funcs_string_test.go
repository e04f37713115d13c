package function

import (
	"testing"

	"github.com/rekuiper/rekuiper/internal/sql/ast"
)

func TestStringCorpus(t *testing.T) {
	const (
		hello   = "Hello World"
		padded  = "  padded  "
		unicode = "h\u00e9llo \u00fcn\u00efcode"
	)
	cases := []mathCase{
		// case_trim
		{"case_trim", "lower", []any{hello}, "hello world", ""},
		{"case_trim", "upper", []any{hello}, "HELLO WORLD", ""},
		{"case_trim", "trim", []any{hello}, hello, ""},
		{"case_trim", "ltrim", []any{hello}, hello, ""},
		{"case_trim", "rtrim", []any{hello}, hello, ""},
		{"case_trim", "lower", []any{padded}, padded, ""},
		{"case_trim", "upper", []any{padded}, "  PADDED  ", ""},
		{"case_trim", "trim", []any{padded}, "padded", ""},
		{"case_trim", "ltrim", []any{padded}, "padded  ", ""},
		{"case_trim", "rtrim", []any{padded}, "  padded", ""},
		{"case_trim", "trim", []any{""}, "", ""},
		{"case_trim", "lower", []any{""}, "", ""},
		{"case_trim", "lower", []any{unicode}, unicode, ""},
		{"case_trim", "upper", []any{unicode}, "H\u00c9LLO \u00dcN\u00cfCODE", ""},
		{"case_trim", "trim", []any{unicode}, unicode, ""},
		// concat
		{"concat", "concat", []any{hello, "world"}, "Hello Worldworld", ""},
		{"concat", "concat", []any{hello, "-", "world", "!"}, "Hello World-world!", ""},
		{"concat", "concat", []any{"world"}, "world", ""},
		{"concat", "concat", []any{"", ""}, "", ""},
		{"concat", "concat", []any{"", "-", "", "!"}, "-!", ""},
		{"concat", "concat", []any{unicode, "\u00fc"}, unicode + "\u00fc", ""},
		// concat_nil_middle: nil arguments are skipped.
		{"concat_nil_middle", "concat", []any{"x", nil, "y"}, "xy", ""},
		// format_nil_and_int. QUIRK: eKuiper gives "1234.0" (no grouping for
		// the default locale); rekuiper groups as documented.
		{"format_nil_and_int", "format", []any{int64(1234), int64(1)}, "1,234.0", ""},
		{"format_nil_and_int", "format", []any{nil, int64(1)}, nil, ""},
		// length_numbytes_reverse
		{"length_numbytes_reverse", "length", []any{hello}, int64(11), ""},
		{"length_numbytes_reverse", "numbytes", []any{hello}, int64(11), ""},
		{"length_numbytes_reverse", "reverse", []any{hello}, "dlroW olleH", ""},
		{"length_numbytes_reverse", "length", []any{padded}, int64(10), ""},
		{"length_numbytes_reverse", "reverse", []any{padded}, "  deddap  ", ""},
		{"length_numbytes_reverse", "length", []any{""}, int64(0), ""},
		{"length_numbytes_reverse", "numbytes", []any{""}, int64(0), ""},
		{"length_numbytes_reverse", "reverse", []any{""}, "", ""},
		{"length_numbytes_reverse", "length", []any{unicode}, int64(13), ""},
		{"length_numbytes_reverse", "numbytes", []any{unicode}, int64(16), ""},
		{"length_numbytes_reverse", "reverse", []any{unicode}, "edoc\u00efn\u00fc oll\u00e9h", ""},
		// lpad_rpad_nil_count
		{"lpad_rpad_nil_count", "lpad", []any{"x", int64(2)}, "  x", ""},
		{"lpad_rpad_nil_count", "lpad", []any{"x", nil}, nil, ""},
		// pad
		{"pad", "lpad", []any{hello, int64(3)}, "   Hello World", ""},
		{"pad", "rpad", []any{hello, int64(3)}, "Hello World   ", ""},
		{"pad", "lpad", []any{padded, int64(0)}, padded, ""},
		{"pad", "rpad", []any{padded, int64(0)}, padded, ""},
		{"pad", "lpad", []any{"", int64(1)}, " ", ""},
		{"pad", "rpad", []any{"", int64(1)}, " ", ""},
		{"pad", "lpad", []any{unicode, int64(2)}, "  " + unicode, ""},
		{"pad", "rpad", []any{unicode, int64(2)}, unicode + "  ", ""},
		// regexp
		{"regexp", "regexp_matches", []any{"abc123", "^[a-z]+[0-9]+$"}, true, ""},
		{"regexp", "regexp_replace", []any{"abc123", "[0-9]", "#"}, "abc###", ""},
		{"regexp", "regexp_substr", []any{"abc123", "[0-9]+"}, "123", ""},
		{"regexp", "regexp_matches", []any{"ABC123", "^[a-z]+[0-9]+$"}, false, ""},
		{"regexp", "regexp_replace", []any{"ABC123", "[0-9]", "#"}, "ABC###", ""},
		{"regexp", "regexp_substr", []any{"ABC123", "[0-9]+"}, "123", ""},
		{"regexp", "regexp_matches", []any{"no digits", "^[a-z]+[0-9]+$"}, false, ""},
		{"regexp", "regexp_replace", []any{"no digits", "[0-9]", "#"}, "no digits", ""},
		{"regexp", "regexp_substr", []any{"no digits", "[0-9]+"}, "", ""},
		{"regexp", "regexp_matches", []any{"a1b22c333", "^[a-z]+[0-9]+$"}, false, ""},
		{"regexp", "regexp_replace", []any{"a1b22c333", "[0-9]", "#"}, "a#b##c###", ""},
		{"regexp", "regexp_substring", []any{"a1b22c333", "[0-9]+"}, "1", ""},
		// regexp_anchors_case
		{"regexp_anchors_case", "regexp_matches", []any{"ABCdef", "(?i)^abc"}, true, ""},
		{"regexp_anchors_case", "regexp_replace", []any{"ABCdef", `^\s+|\s+$`, ""}, "ABCdef", ""},
		{"regexp_anchors_case", "regexp_matches", []any{"  x y  ", "(?i)^abc"}, false, ""},
		{"regexp_anchors_case", "regexp_replace", []any{"  x y  ", `^\s+|\s+$`, ""}, "x y", ""},
		// regexp_groups
		{"regexp_groups", "regexp_replace", []any{"user@example", `(\w+)@(\w+)`, "$2 at $1"}, "example at user", ""},
		{"regexp_groups", "regexp_replace", []any{"plain", `(\w+)@(\w+)`, "$2 at $1"}, "plain", ""},
		// split_value_multichar
		{"split_value_multichar", "split_value", []any{"x/y::z/w", "::", int64(1)}, "z/w", ""},
		{"split_value_multichar", "split_value", []any{"x/y::z/w", "/", int64(1)}, "y::z", ""},
		// startswith_nil
		{"startswith_nil", "startswith", []any{nil, "a"}, false, ""},
		{"startswith_nil", "endswith", []any{nil, "a"}, false, ""},
		// string_nil
		{"string_nil", "concat", []any{nil, "x"}, "x", ""},
		{"string_nil", "lower", []any{nil}, nil, ""},
		{"string_nil", "length", []any{nil}, int64(0), ""},
		{"string_nil", "trim", []any{nil}, nil, ""},
		{"string_nil", "indexof", []any{nil, "a"}, int64(-1), ""},
		// substring. QUIRK (kept, matches eKuiper's code): the third
		// argument is an end index, not a length.
		{"substring", "substring", []any{hello, int64(0), int64(5)}, "Hello", ""},
		{"substring", "substring", []any{hello, int64(6)}, "World", ""},
		{"substring", "substring", []any{hello, int64(2), int64(4)}, "ll", ""},
		{"substring", "substring", []any{"abcdefgh", int64(0), int64(5)}, "abcde", ""},
		{"substring", "substring", []any{"abcdefgh", int64(6)}, "gh", ""},
		{"substring", "substring", []any{"abcdefgh", int64(2), int64(4)}, "cd", ""},
		// substring_out_of_range
		{"substring_out_of_range", "substring", []any{"abc", int64(2), int64(40)}, "c", ""},
		{"substring_out_of_range", "substring", []any{"abcdef", int64(2), int64(40)}, "cdef", ""},
		// trim_tabs_newlines
		{"trim_tabs_newlines", "trim", []any{"\t a b \n"}, "a b", ""},
		{"trim_tabs_newlines", "length", []any{"a b"}, int64(3), ""},
		// gen_expr cases using string functions
		{"case_with_functions", "lower", []any{"X"}, "x", ""},
		{"case_with_functions", "upper", []any{"a"}, "A", ""},
		{"case_with_functions", "concat", []any{"b", "!"}, "b!", ""},
		{"string_escape_newline", "concat", []any{"apple", "\n"}, "apple\n", ""},
		{"where_function", "length", []any{"banana"}, int64(6), ""},
		{"where_function", "startswith", []any{"banana", "b"}, true, ""},
		{"where_function", "startswith", []any{"cherry", "b"}, false, ""},
		{"random_properties", "length", []any{"0f0b8c52-8f8a-11ee-b9d1-0242ac120002"}, int64(36), ""},
	}
	mathRunCases(t, cases)
}

func TestStringBehaviour(t *testing.T) {
	cases := []mathCase{
		{"indexof", "indexof", []any{"héllo", "l"}, int64(2), ""},
		{"indexof", "indexof", []any{"abc", "z"}, int64(-1), ""},
		{"endswith", "endswith", []any{"abc", "bc"}, true, ""},
		{"length", "length", []any{[]any{int64(1), int64(2)}}, int64(2), ""},
		{"length", "length", []any{map[string]any{"a": int64(1)}}, int64(1), ""},
		{"length", "length", []any{int64(1234)}, int64(4), ""},
		{"numbytes", "numbytes", []any{nil}, int64(0), ""},
		{"reverse", "reverse", []any{nil}, nil, ""},
		{"pad", "lpad", []any{"x", int64(-1)}, nil, "negative"},
		{"pad", "rpad", []any{"x", 1.5}, nil, "cannot convert float64(1.5) to int"},
		{"regexp", "regexp_matches", []any{"x", "("}, nil, "compile regular expression"},
		{"regexp", "regexp_matches", []any{"x", nil}, false, ""},
		{"regexp", "regexp_replace", []any{"x", nil, "y"}, nil, ""},
		{"regexp", "regexp_substr", []any{nil, "x"}, nil, ""},
		{"substring", "substring", []any{"héllo", int64(1), int64(3)}, "él", ""},
		{"substring", "substring", []any{"abc", int64(5)}, "", ""},
		{"substring", "substring", []any{"abc", int64(3), int64(5)}, "", ""},
		{"substring", "substring", []any{"abc", int64(-1)}, nil, "start index must be a positive number"},
		{"substring", "substring", []any{"abc", int64(2), int64(1)}, nil, "start index must be smaller than end index"},
		{"substring", "substring", []any{nil, int64(1)}, nil, ""},
		{"split_value", "split_value", []any{"a,b", ",", int64(2)}, nil, "2 out of index array (size = 2)"},
		{"split_value", "split_value", []any{"a,b", nil, int64(0)}, nil, ""},
		// diff_funcs/split_value_negative: a negative index counts from the end.
		{"split_value", "split_value", []any{"a,b,c", ",", int64(-1)}, "c", ""},
		{"split_value", "split_value", []any{"2", "2", int64(-2)}, "", ""},
		{"split_value", "split_value", []any{"a,b", ",", int64(-3)}, nil, "-3 out of index array (size = 2)"},
		{"format", "format", []any{1234567.891, int64(2)}, "1,234,567.89", ""},
		{"format", "format", []any{-1234567.891, int64(0)}, "-1,234,568", ""},
		{"format", "format", []any{12.5, int64(2), "en_US"}, "12.50", ""},
		{"format", "format", []any{int64(999), int64(-1)}, "999", ""},
		{"format", "format", []any{int64(100000), int64(0)}, "100,000", ""},
		{"format", "format", []any{12332.2, int64(2), "de_DE"}, "12.332,20", ""}, // as eKuiper (differential diff_funcs/format_locale)
		{"format", "format", []any{2.5, int64(2), "de_DE"}, "2,50", ""},
		{"format", "format", []any{int64(1), int64(0), "zh"}, nil, "not supported"},
		{"format", "format", []any{int64(1), int64(0), "nonsense!"}, nil, "not supported"},
		{"format", "format", []any{"12", int64(0)}, nil, "cannot convert string(12) to float64"},
	}
	mathRunCases(t, cases)
}

func TestStringValidate(t *testing.T) {
	i := &ast.IntegerLit{Val: 1}
	neg := &ast.IntegerLit{Val: -1}
	s := &ast.StringLit{Val: "x"}
	f := &ast.FieldRef{Name: "x"}
	tests := []validateCase{
		{"concat number literal", "concat", []ast.Expr{s, i}, true},
		{"concat fields", "concat", []ast.Expr{f, s}, false},
		{"lower number", "lower", []ast.Expr{i}, true},
		{"lpad string count", "lpad", []ast.Expr{f, s}, true},
		{"substring negative start", "substring", []ast.Expr{f, neg}, true},
		{"substring end before start", "substring", []ast.Expr{f, &ast.IntegerLit{Val: 3}, i}, true},
		{"substring ok", "substring", []ast.Expr{f, i, &ast.IntegerLit{Val: 3}}, false},
		{"split_value negative", "split_value", []ast.Expr{f, s, neg}, true},
		{"split_value string index", "split_value", []ast.Expr{f, s, s}, true},
		{"format", "format", []ast.Expr{f, i}, false},
	}
	runValidateCases(t, tests)
	reg := Builtins()
	for _, n := range []string{"regexp_substr", "regexp_substring"} {
		if _, ok := reg.Lookup(n); !ok {
			t.Fatalf("%s not registered", n)
		}
	}
	if _, ok := reg.Lookup("format_time"); ok {
		d, _ := reg.Lookup("format")
		if dt, _ := reg.Lookup("format_time"); dt == d {
			t.Fatal("format_time must not be the string format function")
		}
	}
}
