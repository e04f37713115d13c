package config

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"sync"
	"time"
)

// ConfKeyFiles loads confKey files (LoadConfKeys) for callers that read
// the same file often, such as every rule validated or started: a file is
// parsed again only when its size or modification time changed (or it
// appeared or went away) since the last load, so an edit on disk is seen
// by the next load, at the cost of one stat. The zero value is ready to
// use and safe for concurrent use.
//
// The returned ConfKeys are shared between callers and must not be
// modified; ConfKeys.Resolve returns a new top-level map to overlay.
type ConfKeyFiles struct {
	mu    sync.Mutex
	files map[confKeyFile]loadedConfKeys
}

// confKeyFile identifies one load: the file and the environment entries
// that override it.
type confKeyFile struct {
	path      string
	overrides string
}

type loadedConfKeys struct {
	size  int64
	mtime time.Time
	found bool
	keys  ConfKeys
}

// Load returns LoadConfKeys(file, environ), from the cache when file is
// unchanged. Errors (bad YAML) are not cached: the file is read again
// next time.
func (c *ConfKeyFiles) Load(file string, environ []string) (ConfKeys, error) {
	var cur loadedConfKeys
	fi, err := os.Stat(file)
	switch {
	case err == nil:
		cur = loadedConfKeys{size: fi.Size(), mtime: fi.ModTime(), found: true}
	case !errors.Is(err, fs.ErrNotExist):
		_, _, lerr := LoadConfKeys(file, environ) // reports the reason with the file named
		if lerr == nil {
			lerr = err
		}
		return nil, lerr
	}
	key := confKeyFile{path: file, overrides: fileOverrides(file, environ)}
	c.mu.Lock()
	old, ok := c.files[key]
	c.mu.Unlock()
	if ok && old.found == cur.found && old.size == cur.size && old.mtime.Equal(cur.mtime) {
		return old.keys, nil
	}
	keys, _, err := LoadConfKeys(file, environ)
	if err != nil {
		return nil, err
	}
	cur.keys = keys
	c.mu.Lock()
	if c.files == nil {
		c.files = map[confKeyFile]loadedConfKeys{}
	}
	c.files[key] = cur
	c.mu.Unlock()
	return keys, nil
}

// fileOverrides joins (NUL-separated) the entries of environ that
// LoadConfKeys applies to file; usually there are none.
func fileOverrides(file string, environ []string) string {
	prefix := filePrefix(file) + "__"
	var b []byte
	for _, kv := range environ {
		if strings.HasPrefix(kv, prefix) {
			b = append(b, kv...)
			b = append(b, 0)
		}
	}
	return string(b)
}
