// Package guard holds the checks that stand between what a client can name
// and what the daemon touches on its behalf: names that become folder
// names, paths a connector reads, writes, moves or deletes, and network
// addresses an outbound HTTP client dials. Every REST route, import, CLI
// command and connector uses these checks, so there is one answer to "is
// this allowed" in the whole engine.
package guard

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrName marks an invalid name (test with errors.Is).
var ErrName = errors.New("invalid name")

// MaxNameLen is the longest name accepted, in bytes.
const MaxNameLen = 255

// Name checks the name of a stream, table, rule, connection, confKey type or
// key, schema or upload: non-empty, at most MaxNameLen bytes, not "." or
// "..", and without whitespace, control characters or any of / \ # ? %
// (separators of file paths and URLs). Other punctuation (- _ . : @ and
// the like) and non-ASCII letters are allowed, as eKuiper allows them; a
// name must be valid UTF-8 and must not hold U+FFFD, the replacement
// character a JSON decoder leaves for invalid bytes.
// what names the kind of name in the error ("stream", "rule id", ...).
func Name(what, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: %s is required", ErrName, what)
	case len(name) > MaxNameLen:
		return fmt.Errorf("%w: %s %.20q...: longer than %d bytes", ErrName, what, name, MaxNameLen)
	case name == "." || name == "..":
		return fmt.Errorf("%w: %s %q is not allowed", ErrName, what, name)
	case !utf8.ValidString(name) || strings.ContainsRune(name, utf8.RuneError):
		// U+FFFD is what a JSON decoder leaves of invalid UTF-8.
		return fmt.Errorf("%w: %s %q is not valid UTF-8", ErrName, what, name)
	}
	for _, r := range name {
		if unicode.IsSpace(r) || unicode.IsControl(r) || strings.ContainsRune(`/\#?%`, r) {
			return fmt.Errorf("%w: %s %q contains invalid characters: %q is not allowed", ErrName, what, name, r)
		}
	}
	return nil
}

// PathElem returns name as one element of a file path that stays inside its
// folder. A valid name (see Name) is returned as is, so folders of valid
// names keep their plain names; any other name is percent-encoded in full
// (every byte but ASCII letters, digits, - and _), which gives a string
// containing '%' and therefore never equal to a valid name or to "." or
// "..", and without separators.
func PathElem(name string) string {
	if Name("name", name) == nil {
		return name
	}
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	if b.Len() == 0 {
		return "%"
	}
	return b.String()
}
