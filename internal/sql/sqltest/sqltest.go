// Package sqltest holds helpers for the tests of the SQL parser and
// planner.
package sqltest

import (
	"regexp"
	"strings"
	"testing"

	"github.com/rekuiper/rekuiper/internal/sql/scanner"
	"github.com/rekuiper/rekuiper/internal/sql/token"
)

// errorMarker is the expectation written inline: /* ERROR "message part" */
// just before the token the error must be reported at.
var errorMarker = regexp.MustCompile(`/\* ERROR "([^"]*)" \*/`)

// WantError is the error a statement's ERROR marker expects.
type WantError struct {
	Msg string    // a part of the message
	Pos token.Pos // the first token after the marker
}

// Marker returns the error src's ERROR marker expects; src without a
// marker fails the test.
func Marker(t testing.TB, src string) WantError {
	t.Helper()
	m := errorMarker.FindStringSubmatchIndex(src)
	if m == nil {
		t.Fatalf("no ERROR marker in %q", src)
	}
	return WantError{Msg: src[m[2]:m[3]], Pos: tokenAfter(src, m[1])}
}

// Check checks an error's message and position against w; err is the
// error as it prints.
func (w WantError) Check(t testing.TB, msg string, pos token.Pos, err error) {
	t.Helper()
	if !strings.Contains(msg, w.Msg) {
		t.Errorf("message %q does not contain %q", msg, w.Msg)
	}
	if pos != w.Pos {
		t.Errorf("error at %v (offset %d), want %v (offset %d): %v", pos, pos.Offset, w.Pos, w.Pos.Offset, err)
	}
}

// tokenAfter returns the position of the first token at or after offset.
func tokenAfter(src string, offset int) token.Pos {
	sc := scanner.New(src)
	for {
		it := sc.Scan()
		if it.Pos.Offset >= offset || it.Tok == token.EOF {
			return it.Pos
		}
	}
}
