package sinkcache

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/panics"
)

// replayLocked replays one record under sendMu; the deferred unlock keeps
// Write usable if the sink panics.
func (c *Cache) replayLocked() (bool, error) {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	return c.replayOne(c.ctx)
}

// panicked reports a panic of the replay goroutine: replays stop, the rule
// is told.
func (c *Cache) panicked(e *panics.Error) {
	c.log.Error("sink cache replay panicked", "err", e.Error(), "stack", string(e.Stack))
	c.mu.Lock()
	c.lastErr = e.Error()
	c.mu.Unlock()
	if c.deps.OnPanic != nil {
		c.deps.OnPanic(e)
	}
}

// run is the replay goroutine, started by Connect and stopped by Close. It
// connects the sinks if Connect could not, then replays the oldest cached
// record whenever there is one: back to back, or one per ResendInterval
// when it is set; after a retryable failure it waits ResendInterval (or
// RetryFloor when that is 0) and tries the same record again.
func (c *Cache) run() {
	defer close(c.done)
	defer panics.Catch("sink cache", c.panicked)
	for {
		if !c.ensureConnected() {
			if !c.sleep(c.cfg.retryDelay()) {
				return
			}
			continue
		}
		c.mu.Lock()
		if c.degraded && !c.closed {
			c.diskUsable()
		}
		pending := c.tail > c.head
		c.mu.Unlock()
		attempted := false
		var err error
		if pending {
			attempted, err = c.replayLocked()
		}
		var wait time.Duration
		switch {
		case !attempted:
			select {
			case <-c.stop:
				return
			case <-c.kick:
			}
			continue
		case err != nil:
			wait = c.cfg.retryDelay()
		default:
			wait = c.cfg.ResendInterval
		}
		if wait > 0 {
			if !c.sleep(wait) {
				return
			}
			continue
		}
		select {
		case <-c.stop:
			return
		default:
		}
	}
}

// ensureConnected connects the sinks if they are not; it reports whether
// they are.
func (c *Cache) ensureConnected() bool {
	c.mu.Lock()
	connected := c.connected
	c.mu.Unlock()
	if connected {
		return true
	}
	err := c.connectSinks(c.ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.lastErr = fmt.Sprintf("connect sink: %v", err)
		return false
	}
	c.connected = true
	return true
}

// sleep waits d on the cache's clock; it returns false when the cache is
// stopping.
func (c *Cache) sleep(d time.Duration) bool {
	fired := make(chan struct{}, 1)
	t := c.clk.AfterFunc(d, func() { fired <- struct{}{} })
	select {
	case <-c.stop:
		t.Stop()
		return false
	case <-fired:
		return true
	}
}

// replayOne sends the oldest cached record. The caller holds sendMu. It
// reports whether there was a record, and returns the sink's error only
// when it is retryable (the record stays); a permanent error drops the
// record, counted in Stats.Failed.
func (c *Cache) replayOne(ctx context.Context) (bool, error) {
	c.mu.Lock()
	e, ok := c.peek()
	closed := c.closed
	c.mu.Unlock()
	if !ok || closed {
		return false, nil
	}
	out, err := c.mark(e.msg)
	if err != nil {
		c.mu.Lock()
		c.removeHead()
		c.failed++
		c.lastErr = err.Error()
		c.mu.Unlock()
		return true, nil
	}
	target := c.inner
	if c.cfg.ResendAlterQueue && c.alt != nil {
		target = c.alt
	}
	err = target.Write(ctx, out)
	panics.Rethrow(err) // the sink recovered a panic of its own goroutine
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case err == nil:
		c.removeHead()
		c.replayed++
		return true, nil
	case errors.Is(err, api.ErrRetryable) || ctx.Err() != nil:
		c.lastErr = err.Error()
		return true, err
	default:
		c.removeHead()
		c.failed++
		c.lastErr = err.Error()
		return true, nil
	}
}

// mark returns the replayed form of msg: Resent set, the indicator field
// added to a copy of every row, then Deps.Reshape applied.
func (c *Cache) mark(msg *api.SinkMessage) (*api.SinkMessage, error) {
	out := *msg
	out.Resent = true
	field := c.cfg.ResendIndicatorField
	if field == "" {
		return &out, nil
	}
	if msg.Rows != nil {
		out.Rows = make([]map[string]any, len(msg.Rows))
		for i, row := range msg.Rows {
			r := make(map[string]any, len(row)+1)
			maps.Copy(r, row)
			r[field] = true
			out.Rows[i] = r
		}
	}
	if c.deps.Reshape == nil {
		return &out, nil
	}
	shaped, err := c.deps.Reshape(&out)
	if err != nil {
		return nil, fmt.Errorf("reshape replayed record: %w", err)
	}
	shaped.Resent = true
	return shaped, nil
}
