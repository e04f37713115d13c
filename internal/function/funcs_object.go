package function

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/rekuiper/rekuiper/internal/sql/ast"
)

// registerObject adds the object (map) functions. A nil object argument
// gives nil; results are new maps (inputs are never modified). Functions
// that list keys (keys, values, items, obj_to_kvpair_array) use sorted key
// order so results are deterministic.
func registerObject(r *Registry) {
	r.MustAdd(
		&Def{Name: "keys", Kind: Scalar, MinArgs: 1, MaxArgs: 1, Scalar: objectKeys},
		&Def{Name: "values", Kind: Scalar, MinArgs: 1, MaxArgs: 1, Scalar: objectValues},
		&Def{Name: "object", Kind: Scalar, MinArgs: 2, MaxArgs: 2, Scalar: objectFromLists},
		&Def{Name: "object_construct", Kind: Scalar, MinArgs: 0, MaxArgs: -1,
			Validate: objectValidateConstruct, Scalar: objectConstruct},
		&Def{Name: "object_concat", Kind: Scalar, MinArgs: 2, MaxArgs: -1, Scalar: objectConcat},
		&Def{Name: "zip", Kind: Scalar, MinArgs: 1, MaxArgs: 1, Scalar: objectZip},
		&Def{Name: "items", Kind: Scalar, MinArgs: 1, MaxArgs: 1, Scalar: objectItems},
		&Def{Name: "erase", Kind: Scalar, MinArgs: 2, MaxArgs: 2, Scalar: objectErase},
		&Def{Name: "object_pick", Kind: Scalar, MinArgs: 2, MaxArgs: 2, Scalar: objectPick},
		&Def{Name: "object_size", Kind: Scalar, MinArgs: 1, MaxArgs: 1, Scalar: objectSize},
		&Def{Name: "obj_to_kvpair_array", Kind: Scalar, MinArgs: 1, MaxArgs: 1, Scalar: objectToKVPairs},
	)
}

// objectSortedKeys returns m's keys in ascending order.
func objectSortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// objectArg returns args[0] as an object; isNil reports a nil argument.
func objectArg(args []any, msg string) (m map[string]any, isNil bool, err error) {
	if args[0] == nil {
		return nil, true, nil
	}
	m, ok := args[0].(map[string]any)
	if !ok {
		return nil, false, errors.New(fmt.Sprintf(msg, args[0]))
	}
	return m, false, nil
}

// objectList builds a function listing elem(k, v) for every key k (in
// ascending order) and value v of the object args[0]; msg is the error for
// a non-object. A nil object gives nil, and so does an empty one when
// emptyNil is set.
func objectList(msg string, emptyNil bool, elem func(k string, v any) any) ScalarFunc {
	return func(_ Env, args []any) (any, error) {
		m, isNil, err := objectArg(args, msg)
		if isNil || err != nil || (emptyNil && len(m) == 0) {
			return nil, err
		}
		out := make([]any, 0, len(m))
		for _, k := range objectSortedKeys(m) {
			out = append(out, elem(k, m[k]))
		}
		return out, nil
	}
}

// objectKeys lists the keys.
var objectKeys = objectList("the argument should be map[string]interface{}, got %v", false,
	func(k string, _ any) any { return k })

// objectValues lists the values, in the order of their keys.
var objectValues = objectList("the argument should be map[string]interface{}, got %v", false,
	func(_ string, v any) any { return v })

// objectFromLists pairs a key array with a value array of the same length;
// empty arrays give nil.
func objectFromLists(_ Env, args []any) (any, error) {
	if args[0] == nil || args[1] == nil {
		return nil, nil
	}
	keys, ok := args[0].([]any)
	if !ok {
		return nil, fmt.Errorf("first argument should be []string")
	}
	vals, ok := args[1].([]any)
	if !ok {
		return nil, fmt.Errorf("second argument should be []interface{}")
	}
	if len(keys) != len(vals) {
		return nil, fmt.Errorf("the length of the arguments should be same")
	}
	if len(keys) == 0 {
		return nil, nil
	}
	out := make(map[string]any, len(keys))
	for i, k := range keys {
		ks, ok := k.(string)
		if !ok {
			return nil, fmt.Errorf("first argument should be []string")
		}
		out[ks] = vals[i]
	}
	return out, nil
}

// objectValidateConstruct requires key/value pairs with non-literal or
// string-literal keys.
func objectValidateConstruct(args []ast.Expr) error {
	if len(args)%2 != 0 {
		return fmt.Errorf("the args must be key value pairs")
	}
	for i := 0; i < len(args); i += 2 {
		switch args[i].(type) {
		case *ast.IntegerLit, *ast.NumberLit, *ast.BoolLit:
			return fmt.Errorf("expect string type for parameter %d", i+1)
		}
	}
	return nil
}

// objectConstruct builds {k1: v1, ...}, skipping pairs whose key is nil
// (a nil value is kept).
func objectConstruct(_ Env, args []any) (any, error) {
	if len(args)%2 != 0 {
		return nil, fmt.Errorf("the args must be key value pairs")
	}
	out := make(map[string]any, len(args)/2)
	for i := 0; i < len(args); i += 2 {
		if args[i] == nil {
			// A nil key is skipped; a nil value is kept, as in eKuiper.
			continue
		}
		k, ok := args[i].(string)
		if !ok {
			return nil, fmt.Errorf("key %v is not a string", args[i])
		}
		out[k] = args[i+1]
	}
	return out, nil
}

// objectConcat merges objects left to right (later keys win); nil
// arguments are skipped.
func objectConcat(_ Env, args []any) (any, error) {
	out := map[string]any{}
	for _, a := range args {
		if a == nil {
			continue
		}
		m, ok := a.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("the argument should be map[string]interface{}, got %v", a)
		}
		for k, v := range m {
			out[k] = v
		}
	}
	return out, nil
}

// objectZip builds an object from [[key, value], ...]; nil items are
// skipped and an empty list gives nil.
func objectZip(_ Env, args []any) (any, error) {
	if args[0] == nil {
		return nil, nil
	}
	list, ok := args[0].([]any)
	if !ok {
		return nil, fmt.Errorf("each argument should be [][2]interface{}")
	}
	if len(list) == 0 {
		return nil, nil
	}
	out := make(map[string]any, len(list))
	for _, item := range list {
		if item == nil {
			continue
		}
		pair, ok := item.([]any)
		if !ok || len(pair) != 2 {
			return nil, fmt.Errorf("each argument should be [][2]interface{}")
		}
		k, ok := pair[0].(string)
		if !ok {
			return nil, fmt.Errorf("the first element in the list item should be string")
		}
		out[k] = pair[1]
	}
	return out, nil
}

// objectItems lists [[key, value], ...]; an empty object gives nil.
var objectItems = objectList("first argument should be map[string]interface{}, got %v", true,
	func(k string, v any) any { return []any{k, v} })

// objectKeyList reads erase's second argument: a key or an array of keys.
// An element that is no string is the key its text names, as eKuiper
// converts it (diff_funcs/erase_number_keys): a number in plain decimals,
// a bool as true/false, null as "", an array or object in Go's syntax.
func objectKeyList(v any) ([]string, error) {
	switch x := v.(type) {
	case string:
		return []string{x}, nil
	case []any:
		out := make([]string, len(x))
		for i, e := range x {
			out[i] = objectKeyText(e)
		}
		return out, nil
	}
	return nil, fmt.Errorf("the argument should be slice or string")
}

// objectKeyText is the key a non-string element of erase's key list names.
func objectKeyText(e any) string {
	switch k := e.(type) {
	case nil:
		return ""
	case string:
		return k
	case bool:
		return strconv.FormatBool(k)
	case int64:
		return strconv.FormatInt(k, 10)
	case float64:
		return strconv.FormatFloat(k, 'f', -1, 64)
	}
	return fmt.Sprint(e)
}

// objectErase copies the object without the given top-level keys (a key is
// never split on dots).
func objectErase(_ Env, args []any) (any, error) {
	if args[1] == nil {
		return nil, nil
	}
	m, isNil, err := objectArg(args, "the first argument should be map[string]interface{}, got %v")
	if isNil || err != nil {
		return nil, err
	}
	keys, err := objectKeyList(args[1])
	if err != nil {
		return nil, err
	}
	drop := make(map[string]bool, len(keys))
	for _, k := range keys {
		drop[k] = true
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		if !drop[k] {
			out[k] = v
		}
	}
	return out, nil
}

// objectPick keeps the given keys. A dotted key "a.b" is a path into nested
// objects and picks only that member, keeping the nesting.
func objectPick(_ Env, args []any) (any, error) {
	m, isNil, err := objectArg(args, "the first argument should be a map, got %v")
	if isNil || err != nil {
		return nil, err
	}
	out := map[string]any{}
	for _, k := range objectPickKeys(args[1]) {
		objectPickPath(m, out, strings.Split(k, "."))
	}
	return out, nil
}

// objectPickKeys reads the keys of object_pick as eKuiper does
// (diff_funcs/object_pick_keys): a list (its strings; other elements are
// skipped) or a string; anything else (null, a number) picks nothing.
func objectPickKeys(v any) []string {
	switch x := v.(type) {
	case []any:
		var keys []string
		for _, e := range x {
			if s, ok := e.(string); ok {
				keys = append(keys, s)
			}
		}
		return keys
	case string:
		return []string{x}
	}
	return nil
}

// objectPickPath copies src's member at path into dst, creating the
// intermediate objects; a path that does not exist copies nothing.
func objectPickPath(src, dst map[string]any, path []string) {
	v, ok := src[path[0]]
	if !ok {
		return
	}
	if len(path) == 1 {
		dst[path[0]] = v
		return
	}
	inner, ok := v.(map[string]any)
	if !ok {
		return
	}
	// Copy what is already picked: it may be a map shared with the input.
	sub := map[string]any{}
	if prev, ok := dst[path[0]].(map[string]any); ok {
		for k, x := range prev {
			sub[k] = x
		}
	}
	objectPickPath(inner, sub, path[1:])
	if len(sub) > 0 {
		dst[path[0]] = sub
	}
}

// objectSize is the number of keys.
func objectSize(_ Env, args []any) (any, error) {
	m, isNil, err := objectArg(args, "the first argument should be map[string]any, got %v")
	if isNil {
		// The size of no object is 0, as in eKuiper.
		return int64(0), nil
	}
	if err != nil {
		return nil, err
	}
	return int64(len(m)), nil
}

// objectToKVPairs lists [{"key": k, "value": v}, ...]; an empty object
// gives nil.
var objectToKVPairs = objectList("the first argument should be map[string]interface{}, got %v", true,
	func(k string, v any) any { return map[string]any{"key": k, "value": v} })
