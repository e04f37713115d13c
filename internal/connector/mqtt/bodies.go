package mqtt

import (
	"sync/atomic"

	"github.com/rekuiper/rekuiper/internal/row"
)

// bodyArena hands out the bodies of the PUBLISH packets a 3.1.1 reader
// reads, from one reusable chunk, so that a busy connection allocates no
// memory per message. A chunk is reused from its start once every message
// read from it since the last reuse was handed to push subscriptions
// that report nothing of it referenced any more (stream.PayloadReleaser);
// when a message may still be referenced (queued for Read, or a push that
// did not free it), kept is set, the chunk is left to the garbage
// collector and the next skipAfterKept flushes allocate bodies one by one
// (a consumer that keeps payloads would otherwise pin a whole chunk per
// message it keeps).
//
// The reader that reads from the arena takes bodies and settles it; kept
// is set by whoever learns a message is kept (the same reader, or the
// reader of a newer transport flushing a batch that holds messages of an
// older one).
type bodyArena struct {
	chunk []byte
	off   int
	skip  int // flushes left during which bodies are allocated one by one
	kept  atomic.Bool
}

const (
	bodyChunk     = 64 << 10
	bodyArenaMax  = 4 << 10 // larger bodies are allocated one by one
	skipAfterKept = 64
)

// take returns a body of n bytes and whether it lies in the arena's chunk.
func (a *bodyArena) take(n int) ([]byte, bool) {
	if a.skip > 0 || n > bodyArenaMax {
		return make([]byte, n), false
	}
	if len(a.chunk)-a.off < n {
		a.chunk, a.off = make([]byte, bodyChunk), 0
	}
	b := a.chunk[a.off : a.off+n : a.off+n]
	a.off += n
	return b, true
}

// settle is called by the reader after a flush that handed every message
// read so far to its subscriptions: the chunk is reused when nothing of it
// is kept and reuse is allowed (the transport is live), abandoned
// otherwise.
func (a *bodyArena) settle(reuse bool) {
	kept := a.kept.Swap(false)
	switch {
	case kept:
		a.chunk, a.off, a.skip = nil, 0, skipAfterKept
	case a.skip > 0:
		a.skip--
	case !reuse:
		a.chunk, a.off = nil, 0
	default:
		if row.PoisonRecycled {
			// Race and arenapoison builds: a reader of a reused body
			// sees garbage rather than a plausible older message.
			for i := range a.chunk[:a.off] {
				a.chunk[i] = 0xEE
			}
		}
		a.off = 0
	}
}

// keep marks the arena's current chunk as possibly referenced.
func (a *bodyArena) keep() {
	if a != nil {
		a.kept.Store(true)
	}
}
