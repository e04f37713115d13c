package conformancetest

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/testwait"
)

// SeqRecorder keeps the sequence numbers that a Reader's remote end
// received, in arrival order. Embedded in a Reader it gives the Reset and
// Seqs methods; the Reader Adds what arrives. It is safe for concurrent
// use.
type SeqRecorder struct {
	mu  sync.Mutex
	got []int64
}

// Add records seq.
func (r *SeqRecorder) Add(seq int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, seq)
}

// Reset forgets what was recorded.
func (r *SeqRecorder) Reset(*testing.T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = nil
}

// Seqs returns what was recorded once there are want numbers or timeout
// has passed, whichever is first.
func (r *SeqRecorder) Seqs(_ *testing.T, want int, timeout time.Duration) []int64 {
	var got []int64
	testwait.Poll(timeout, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		got = slices.Clone(r.got)
		return len(got) >= want
	})
	return got
}
