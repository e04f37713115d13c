package netlimit

import (
	"net"
	"sync"
	"time"
)

// maxTracked bounds the addresses a Rate remembers; past it the buckets
// that are full again are forgotten, and if none is, the whole table.
const maxTracked = 10_000

// Rate is a token bucket per remote address: Burst requests at once, then
// PerSecond a second. It is safe for concurrent use.
type Rate struct {
	perSecond float64
	burst     float64
	now       func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

// NewRate returns a limiter of perSecond requests a second per address
// with bursts of burst (at least 1). now is the clock (nil: time.Now).
func NewRate(perSecond float64, burst int, now func() time.Time) *Rate {
	if now == nil {
		now = time.Now
	}
	return &Rate{perSecond: perSecond, burst: float64(max(burst, 1)), now: now, buckets: map[string]*bucket{}}
}

// Allow takes a token of addr's bucket; false when it is empty.
func (r *Rate) Allow(addr string) bool {
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.buckets[addr]
	if b == nil {
		if len(r.buckets) >= maxTracked {
			r.forgetFull(now)
		}
		b = &bucket{tokens: r.burst, at: now}
		r.buckets[addr] = b
	}
	b.tokens = min(r.burst, b.tokens+now.Sub(b.at).Seconds()*r.perSecond)
	b.at = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// forgetFull drops the buckets that have refilled (r.mu held): they would
// allow a burst anyway.
func (r *Rate) forgetFull(now time.Time) {
	for a, b := range r.buckets {
		if b.tokens+now.Sub(b.at).Seconds()*r.perSecond >= r.burst {
			delete(r.buckets, a)
		}
	}
	if len(r.buckets) >= maxTracked {
		clear(r.buckets)
	}
}

// AddrOf returns the IP of a "host:port" remote address (http.Request's
// RemoteAddr), the whole string when it has no port.
func AddrOf(remote string) string {
	if h, _, err := net.SplitHostPort(remote); err == nil {
		return h
	}
	return remote
}
