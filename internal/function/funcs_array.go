package function

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"

	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/value"
)

// arrayMaxSequence bounds sequence() so a typo cannot allocate gigabytes.
const arrayMaxSequence = 1_000_000

// registerArray adds the array functions. Unless noted, a nil first
// argument gives nil and a non-array first argument is an error. Functions
// never modify their input arrays (rows are shared between rules).
//
// array_map looks the mapped function up in r at call time, so r must be the
// registry the function is registered in (Builtins does that).
func registerArray(r *Registry) {
	r.MustAdd(
		&Def{Name: "cardinality", Aliases: []string{"array_cardinality"}, Kind: Scalar, MinArgs: 1, MaxArgs: 1, Scalar: arrayCardinality},
		&Def{Name: "array_create", Kind: Scalar, MinArgs: 0, MaxArgs: -1, Scalar: arrayCreate},
		&Def{Name: "array_position", Kind: Scalar, MinArgs: 2, MaxArgs: 2, Scalar: arrayPosition(false)},
		&Def{Name: "array_last_position", Kind: Scalar, MinArgs: 2, MaxArgs: 2, Scalar: arrayPosition(true)},
		&Def{Name: "element_at", Kind: Scalar, MinArgs: 2, MaxArgs: 2, Scalar: arrayElementAt},
		&Def{Name: "array_contains", Kind: Scalar, MinArgs: 2, MaxArgs: 2, Scalar: arrayContains},
		&Def{Name: "array_contains_any", Kind: Scalar, MinArgs: 2, MaxArgs: 2, Scalar: arrayContainsAny},
		&Def{Name: "array_remove", Kind: Scalar, MinArgs: 2, MaxArgs: 2, Scalar: arrayRemove},
		&Def{Name: "array_intersect", Kind: Scalar, MinArgs: 2, MaxArgs: 2, Scalar: arrayIntersect},
		&Def{Name: "array_union", Kind: Scalar, MinArgs: 2, MaxArgs: 2, Scalar: arrayUnion},
		&Def{Name: "array_except", Kind: Scalar, MinArgs: 2, MaxArgs: 2, Scalar: arrayExcept},
		&Def{Name: "array_max", Kind: Scalar, MinArgs: 1, MaxArgs: 1, Scalar: arrayMax},
		&Def{Name: "array_min", Kind: Scalar, MinArgs: 1, MaxArgs: 1, Scalar: arrayMin},
		&Def{Name: "array_distinct", Kind: Scalar, MinArgs: 1, MaxArgs: 1, Scalar: arrayDistinct},
		&Def{Name: "array_flatten", Kind: Scalar, MinArgs: 1, MaxArgs: 1, Scalar: arrayFlatten},
		&Def{Name: "array_shuffle", Kind: Scalar, MinArgs: 1, MaxArgs: 1, Scalar: arrayShuffle},
		&Def{Name: "array_sort", Kind: Scalar, MinArgs: 1, MaxArgs: 1, Scalar: arraySort},
		&Def{Name: "array_concat", Kind: Scalar, MinArgs: 1, MaxArgs: -1, Scalar: arrayConcat},
		&Def{Name: "array_join", Kind: Scalar, MinArgs: 2, MaxArgs: 3, Scalar: arrayJoin},
		&Def{Name: "array_map", Kind: Scalar, MinArgs: 2, MaxArgs: 2, Scalar: arrayMap(r)},
		&Def{
			Name: "repeat", Kind: Scalar, MinArgs: 2, MaxArgs: 2, Scalar: arrayRepeat,
			Validate: boundedArg(nil, "repeat", "count", 1, MaxBuiltElements),
		},
		&Def{Name: "sequence", Kind: Scalar, MinArgs: 2, MaxArgs: 3, Scalar: arraySequence, Validate: arrayValidateSequence},
		&Def{Name: "kvpair_array_to_obj", Kind: Scalar, MinArgs: 1, MaxArgs: 1, Scalar: arrayKVPairsToObject},
	)
}

// arrayArg returns args[i] as an array; isNil reports a nil argument.
func arrayArg(args []any, i int) (arr []any, isNil bool, err error) {
	if args[i] == nil {
		return nil, true, nil
	}
	a, ok := args[i].([]any)
	if !ok {
		if i == 0 {
			return nil, false, errArrayFirstNotArray
		}
		return nil, false, errArraySecondNotArray
	}
	return a, false, nil
}

// arrayCardinality is the array length; nil and non-arrays give 0 (eKuiper
// behaviour).
func arrayCardinality(_ Env, args []any) (any, error) {
	if a, ok := args[0].([]any); ok {
		return int64(len(a)), nil
	}
	return int64(0), nil
}

// arrayCreate builds an array of its arguments; no arguments give nil.
func arrayCreate(_ Env, args []any) (any, error) {
	var out []any
	for _, a := range args {
		// Null arguments are left out, as in eKuiper; none left gives null.
		if a != nil {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// arrayPosition returns the 0-based index of the first (or last) element
// equal in type and value to args[1], or -1 (also for a null array, as in
// eKuiper: nothing is found in it).
func arrayPosition(last bool) ScalarFunc {
	return func(_ Env, args []any) (any, error) {
		arr, isNil, err := arrayArg(args, 0)
		if err != nil {
			return nil, err
		}
		if isNil {
			return int64(-1), nil
		}
		if last {
			for i := len(arr) - 1; i >= 0; i-- {
				if arraySame(arr[i], args[1]) {
					return int64(i), nil
				}
			}
			return int64(-1), nil
		}
		for i, v := range arr {
			if arraySame(v, args[1]) {
				return int64(i), nil
			}
		}
		return int64(-1), nil
	}
}

// arrayElementAt indexes an array (negative from the end) or an object by
// key.
func arrayElementAt(_ Env, args []any) (any, error) {
	switch x := args[0].(type) {
	case nil:
		return nil, nil
	case []any:
		if args[1] == nil {
			return nil, nil
		}
		i, err := arrayIntArg(args[1], "second")
		if err != nil {
			return nil, err
		}
		n := int64(len(x))
		if i >= n || -i > n {
			return nil, errArrayIndex
		}
		if i < 0 {
			i += n
		}
		return x[i], nil
	case map[string]any:
		k, ok := args[1].(string)
		if !ok {
			return nil, fmt.Errorf("second argument should be string")
		}
		return x[k], nil
	}
	return nil, fmt.Errorf("first argument should be []interface{} or map[string]interface{}")
}

// arrayContains reports whether an element equals args[1] in type and value
// (a nil second argument finds nil elements).
func arrayContains(_ Env, args []any) (any, error) {
	arr, isNil, err := arrayArg(args, 0)
	if err != nil {
		return nil, err
	}
	if isNil {
		// A null array contains nothing, as in eKuiper.
		return false, nil
	}
	for _, v := range arr {
		if arraySame(v, args[1]) {
			return true, nil
		}
	}
	return false, nil
}

func arrayContainsAny(_ Env, args []any) (any, error) {
	// As in eKuiper: a nil first array contains nothing (false, whatever
	// the second argument); otherwise both must be arrays.
	a, aNil, err := arrayArg(args, 0)
	if err != nil {
		return nil, err
	}
	if aNil {
		return false, nil
	}
	if args[1] == nil {
		return nil, fmt.Errorf("second argument should be array of interface{}")
	}
	b, _, err := arrayArg(args, 1)
	if err != nil {
		return nil, err
	}
	for _, x := range a {
		for _, y := range b {
			if arraySame(x, y) {
				return true, nil
			}
		}
	}
	return false, nil
}

// arrayRemove returns a copy without the elements equal to args[1].
func arrayRemove(_ Env, args []any) (any, error) {
	arr, isNil, err := arrayArg(args, 0)
	if isNil || err != nil {
		return nil, err
	}
	out := make([]any, 0, len(arr))
	for _, v := range arr {
		if !arraySame(v, args[1]) {
			out = append(out, v)
		}
	}
	return out, nil
}

// arrayTwo fetches two array arguments; nil when either is nil.
func arrayTwo(args []any) (a, b []any, isNil bool, err error) {
	a, aNil, err := arrayArg(args, 0)
	if err != nil {
		return nil, nil, false, err
	}
	b, bNil, err := arrayArg(args, 1)
	if err != nil {
		return nil, nil, false, err
	}
	return a, b, aNil || bNil, nil
}

// arrayIntersect keeps the distinct elements of the first array, in order,
// that are also in the second; an empty result is nil.
func arrayIntersect(_ Env, args []any) (any, error) {
	a, b, isNil, err := arrayTwo(args)
	if isNil || err != nil {
		return nil, err
	}
	in := arraySet{}
	for _, v := range b {
		in.add(v)
	}
	seen := arraySet{}
	var out []any
	for _, v := range a {
		if in.has(v) && seen.add(v) {
			out = append(out, v)
		}
	}
	return arrayNilIfEmpty(out), nil
}

// arrayUnion is the distinct elements of both arrays, first-seen order.
func arrayUnion(_ Env, args []any) (any, error) {
	// A nil argument is an empty array, as in eKuiper: the union of two
	// nils is [].
	a, b, _, err := arrayTwo(args)
	if err != nil {
		return nil, err
	}
	seen := arraySet{}
	out := make([]any, 0, len(a)+len(b))
	for _, v := range append(append([]any{}, a...), b...) {
		if seen.add(v) {
			out = append(out, v)
		}
	}
	return out, nil
}

// arrayExcept is the distinct elements of the first array not in the second.
// arrayExcept keeps the distinct elements of the first array, in order,
// that are not in the second. As in eKuiper, a nil first array is nil
// whatever the second (which must still be an array when it is not nil),
// and a nil second array removes nothing (diff_funcs/array_except_nils).
func arrayExcept(_ Env, args []any) (any, error) {
	a, aNil, err := arrayArg(args, 0)
	if aNil || err != nil {
		return nil, err
	}
	b, _, err := arrayArg(args, 1)
	if err != nil {
		return nil, err
	}
	seen := arraySet{}
	for _, v := range b {
		seen.add(v)
	}
	out := make([]any, 0, len(a))
	for _, v := range a {
		if seen.add(v) {
			out = append(out, v)
		}
	}
	return out, nil
}

func arrayMax(_ Env, args []any) (any, error) {
	arr, isNil, err := arrayArg(args, 0)
	if isNil || err != nil {
		return nil, err
	}
	return arrayExtremum(arr, 1)
}

func arrayMin(_ Env, args []any) (any, error) {
	arr, isNil, err := arrayArg(args, 0)
	if isNil || err != nil {
		return nil, err
	}
	return arrayExtremum(arr, -1)
}

// arrayDistinct drops repeated scalar elements (first occurrence kept);
// arrays and objects are kept as they are. An empty result is nil.
func arrayDistinct(_ Env, args []any) (any, error) {
	arr, isNil, err := arrayArg(args, 0)
	if isNil || err != nil {
		return nil, err
	}
	seen := arraySet{}
	var out []any
	for _, v := range arr {
		if seen.add(v) {
			out = append(out, v)
		}
	}
	return arrayNilIfEmpty(out), nil
}

// arrayFlatten flattens one level: array elements are spliced in, other
// elements kept. An empty result is nil.
func arrayFlatten(_ Env, args []any) (any, error) {
	arr, isNil, err := arrayArg(args, 0)
	if isNil || err != nil {
		return nil, err
	}
	var out []any
	for _, v := range arr {
		if inner, ok := v.([]any); ok {
			out = append(out, inner...)
		} else {
			out = append(out, v)
		}
	}
	// An empty array flattens to nothing (the field is left out); one whose
	// elements are all empty arrays flattens to null, as in eKuiper
	// (diff_funcs/array_flatten_empty).
	if len(arr) > 0 && len(out) == 0 {
		return []any(nil), nil
	}
	return arrayNilIfEmpty(out), nil
}

// arrayShuffle returns a shuffled copy.
func arrayShuffle(_ Env, args []any) (any, error) {
	arr, isNil, err := arrayArg(args, 0)
	if isNil || err != nil {
		return nil, err
	}
	out := append([]any{}, arr...)
	rand.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out, nil
}

// arraySort returns an ascending copy (value.Less order; stable).
func arraySort(_ Env, args []any) (any, error) {
	arr, isNil, err := arrayArg(args, 0)
	if isNil || err != nil {
		return nil, err
	}
	out := append([]any{}, arr...)
	sort.SliceStable(out, func(i, j int) bool { return value.Less(out[i], out[j]) })
	return out, nil
}

// arrayConcat concatenates its array arguments, skipping nil ones.
func arrayConcat(_ Env, args []any) (any, error) {
	// Nothing to concatenate (nil or empty arrays only) gives a null that
	// is written out (an empty list typed as a list), as in eKuiper
	// (diff_funcs/array_concat_nothing).
	var out []any
	for i, a := range args {
		switch x := a.(type) {
		case nil:
		case []any:
			out = append(out, x...)
		default:
			return nil, fmt.Errorf("argument %d should be array of interface{}, got %s", i+1, value.Describe(a))
		}
	}
	if len(out) == 0 {
		return []any(nil), nil
	}
	return out, nil
}

// arrayJoin joins string elements with a delimiter; nil elements become the
// optional replacement (default "").
func arrayJoin(_ Env, args []any) (any, error) {
	arr, isNil, err := arrayArg(args, 0)
	if isNil || err != nil {
		return nil, err
	}
	delim, ok := args[1].(string)
	if !ok {
		return nil, fmt.Errorf("second argument should be string")
	}
	repl := ""
	if len(args) == 3 && args[2] != nil {
		if repl, ok = args[2].(string); !ok {
			return nil, fmt.Errorf("third argument should be string")
		}
	}
	// As eKuiper: numbers and booleans are written out, a nil element
	// becomes the replacement or, without one, is left out.
	parts := make([]string, 0, len(arr))
	for _, v := range arr {
		switch x := v.(type) {
		case nil:
			if repl != "" {
				parts = append(parts, repl)
			}
		case string:
			parts = append(parts, x)
		case int64:
			parts = append(parts, strconv.FormatInt(x, 10))
		case float64:
			parts = append(parts, strconv.FormatFloat(x, 'f', -1, 64))
		case bool:
			parts = append(parts, strconv.FormatBool(x))
		default:
			return nil, fmt.Errorf("array elements should be string, number or bool, got %s", value.Describe(v))
		}
	}
	return strings.Join(parts, delim), nil
}

// arrayMap applies the one-argument scalar function named by args[0] (looked
// up in r) to every element of args[1].
func arrayMap(r *Registry) ScalarFunc {
	return func(env Env, args []any) (any, error) {
		name, ok := args[0].(string)
		if !ok {
			return nil, fmt.Errorf("first argument should be string")
		}
		arr, isNil, err := arrayArg(args, 1)
		if isNil || err != nil {
			return nil, err
		}
		d, ok := r.Lookup(name)
		if !ok {
			return nil, fmt.Errorf("unknown built-in function: %s", name)
		}
		if d.Kind != Scalar || d.Scalar == nil {
			return nil, fmt.Errorf("first argument should be a scalar function")
		}
		if err := d.CheckArity(1); err != nil {
			return nil, fmt.Errorf("function should accept exactly one argument")
		}
		out := make([]any, len(arr))
		for i, v := range arr {
			res, err := d.Scalar(env, []any{v})
			if err != nil {
				return nil, fmt.Errorf("apply %s to element %d: %w", name, i, err)
			}
			out[i] = res
		}
		return out, nil
	}
}

// arrayRepeat is an array of args[1] copies of args[0].
func arrayRepeat(_ Env, args []any) (any, error) {
	if args[1] == nil {
		return nil, nil
	}
	n, err := arrayIntArg(args[1], "second")
	if err != nil {
		return nil, err
	}
	if n < 0 || n > arrayMaxSequence {
		return nil, fmt.Errorf("repeat: second argument should be between 0 and %d, got %d", arrayMaxSequence, n)
	}
	out := make([]any, n)
	for i := range out {
		out[i] = args[0]
	}
	return out, nil
}

// sequenceLen is the number of elements of sequence(start, stop, step);
// ok is false when it exceeds arrayMaxSequence. It computes in uint64 so
// that no span of int64 values wraps around.
func sequenceLen(start, stop, step int64) (n int64, ok bool) {
	var span, stride uint64
	switch {
	case step > 0 && stop >= start:
		span, stride = uint64(stop)-uint64(start), uint64(step)
	case step < 0 && stop <= start:
		span, stride = uint64(start)-uint64(stop), uint64(-(step+1))+1
	default:
		return 0, true
	}
	if span/stride >= arrayMaxSequence {
		return 0, false
	}
	return int64(span/stride + 1), true
}

// arrayValidateSequence refuses at creation a sequence of literals longer
// than the bound.
func arrayValidateSequence(args []ast.Expr) error {
	lits := make([]int64, len(args))
	for i, a := range args {
		lit, ok := a.(*ast.IntegerLit)
		if !ok {
			return nil
		}
		lits[i] = lit.Val
	}
	step := int64(1)
	if lits[1] < lits[0] {
		step = -1
	}
	if len(lits) == 3 {
		if step = lits[2]; step == 0 {
			return nil
		}
	}
	if _, ok := sequenceLen(lits[0], lits[1], step); !ok {
		return fmt.Errorf("sequence: %d to %d by %d would have more than %d elements", lits[0], lits[1], step, arrayMaxSequence)
	}
	return nil
}

// arraySequence is the integers from start to stop inclusive by step
// (default 1 or -1). A step that moves away from stop gives an empty array.
func arraySequence(_ Env, args []any) (any, error) {
	for _, a := range args {
		if a == nil {
			return nil, nil
		}
	}
	start, err := arrayIntArg(args[0], "first")
	if err != nil {
		return nil, err
	}
	stop, err := arrayIntArg(args[1], "second")
	if err != nil {
		return nil, err
	}
	step := int64(1)
	if stop < start {
		step = -1
	}
	if len(args) == 3 {
		if step, err = arrayIntArg(args[2], "third"); err != nil {
			return nil, err
		}
		if step == 0 {
			return nil, fmt.Errorf("invalid step: should not be zero")
		}
	}
	n, ok := sequenceLen(start, stop, step)
	if !ok {
		return nil, fmt.Errorf("sequence: %d to %d by %d would have more than %d elements", start, stop, step, arrayMaxSequence)
	}
	if n == 0 {
		return []any{}, nil
	}
	out := make([]any, n)
	for i := range out {
		out[i] = start + int64(i)*step
	}
	return out, nil
}

// arrayKVPairsToObject turns [{"key": k, "value": v}, ...] into an object;
// an empty array gives nil.
func arrayKVPairsToObject(_ Env, args []any) (any, error) {
	arr, isNil, err := arrayArg(args, 0)
	if isNil || err != nil {
		return nil, err
	}
	if len(arr) == 0 {
		return nil, nil
	}
	out := make(map[string]any, len(arr))
	for _, item := range arr {
		m, ok := item.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("array item should be map[string]interface{}")
		}
		k, kok := m["key"]
		v, vok := m["value"]
		if !kok || !vok {
			return nil, fmt.Errorf("array item should be key-value pair")
		}
		ks, ok := k.(string)
		if !ok {
			return nil, fmt.Errorf("array item key should be string, got %s", value.Describe(k))
		}
		out[ks] = v
	}
	return out, nil
}
