package guard

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrOutside marks a path outside the allowed folders (test with
// errors.Is).
var ErrOutside = errors.New("outside the allowed folders")

// ErrBlockedAddress marks a dial to an address the network guard refuses.
var ErrBlockedAddress = errors.New("address not allowed")

// Policy is what the daemon's configuration allows.
type Policy struct {
	// AllowExternalFiles is basic.allowExternalFileAccess: true lets a
	// client name any path the daemon's user can reach.
	AllowExternalFiles bool
	// Roots are the folders a path must resolve into when
	// AllowExternalFiles is false (the data folder, which holds uploads).
	Roots []string
	// AllowPrivateNet is basic.enablePrivateNet: true lets outbound HTTP
	// clients reach loopback, private, link-local and other non-public
	// addresses.
	AllowPrivateNet bool
}

// Guard applies a Policy. A nil *Guard allows everything; the daemon
// always builds one from its configuration, tools and unit tests that run
// connectors directly may leave it nil. A Guard is immutable and safe for
// concurrent use.
type Guard struct {
	p     Policy
	roots []string // absolute, symlinks resolved
}

// New builds a Guard. Roots are made absolute and their symlinks resolved
// (a root that does not exist yet is kept as given, made absolute).
func New(p Policy) *Guard {
	g := &Guard{p: p}
	for _, r := range p.Roots {
		if r == "" {
			continue
		}
		abs, err := filepath.Abs(r)
		if err != nil {
			continue
		}
		g.roots = append(g.roots, resolveExisting(abs))
	}
	return g
}

// Unrestricted is a Guard that allows every path and address.
func Unrestricted() *Guard {
	return New(Policy{AllowExternalFiles: true, AllowPrivateNet: true})
}

// Policy returns the policy g applies (the zero-restriction policy for nil).
func (g *Guard) Policy() Policy {
	if g == nil {
		return Policy{AllowExternalFiles: true, AllowPrivateNet: true}
	}
	return g.p
}

// Path checks a path a client named for property prop ("path", "moveTo",
// "file", ...). p must be absolute or is made absolute against the working
// directory; callers resolve their own relative forms first. It resolves
// ".." and the symlinks of every existing part of p and fails with an
// error wrapping ErrOutside, naming prop and p, unless the result is inside
// one of the roots (or external access is allowed).
func (g *Guard) Path(prop, p string) error {
	if g == nil || g.p.AllowExternalFiles {
		return nil
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return fmt.Errorf("%s %q: %w", prop, p, err)
	}
	real := resolveExisting(abs)
	for _, root := range g.roots {
		if within(root, real) {
			return nil
		}
	}
	return fmt.Errorf("%s %q is %w (basic.allowExternalFileAccess is false; allowed: %s)", prop, p, ErrOutside, strings.Join(g.p.Roots, ", "))
}

// within reports whether p is root or below it; both are clean and absolute.
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return false
	}
	return rel == "." || rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// resolveExisting resolves the symlinks of the longest existing prefix of
// the clean absolute path p and appends the rest, so a path whose last
// parts do not exist yet (a file a sink will create) still resolves through
// a symlinked parent. A link loop or unreadable parent leaves that prefix
// unresolved, which can only make the check stricter for it.
func resolveExisting(p string) string {
	p = filepath.Clean(p)
	rest := ""
	cur := p
	for {
		if real, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(real, rest)
		} else if !errors.Is(err, fs.ErrNotExist) {
			if _, statErr := os.Lstat(cur); statErr == nil {
				return filepath.Join(cur, rest)
			}
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}
