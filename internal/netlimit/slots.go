package netlimit

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// Refusals (test with errors.Is); the errors name the limit. ErrBusy is
// the daemon's whole capacity taken (503), ErrTooMany one client or key
// asking for more than its share (429).
var (
	ErrBusy    = errors.New("server busy")
	ErrTooMany = errors.New("too many requests")
)

// Slots caps long-lived holders (event streams): Total at once, PerKey of
// them for one key (a rule). It is safe for concurrent use.
type Slots struct {
	what          string // "event streams", in errors
	total, perKey int
	totalKey      string // the settings' names, in errors
	perKeyKey     string

	mu    sync.Mutex
	n     int
	byKey map[string]int

	refused atomic.Int64
}

// NewSlots returns caps of total holders and perKey per key (values below
// 1 count as 1). totalSetting and perKeySetting name the settings in the
// refusal.
func NewSlots(what string, total int, totalSetting string, perKey int, perKeySetting string) *Slots {
	return &Slots{
		what: what, total: max(total, 1), perKey: max(perKey, 1),
		totalKey: totalSetting, perKeyKey: perKeySetting, byKey: map[string]int{},
	}
}

// Acquire takes a slot for key; release gives it back (once). The error
// wraps ErrBusy and names the limit reached.
func (s *Slots) Acquire(key string) (release func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.n >= s.total:
		s.refused.Add(1)
		return nil, fmt.Errorf("%w: %d %s open, as many as %s allows", ErrBusy, s.n, s.what, s.totalKey)
	case s.byKey[key] >= s.perKey:
		s.refused.Add(1)
		return nil, fmt.Errorf("%w: %d %s open for %s, as many as %s allows", ErrTooMany, s.byKey[key], s.what, key, s.perKeyKey)
	}
	s.n++
	s.byKey[key]++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.n--
			if s.byKey[key]--; s.byKey[key] == 0 {
				delete(s.byKey, key)
			}
		})
	}, nil
}

// Open returns the number of slots held now; Refused the refusals so far.
func (s *Slots) Open() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// Refused returns the number of refused acquisitions so far.
func (s *Slots) Refused() int64 { return s.refused.Load() }
