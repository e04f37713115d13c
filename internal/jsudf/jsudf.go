// Package jsudf runs JavaScript user-defined functions (eKuiper's
// /udf/javascript) in goja. A function is a script that defines a
// JavaScript function named like the function's id; SQL calls it with the
// call's arguments (for an aggregate, each argument is the array of its
// values over the group) and maps its return value back to the value model.
//
// Each compiled call site owns one goja runtime, created on its first call
// and reused for the life of the rule (goja runtimes are not safe for
// concurrent use; a mutex serializes the rare case of one call site
// evaluated from two goroutines). What is bounded per call: wall time
// (Limits.Timeout, then the runtime is interrupted), call stack depth
// (Limits.MaxStackDepth) and the size of the returned value
// (Limits.MaxResultBytes). What is not bounded: the heap a script allocates
// within its time limit (goja has no heap limit). A JavaScript exception,
// an interrupt or a panic inside goja is an error for that row only.
package jsudf

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dop251/goja"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/config"
	"github.com/rekuiper/rekuiper/internal/function"
)

// Limits bound one call of a JavaScript function.
type Limits struct {
	// Timeout is the wall time one call (or the script's top level, when a
	// runtime is set up) may run before it is interrupted.
	Timeout time.Duration
	// MaxStackDepth bounds the JavaScript call stack (deep recursion fails
	// with a stack overflow error instead of exhausting memory).
	MaxStackDepth int
	// MaxResultBytes bounds the approximate size of a returned value:
	// string and byte lengths plus 8 bytes per number, boolean, array
	// element and object key.
	MaxResultBytes int
}

// Default limits.
const (
	DefaultTimeout        = 100 * time.Millisecond
	DefaultMaxStackDepth  = 1000
	DefaultMaxResultBytes = 1 << 20
	// MaxScriptBytes bounds a script's size.
	MaxScriptBytes = 1 << 20
	// MaxTimeout is the largest Timeout accepted: a call blocks its rule's
	// operator for that long.
	MaxTimeout = 10 * time.Second
)

// DefaultLimits are the limits used when none are configured.
func DefaultLimits() Limits {
	return Limits{Timeout: DefaultTimeout, MaxStackDepth: DefaultMaxStackDepth, MaxResultBytes: DefaultMaxResultBytes}
}

// LimitsFromConfig are the default limits with basic.jsFunctionTimeout.
func LimitsFromConfig(cfg *config.Config) Limits {
	lim := DefaultLimits()
	if t := cfg.Basic.JSFunctionTimeout.Std(); t > 0 {
		lim.Timeout = t
	}
	return lim
}

// Validate refuses limits that would not bound anything.
func (l Limits) Validate() error {
	switch {
	case l.Timeout <= 0 || l.Timeout > MaxTimeout:
		return fmt.Errorf("javascript function timeout %s: must be more than 0 and at most %s", l.Timeout, MaxTimeout)
	case l.MaxStackDepth <= 0:
		return fmt.Errorf("javascript function stack depth %d: must be positive", l.MaxStackDepth)
	case l.MaxResultBytes <= 0:
		return fmt.Errorf("javascript function result size %d: must be positive", l.MaxResultBytes)
	}
	return nil
}

// ErrInvalid marks a function definition that cannot be stored: a bad id,
// a script that does not compile or run, or that defines no function of
// the id's name, or a name taken by a built-in function.
var ErrInvalid = errors.New("invalid javascript function")

// engineFunctions are the SQL functions the expression compiler answers
// from engine state (eval's compileSpecial) rather than from the function
// registry; a JavaScript function of such a name would never be called.
var engineFunctions = map[string]bool{
	"meta": true, "mqtt": true, "window_start": true, "window_end": true, "window_trigger": true,
	"event_time": true, "row_number": true, "rule_id": true, "rule_start": true,
	"last_hit_count": true, "last_hit_time": true, "last_agg_hit_count": true, "last_agg_hit_time": true,
	"props": true,
}

var idPattern = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*$`)

// CheckID reports whether id can name a JavaScript function: a JavaScript
// identifier. Errors wrap ErrInvalid.
func CheckID(id string) error {
	if !idPattern.MatchString(id) {
		return fmt.Errorf("%w: id %q contains invalid characters: it must be a JavaScript identifier (letters, digits, _ or $, not starting with a digit)", ErrInvalid, id)
	}
	return nil
}

// Check validates f before it is stored: its id is a JavaScript identifier
// not taken by a function registered in builtins (its resolver, which finds
// JavaScript functions, is not asked), and its script runs within
// the limits and defines a function named like the id.
func Check(f catalog.JSFunction, builtins *function.Registry, lim Limits) error {
	if len(f.Script) > MaxScriptBytes {
		return fmt.Errorf("%w: script of %d bytes is larger than %d", ErrInvalid, len(f.Script), MaxScriptBytes)
	}
	if err := CheckID(f.ID); err != nil {
		return err
	}
	if builtins != nil {
		if _, ok := builtins.Registered(f.ID); ok {
			return fmt.Errorf("%w: %s is the name of a built-in function", ErrInvalid, f.ID)
		}
	}
	if engineFunctions[strings.ToLower(f.ID)] {
		return fmt.Errorf("%w: %s is the name of a built-in function", ErrInvalid, f.ID)
	}
	if _, err := newInstance(f, lim, clock.Wall{}); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return nil
}

// Source lists the stored JavaScript functions; *catalog.Catalog is one.
type Source interface {
	ListJSFunctions(ctx context.Context) ([]catalog.JSFunction, error)
}

// Find returns the function of src whose id equals name ignoring case, as
// SQL function names do (ids are unique ignoring case, see the REST API).
func Find(ctx context.Context, src Source, name string) (catalog.JSFunction, bool, error) {
	all, err := src.ListJSFunctions(ctx)
	if err != nil {
		return catalog.JSFunction{}, false, err
	}
	for _, f := range all {
		if strings.EqualFold(f.ID, name) {
			return f, true, nil
		}
	}
	return catalog.JSFunction{}, false, nil
}

// Resolver returns a function.Resolver that finds JavaScript functions in
// src, ignoring case. Each resolution reads src and returns a fresh definition, so a rule
// planned after an update sees the new script and a running rule keeps the
// one it was planned with. The runtime of a definition is created on its
// first call, so definitions resolved only to check a function's kind cost
// nothing. Timers measure wall time even when the engine runs on a virtual
// clock: a script's run time is real.
func Resolver(src Source, lim Limits) function.Resolver {
	return func(name string) (*function.Def, bool) {
		if !idPattern.MatchString(name) {
			return nil, false
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		f, ok, err := Find(ctx, src, name)
		if err != nil || !ok {
			return nil, false
		}
		return Def(f, lim), true
	}
}

// Def is the SQL function definition of f: a scalar, or an aggregate when
// f.IsAgg, taking any number of arguments.
func Def(f catalog.JSFunction, lim Limits) *function.Def {
	s := &site{fn: f, lim: lim, clk: clock.Wall{}}
	d := &function.Def{Name: f.ID, MinArgs: 0, MaxArgs: -1}
	if f.IsAgg {
		d.Kind = function.Aggregate
		d.Aggregate = func(_ function.Env, cols [][]any) (any, error) {
			args := make([]any, len(cols))
			for i, c := range cols {
				args[i] = c
			}
			return s.call(args)
		}
	} else {
		d.Kind = function.Scalar
		d.Scalar = func(_ function.Env, args []any) (any, error) { return s.call(args) }
	}
	return d
}

// site is one call site's runtime, created on first use.
type site struct {
	fn  catalog.JSFunction
	lim Limits
	clk clock.Clock

	mu   sync.Mutex
	inst *instance
	err  error // setup error, reported on every call
}

func (s *site) call(args []any) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inst == nil && s.err == nil {
		s.inst, s.err = newInstance(s.fn, s.lim, s.clk)
	}
	if s.err != nil {
		return nil, fmt.Errorf("javascript function %s: %w", s.fn.ID, s.err)
	}
	v, err := s.inst.call(args)
	if err != nil {
		return nil, fmt.Errorf("javascript function %s: %w", s.fn.ID, err)
	}
	return v, nil
}

// instance is a runtime with the script loaded.
type instance struct {
	vm  *goja.Runtime
	fn  goja.Callable
	lim Limits
	clk clock.Clock
}

func newInstance(f catalog.JSFunction, lim Limits, clk clock.Clock) (*instance, error) {
	prog, err := goja.Compile(f.ID+".js", f.Script, false)
	if err != nil {
		return nil, fmt.Errorf("compile script: %v", err)
	}
	in := &instance{vm: goja.New(), lim: lim, clk: clk}
	in.vm.SetMaxCallStackSize(lim.MaxStackDepth)
	if _, err := in.guarded(func() (any, error) { return in.vm.RunProgram(prog) }); err != nil {
		return nil, fmt.Errorf("run script: %w", err)
	}
	fn, ok := goja.AssertFunction(in.vm.Get(f.ID))
	if !ok {
		return nil, fmt.Errorf("script defines no function named %s", f.ID)
	}
	in.fn = fn
	return in, nil
}

// errTimeout is the interrupt value; goja wraps it in *goja.InterruptedError.
var errTimeout = errors.New("time limit exceeded")

// guarded runs run under the time limit, turning exceptions, interrupts and
// panics into errors. run may call back into JavaScript (getters while a
// result is converted), so the conversion runs inside it too.
func (in *instance) guarded(run func() (any, error)) (v any, err error) {
	fired := make(chan struct{})
	t := in.clk.AfterFunc(in.lim.Timeout, func() {
		in.vm.Interrupt(errTimeout)
		close(fired)
	})
	defer func() {
		if !t.Stop() {
			<-fired
			in.vm.ClearInterrupt()
		}
		if p := recover(); p != nil {
			v = nil
			if e, ok := p.(error); ok {
				err = in.describe(e)
			} else {
				err = fmt.Errorf("javascript runtime panic: %v", p)
			}
		}
	}()
	v, err = run()
	if err != nil {
		return nil, in.describe(err)
	}
	return v, nil
}

// describe says what went wrong in a run.
func (in *instance) describe(err error) error {
	var ie *goja.InterruptedError
	var ex *goja.Exception
	var so *goja.StackOverflowError
	switch {
	case errors.As(err, &ie):
		return fmt.Errorf("%w (%s)", errTimeout, in.lim.Timeout)
	case errors.As(err, &so):
		return fmt.Errorf("call stack deeper than %d (%s)", in.lim.MaxStackDepth, strings.TrimSpace(so.Error()))
	case errors.As(err, &ex):
		return fmt.Errorf("uncaught exception: %s", ex.Error())
	}
	return err
}

func (in *instance) call(args []any) (any, error) {
	jsArgs := make([]goja.Value, len(args))
	for i, a := range args {
		jsArgs[i] = in.vm.ToValue(a)
	}
	return in.guarded(func() (any, error) {
		v, err := in.fn(goja.Undefined(), jsArgs...)
		if err != nil {
			return nil, err
		}
		budget := in.lim.MaxResultBytes
		return fromJS(v, &budget, 0)
	})
}

// maxResultDepth bounds the nesting of a returned value.
const maxResultDepth = 100

var plainObject = reflect.TypeOf(map[string]any(nil))

var errTooLarge = errors.New("result larger than the limit")

// fromJS maps a JavaScript value to the value model, charging its size to
// budget before anything of that size is allocated (goja's Export would
// allocate a sparse array's whole length first).
func fromJS(v goja.Value, budget *int, depth int) (any, error) {
	if depth > maxResultDepth {
		return nil, fmt.Errorf("result nested deeper than %d levels", maxResultDepth)
	}
	charge := func(n int64) error {
		if n > int64(*budget) {
			*budget = -1
			return errTooLarge
		}
		*budget -= int(n)
		return nil
	}
	if v == nil || goja.IsUndefined(v) || goja.IsNull(v) {
		return nil, nil
	}
	obj, ok := v.(*goja.Object)
	if !ok {
		switch x := v.Export().(type) {
		case bool, int64:
			return x, charge(8)
		case float64:
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, fmt.Errorf("result is %v, not a number SQL can hold", x)
			}
			return x, charge(8)
		case string:
			return x, charge(int64(len(x)))
		default:
			return nil, fmt.Errorf("result of type %T cannot be a SQL value (return a number, string, boolean, array, object or null)", x)
		}
	}
	switch cls := obj.ClassName(); cls {
	case "Array":
		n := obj.Get("length").ToInteger()
		if err := charge(8 * n); err != nil {
			return nil, err
		}
		out := make([]any, n)
		for i := range out {
			e, err := fromJS(obj.Get(strconv.Itoa(i)), budget, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = e
		}
		return out, nil
	case "Date":
		t, ok := obj.Export().(time.Time)
		if !ok {
			return nil, errors.New("result is an invalid Date")
		}
		return t, charge(8)
	case "Object":
		if t := obj.ExportType(); t != plainObject {
			return nil, fmt.Errorf("result of type %s cannot be a SQL value (return a number, string, boolean, array, plain object or null)", t)
		}
		keys := obj.Keys()
		out := make(map[string]any, len(keys))
		for _, k := range keys {
			if err := charge(8 + int64(len(k))); err != nil {
				return nil, err
			}
			e, err := fromJS(obj.Get(k), budget, depth+1)
			if err != nil {
				return nil, err
			}
			out[k] = e
		}
		return out, nil
	default:
		return nil, fmt.Errorf("result of class %s cannot be a SQL value (return a number, string, boolean, array, object or null)", cls)
	}
}
