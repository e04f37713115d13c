// Package panics contains panics of the goroutines that run rule code
// (sources, operators, sinks, the sink cache, connector callbacks): a
// recovered panic becomes an *Error that the goroutine's owner reports to
// the rule it belongs to, which then stops with "panic: …" in its status,
// while the process keeps running.
package panics

import (
	"errors"
	"fmt"
	"runtime/debug"
)

// Error is a recovered panic.
type Error struct {
	// Where names the goroutine's job ("operator project", "sink mqtt").
	Where string
	// Value is what was passed to panic.
	Value any
	// Stack is the goroutine's stack at the panic, for the log.
	Stack []byte
}

func (e *Error) Error() string {
	if e.Where == "" {
		return fmt.Sprintf("panic: %v", e.Value)
	}
	return fmt.Sprintf("panic: %s: %v", e.Where, e.Value)
}

// Unwrap exposes a panic value that is an error (a runtime error, say).
func (e *Error) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// Is reports whether err is or wraps a recovered panic.
func Is(err error) bool {
	var pe *Error
	return errors.As(err, &pe)
}

// Catch recovers a panic and hands it to report as an *Error. Use it only
// as a deferred call: defer panics.Catch("sink mqtt", onPanic). It does
// nothing when the goroutine is not panicking. A panic raised by Rethrow
// is reported as it was first recovered (where and stack of its origin).
func Catch(where string, report func(*Error)) {
	v := recover()
	if v == nil {
		return
	}
	if e, ok := v.(*Error); ok {
		report(e)
		return
	}
	report(&Error{Where: where, Value: v, Stack: debug.Stack()})
}

// Rethrow panics with the recovered panic that err is or wraps, if any.
// A connector that recovers a panic on a goroutine of its own (a timer, a
// client library's callback) returns it from its next call; the rule
// goroutine that made the call rethrows it, so that the rule stops with
// it as if the panic had happened there.
func Rethrow(err error) {
	var pe *Error
	if errors.As(err, &pe) {
		panic(pe)
	}
}

// Go runs f on a new goroutine whose panic, if any, goes to report.
func Go(where string, report func(*Error), f func()) {
	go func() {
		defer Catch(where, report)
		f()
	}()
}

// Call runs f on the calling goroutine and returns its panic as an *Error
// (nil when f returned normally).
func Call(where string, f func()) (err *Error) {
	defer Catch(where, func(e *Error) { err = e })
	f()
	return nil
}
