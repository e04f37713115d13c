package stream

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Manager shares subscriptions between rules by key: rules at qos 0 on the
// same stream with the same source properties read one connection and
// decode each message once.
type Manager struct {
	mu   sync.Mutex
	subs map[string]*shared
}

type shared struct {
	sub  *Subscription
	refs int
}

// NewManager returns an empty manager.
func NewManager() *Manager { return &Manager{subs: map[string]*shared{}} }

// Acquire returns the subscription for key, creating and starting it with
// create on first use. release drops the caller's reference; the last
// release drains the subscription (Subscription.Drain) and stops it. The
// caller detaches its consumer after release, so that it gets what the
// drain delivers.
func (m *Manager) Acquire(key string, create func() (*Subscription, error)) (*Subscription, func(ctx context.Context) error, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	sh, ok := m.subs[key]
	// A subscription whose bounded source already ended has nothing left
	// for a new consumer: it gets a subscription of its own, which reads
	// the source again. The ended one stays with the rules that hold it.
	if !ok || sh.sub.Ended() {
		sub, err := create()
		if err != nil {
			return nil, nil, err
		}
		sh = &shared{sub: sub}
		m.subs[key] = sh
	}
	sh.refs++
	var once sync.Once
	release := func(ctx context.Context) error {
		var err error
		once.Do(func() {
			m.mu.Lock()
			sh.refs--
			last := sh.refs == 0
			if last && m.subs[key] == sh {
				delete(m.subs, key)
			}
			m.mu.Unlock()
			if last {
				// The consumers are still attached: what the
				// source drains reaches them.
				dctx, cancel := drainContext(ctx)
				err = sh.sub.Drain(dctx)
				cancel()
				err = errors.Join(err, sh.sub.Stop(ctx))
			}
		})
		return err
	}
	return sh.sub, release, nil
}

// Len is the number of live subscriptions.
func (m *Manager) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.subs)
}

// maxDrain bounds a drain when the stop has no deadline.
const maxDrain = 10 * time.Second

// drainContext leaves Stop half of the time ctx gives, and bounds a drain
// without a deadline by maxDrain.
func drainContext(ctx context.Context) (context.Context, context.CancelFunc) {
	d := maxDrain
	if dl, ok := ctx.Deadline(); ok {
		d = time.Until(dl) / 2
	}
	return context.WithTimeout(ctx, d)
}
