package panics

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestCallRecoversWithStack(t *testing.T) {
	var arr []int
	i := 3
	err := Call("operator project", func() { _ = arr[i] })
	if err == nil {
		t.Fatal("an index out of range was not recovered")
	}
	if !strings.HasPrefix(err.Error(), "panic: operator project: runtime error: index out of range") {
		t.Errorf("error %q", err)
	}
	if !strings.Contains(string(err.Stack), "panics_test.go") {
		t.Errorf("stack does not show the panicking function:\n%s", err.Stack)
	}
	var re interface{ RuntimeError() }
	if !errors.As(err, &re) {
		t.Error("a runtime error panic does not unwrap to the runtime error")
	}
	if !Is(err) || Is(errors.New("x")) {
		t.Error("Is does not tell recovered panics from other errors")
	}
	if Call("x", func() {}) != nil {
		t.Error("Call reported a panic for a normal return")
	}
}

func TestGoReports(t *testing.T) {
	got := make(chan *Error, 1)
	Go("sink x", func(e *Error) { got <- e }, func() { panic("boom") })
	if e := <-got; e.Error() != "panic: sink x: boom" {
		t.Errorf("error %q", e)
	}
}

func TestRethrowKeepsTheOrigin(t *testing.T) {
	origin := Call("memory table follow", func() { panic("boom") })
	wrapped := fmt.Errorf("lookup table t: %w", origin)
	got := Call("operator lookup", func() { Rethrow(wrapped) })
	if got != origin {
		t.Fatalf("rethrown panic reported as %v; want the original %v", got, origin)
	}
	if Call("operator lookup", func() { Rethrow(errors.New("plain")) }) != nil {
		t.Error("Rethrow panicked for an error that is not a recovered panic")
	}
	Rethrow(nil)
}
