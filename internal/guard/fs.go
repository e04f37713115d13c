package guard

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The methods below open, create, list, move and remove a path a client
// named for property prop, and are the only way the daemon touches such a
// path. Each resolves the path as Path does, refuses it (wrapping
// ErrOutside) unless it is inside a root, and then acts on it through an
// os.Root opened on that root, so a folder of the path swapped for a
// symbolic link to somewhere else between the check and the use makes the
// call fail instead of reaching outside (no check-then-use race). A nil
// Guard, or one that allows external files, acts on the path as given.
//
// Errors keep the path the caller gave, not the path inside the root.

// act runs op on the path p relative to its root, or on p itself
// without restriction (r nil). followLast false keeps a last element that
// is a symbolic link (remove and rename act on the link).
func (g *Guard) act(prop, p string, followLast bool, op func(r *os.Root, name string) error) error {
	root, rel, err := g.locate(prop, p, followLast)
	if err != nil {
		return err
	}
	if root == "" {
		return op(nil, p)
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return err
	}
	defer r.Close()
	if err := op(r, rel); err != nil {
		// A part changed after locate and now leaves the root: name the
		// problem as locate would.
		if _, _, lerr := g.locate(prop, p, followLast); lerr != nil {
			return lerr
		}
		var pe *fs.PathError
		if errors.As(err, &pe) {
			pe.Path = p
		}
		return err
	}
	return nil
}

// use is act for an operation with a result: plain on the path as given
// without restriction, inRoot on the path below the root otherwise.
func use[T any](g *Guard, prop, p string, followLast bool, plain func(string) (T, error), inRoot func(*os.Root, string) (T, error)) (T, error) {
	var v T
	err := g.act(prop, p, followLast, func(r *os.Root, name string) (err error) {
		if r == nil {
			v, err = plain(name)
		} else {
			v, err = inRoot(r, name)
		}
		return err
	})
	return v, err
}

// OpenFile is os.OpenFile for a client-named path.
func (g *Guard) OpenFile(prop, p string, flag int, perm fs.FileMode) (*os.File, error) {
	return use(g, prop, p, true,
		func(name string) (*os.File, error) { return os.OpenFile(name, flag, perm) },
		func(r *os.Root, name string) (*os.File, error) { return r.OpenFile(name, flag, perm) })
}

// ReadFile is os.ReadFile for a client-named path.
func (g *Guard) ReadFile(prop, p string) ([]byte, error) {
	return use(g, prop, p, true, os.ReadFile, (*os.Root).ReadFile)
}

// Stat is os.Stat for a client-named path.
func (g *Guard) Stat(prop, p string) (fs.FileInfo, error) {
	return use(g, prop, p, true, os.Stat, (*os.Root).Stat)
}

// ReadDir is os.ReadDir for a client-named folder.
func (g *Guard) ReadDir(prop, p string) ([]fs.DirEntry, error) {
	f, err := g.OpenFile(prop, p, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return ents, nil
}

// MkdirAll is os.MkdirAll for a client-named folder.
func (g *Guard) MkdirAll(prop, p string, perm fs.FileMode) error {
	return g.act(prop, p, true, func(r *os.Root, name string) error {
		if r == nil {
			return os.MkdirAll(name, perm)
		}
		return r.MkdirAll(name, perm)
	})
}

// Remove is os.Remove for a client-named path: a last element that is a
// symbolic link is removed itself, as os.Remove does.
func (g *Guard) Remove(prop, p string) error {
	return g.act(prop, p, false, func(r *os.Root, name string) error {
		if r == nil {
			return os.Remove(name)
		}
		return r.Remove(name)
	})
}

// Rename is os.Rename from the client-named path oldp (property prop) to
// newp (property newProp). Both must be in the same root; a last element
// that is a symbolic link is moved or replaced itself, as os.Rename does.
func (g *Guard) Rename(prop, oldp, newProp, newp string) error {
	if g == nil || g.p.AllowExternalFiles {
		return os.Rename(oldp, newp)
	}
	newRoot, newRel, err := g.locate(newProp, newp, false)
	if err != nil {
		return err
	}
	return g.act(prop, oldp, false, func(r *os.Root, name string) error {
		if r.Name() != newRoot {
			return fmt.Errorf("rename %s to %s: %s and %s are in different folders", oldp, newp, prop, newProp)
		}
		if err := r.Rename(name, newRel); err != nil {
			if _, _, lerr := g.locate(newProp, newp, false); lerr != nil {
				return lerr
			}
			return &os.LinkError{Op: "rename", Old: oldp, New: newp, Err: errors.Unwrap(err)}
		}
		return nil
	})
}

// CreateTemp is os.CreateTemp in the client-named folder dir: a new file
// named pattern with its last "*" replaced by a random string, opened for
// reading and writing. Name() of the file is its path below dir.
func (g *Guard) CreateTemp(prop, dir, pattern string) (*os.File, error) {
	prefix, suffix := pattern, ""
	for i := len(pattern) - 1; i >= 0; i-- {
		if pattern[i] == '*' {
			prefix, suffix = pattern[:i], pattern[i+1:]
			break
		}
	}
	for try := 0; ; try++ {
		var b [8]byte
		_, _ = rand.Read(b[:])
		p := filepath.Join(dir, prefix+hex.EncodeToString(b[:])+suffix)
		f, err := g.OpenFile(prop, p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) && try < 100 {
			continue
		}
		return f, err
	}
}
