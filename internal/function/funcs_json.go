package function

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/value"
)

// registerJson adds to_json, parse_json and the JSONPath functions.
//
// Differences from eKuiper (deliberate): a path that selects nothing and a
// nil document give nil (eKuiper raises "unknown key ..." / "invalid data nil
// for jsonpath"), and json_path_query_first on a path that selects a single
// non-array value returns that value (eKuiper raises "query result (...) is
// not an array").
func registerJson(r *Registry) {
	r.MustAdd(
		&Def{Name: "to_json", Kind: Scalar, MinArgs: 1, MaxArgs: 1, Scalar: jsonTo},
		&Def{Name: "parse_json", Kind: Scalar, MinArgs: 1, MaxArgs: 1, Scalar: jsonParse},
		&Def{Name: "json_path_query", Kind: Scalar, MinArgs: 2, MaxArgs: 2,
			Validate: jsonValidatePath, Scalar: jsonPathQuery},
		&Def{Name: "json_path_query_first", Kind: Scalar, MinArgs: 2, MaxArgs: 2,
			Validate: jsonValidatePath, Scalar: jsonPathQueryFirst},
		&Def{Name: "json_path_exists", Kind: Scalar, MinArgs: 2, MaxArgs: 2,
			Validate: jsonValidatePath, Scalar: jsonPathExists},
	)
}

// jsonTo encodes a value as JSON text; nil gives nil. HTML characters are
// not escaped.
func jsonTo(_ Env, args []any) (any, error) {
	if args[0] == nil {
		return nil, nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(args[0]); err != nil {
		return nil, fmt.Errorf("fail to convert to json: %w", err)
	}
	return string(bytes.TrimRight(buf.Bytes(), "\n")), nil
}

// jsonParse decodes JSON text. As in eKuiper, every number decodes to
// float64; JSON null gives nil.
func jsonParse(_ Env, args []any) (any, error) {
	var data []byte
	switch x := args[0].(type) {
	case nil:
		return nil, nil
	case string:
		data = []byte(x)
	case []byte:
		data = x
	default:
		return nil, fmt.Errorf("parse_json requires a string argument, got %s", value.Describe(x))
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("fail to parse json: %w", err)
	}
	return v, nil
}

// jsonValidatePath checks a literal path argument at rule creation.
func jsonValidatePath(args []ast.Expr) error {
	switch x := args[1].(type) {
	case *ast.StringLit:
		_, err := parseJSONPath(x.Val)
		return err
	case *ast.IntegerLit, *ast.NumberLit, *ast.BoolLit:
		return fmt.Errorf("the second argument should be a json path string")
	}
	return nil
}

// jsonEvalPath evaluates args[1] (the path) against args[0]. A nil document
// selects nothing.
func jsonEvalPath(args []any) (any, bool, error) {
	path, ok := args[1].(string)
	if !ok {
		return nil, false, fmt.Errorf("the second argument should be a json path string, got %s", value.Describe(args[1]))
	}
	p, err := parseJSONPath(path)
	if err != nil {
		return nil, false, err
	}
	if args[0] == nil {
		return nil, false, nil
	}
	res, found := p.eval(args[0])
	return res, found, nil
}

// jsonPathQuery returns what the path selects: the value for a definite
// path, a list of matches otherwise; nil when a definite path selects
// nothing.
func jsonPathQuery(_ Env, args []any) (any, error) {
	res, _, err := jsonEvalPath(args)
	return res, err
}

// jsonPathQueryFirst returns the first element when the path selects an
// array or a list of matches, nil when it is empty, and the value itself
// otherwise.
func jsonPathQueryFirst(_ Env, args []any) (any, error) {
	res, _, err := jsonEvalPath(args)
	if err != nil {
		return nil, err
	}
	if a, ok := res.([]any); ok {
		if len(a) == 0 {
			return nil, nil
		}
		return a[0], nil
	}
	return res, nil
}

// jsonPathExists reports whether the path selects at least one value.
func jsonPathExists(_ Env, args []any) (any, error) {
	_, found, err := jsonEvalPath(args)
	if err != nil {
		return nil, err
	}
	return found, nil
}
