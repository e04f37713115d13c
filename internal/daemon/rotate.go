package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/rekuiper/rekuiper/internal/clock"
)

// rotator is an io.WriteCloser over a log file that rotates by size: when a
// write would grow the file past maxSize, file becomes file.1, file.1
// becomes file.2 and so on, keeping at most keep old files. It is safe for
// concurrent use.
type rotator struct {
	path    string
	maxSize int64
	keep    int

	// every rotates a file that has been written to for this long (0:
	// never); clk tells the time.
	every time.Duration
	clk   clock.Clock

	mu     sync.Mutex
	f      *os.File
	size   int64
	opened time.Time
}

// rotateEvery makes r also rotate by age (basic.rotateTime): a write to a
// file opened at least d ago starts a new one.
func (r *rotator) rotateEvery(d time.Duration, clk clock.Clock) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.every, r.clk = d, clk
	r.opened = clk.Now()
}

// newRotator opens (appending to) path, creating its folder.
func newRotator(path string, maxSize int64, keep int) (*rotator, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("open log file: %w", err)
	}
	r := &rotator{path: path, maxSize: maxSize, keep: keep}
	if err := r.open(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *rotator) open() error {
	f, err := os.OpenFile(r.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open log file: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("stat log file: %w", err)
	}
	r.f, r.size = f, st.Size()
	if r.clk != nil {
		r.opened = r.clk.Now()
	}
	return nil
}

// Write appends p, rotating first when p would pass the size limit.
func (r *rotator) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return 0, os.ErrClosed
	}
	bySize := r.maxSize > 0 && r.size+int64(len(p)) > r.maxSize
	byAge := r.every > 0 && !r.clk.Now().Before(r.opened.Add(r.every))
	if r.size > 0 && (bySize || byAge) {
		if err := r.rotate(); err != nil {
			return 0, err
		}
	}
	n, err := r.f.Write(p)
	r.size += int64(n)
	return n, err
}

func (r *rotator) rotate() error {
	if err := r.f.Close(); err != nil {
		return fmt.Errorf("rotate log file: %w", err)
	}
	r.f = nil
	if r.keep <= 0 {
		if err := os.Remove(r.path); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("rotate log file: %w", err)
		}
		return r.open()
	}
	os.Remove(fmt.Sprintf("%s.%d", r.path, r.keep)) //nolint:errcheck // may not exist
	for i := r.keep - 1; i >= 1; i-- {
		os.Rename(fmt.Sprintf("%s.%d", r.path, i), fmt.Sprintf("%s.%d", r.path, i+1)) //nolint:errcheck // may not exist
	}
	if err := os.Rename(r.path, r.path+".1"); err != nil {
		return fmt.Errorf("rotate log file: %w", err)
	}
	return r.open()
}

// Close closes the file; later writes fail.
func (r *rotator) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f = nil
	return err
}
