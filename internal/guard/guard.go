package guard

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
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
	hint  string   // why paths are confined, for the error
}

// New builds a Guard. Roots are made absolute and their symlinks resolved
// (a root that does not exist yet is kept as given, made absolute).
func New(p Policy) *Guard {
	g := &Guard{p: p, hint: "basic.allowExternalFileAccess is false; "}
	for _, r := range p.Roots {
		if r == "" {
			continue
		}
		abs, err := filepath.Abs(r)
		if err != nil {
			continue
		}
		if real, err := realPath(abs, true); err == nil {
			abs = real
		}
		g.roots = append(g.roots, abs)
	}
	return g
}

// In is a Guard confined to the folder root whatever the configuration
// says: for the files the daemon keeps on a client's behalf below a folder
// of its own (uploads), which never leave it. Its network policy refuses
// private addresses.
func In(root string) *Guard {
	g := New(Policy{Roots: []string{root}})
	g.hint = ""
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
// ".." and the symlinks of every existing part of p, the last one
// included, and fails with an error wrapping ErrOutside, naming prop and
// p, unless the result is inside one of the roots (or external access is
// allowed). Path is the check at create time; the file is opened, created,
// moved or removed with the methods of fs.go, which resolve it again when
// they use it.
func (g *Guard) Path(prop, p string) error {
	_, _, err := g.locate(prop, p, true)
	return err
}

// locate resolves p (the last element too when followLast) and returns
// the root it is in and its path relative to that root. With no
// restriction it returns root "" and p as given.
func (g *Guard) locate(prop, p string, followLast bool) (root, rel string, err error) {
	if g == nil || g.p.AllowExternalFiles {
		return "", p, nil
	}
	abs, err := absolute(p)
	if err != nil {
		return "", "", fmt.Errorf("%s %q: %w", prop, p, err)
	}
	real, err := realPath(abs, followLast)
	if err != nil {
		return "", "", fmt.Errorf("%s %q: %w", prop, p, err)
	}
	for _, r := range g.roots {
		if within(r, real) {
			rel, err := filepath.Rel(r, real)
			if err != nil {
				break
			}
			return r, rel, nil
		}
	}
	return "", "", fmt.Errorf("%s %q is %w (%sallowed: %s)", prop, p, ErrOutside, g.hint, strings.Join(g.p.Roots, ", "))
}

// within reports whether p is root or below it; both are clean and absolute.
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return false
	}
	return rel == "." || rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// absolute makes p absolute against the working directory without
// cleaning it: ".." after a symbolic link must go up from the link's
// target, as the system does, not from the link.
func absolute(p string) (string, error) {
	if filepath.IsAbs(p) {
		return p, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return wd + string(filepath.Separator) + p, nil
}

// maxLinks bounds the symbolic links followed in one path (Linux's 40).
const maxLinks = 40

// errLinkLoop is a path with more than maxLinks symbolic links.
var errLinkLoop = errors.New("too many levels of symbolic links")

// realPath resolves the absolute path p element by element as the system
// does: "." is skipped, ".." goes up from what was resolved so far, and a
// symbolic link, dangling or not, is replaced by its target (relative to
// the link's folder). The first element that does not exist (or cannot be
// read) ends the walk and the rest is appended as written, so a file a
// sink will create resolves through its symlinked folder. With followLast
// false a last element that is a link is kept (remove and rename act on
// the link itself).
func realPath(p string, followLast bool) (string, error) {
	sep := string(filepath.Separator)
	vol := filepath.VolumeName(p)
	elems := strings.Split(p[len(vol):], sep)
	done := vol + sep
	links := 0
	for len(elems) > 0 {
		e := elems[0]
		elems = elems[1:]
		switch e {
		case "", ".":
			continue
		case "..":
			done = filepath.Dir(done)
			continue
		}
		next := filepath.Join(done, e)
		fi, err := os.Lstat(next)
		if err != nil {
			return filepath.Join(append([]string{next}, elems...)...), nil
		}
		if fi.Mode()&fs.ModeSymlink == 0 || !followLast && !slices.ContainsFunc(elems, func(s string) bool { return s != "" && s != "." }) {
			done = next
			continue
		}
		if links++; links > maxLinks {
			return "", errLinkLoop
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			v := filepath.VolumeName(target)
			done, target = v+sep, target[len(v):]
		}
		elems = append(strings.Split(target, sep), elems...)
	}
	return done, nil
}
