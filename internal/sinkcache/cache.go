// Package sinkcache is the durable retry buffer that wraps any sink: when
// the sink fails with a retryable error, records are kept, in order and on
// disk, and replayed once the sink works again, across restarts too.
//
// Layers of one cache: every accepted record is appended to a segment log
// under Config.Dir (write-through, so nothing accepted lives only in memory
// while the disk works); the oldest MemoryCacheThreshold records are also
// kept decoded in memory so replay rarely reads the disk. When the disk
// fails, new records are held in memory only until it works again.
package sinkcache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/panics"
)

// ErrClosed is returned by Write after Close.
var ErrClosed = errors.New("sink cache closed")

// Deps are the collaborators of a Cache.
type Deps struct {
	// Clock paces replays, periodic fsyncs and disk retries; nil means the
	// wall clock.
	Clock clock.Clock
	// Logger receives warnings (disk failures, torn segments); nil discards.
	Logger *slog.Logger
	// Reshape, when set, is applied to every replayed record after the
	// resend indicator field was added to its rows, so the engine can
	// rebuild Payload from Rows. An error drops the record as permanent.
	Reshape func(*api.SinkMessage) (*api.SinkMessage, error)
	// Alternate receives replays instead of the inner sink when
	// ResendAlterQueue is on; the engine builds it with ResendDestination
	// applied. The Cache connects and closes it with the inner sink.
	Alternate api.Sink
	// OnPanic is told when the replay goroutine panicked (in the sink's
	// Write, say). The panic is logged with its stack and replays stop; the
	// owner is expected to stop the rule.
	OnPanic func(*panics.Error)
}

// Stats is a snapshot of a cache's counters and gauges.
type Stats struct {
	// Delivered counts records the sink took on their first try, without
	// going through the cache (replays are in Replayed).
	Delivered int64
	// Cached counts records accepted into the cache since Wrap.
	Cached int64
	// Replayed counts records delivered from the cache.
	Replayed int64
	// Dropped counts records discarded by the drop policy, refused because
	// the disk failed and the memory tier was full, or lost to a corrupt
	// segment.
	Dropped int64
	// Failed counts permanent sink errors (live or replay); such records are
	// never retried.
	Failed int64
	// Length is the number of records cached now.
	Length int
	// MemoryLength is the number of cached records held in memory.
	MemoryLength int
	// DiskLength is the number of cached records on disk (records held in
	// both places count in both).
	DiskLength int
	// DiskBytes is the size of the segment files.
	DiskBytes int64
	// OldestAge is how long ago the oldest cached record was accepted.
	OldestAge time.Duration
	// DiskError is the last disk failure while the cache runs from memory
	// only; empty when the disk works.
	DiskError string
	// LastError is the last sink or cache error.
	LastError string
	// Destination is Config.ResendDestination.
	Destination string
	// Connected reports whether the inner sink is connected.
	Connected bool
}

// flusher is implemented by sinks that can wait for outstanding
// acknowledgements (MQTT PUBACKs, Kafka acks).
type flusher interface {
	Flush(ctx context.Context) error
}

// Cache is an api.Sink that wraps another one. Write, Flush and Close may
// be called from any goroutine; the engine calls Write from one.
//
// Goroutines: Connect starts one replay goroutine owned by the Cache; it
// connects the inner sink if Connect could not, and replays the backlog.
// Close stops it. Deliveries to the inner sink (live and replayed) are
// serialised, so the inner sink sees one Write at a time.
type Cache struct {
	inner api.Sink
	alt   api.Sink
	cfg   Config
	deps  Deps
	clk   clock.Clock
	log   *slog.Logger

	// sendMu serialises deliveries and every change of the backlog's head,
	// so a record peeked for replay is still the oldest when it succeeds.
	sendMu sync.Mutex

	mu        sync.Mutex // guards everything below
	disk      *segLog
	head      uint64 // oldest record still owed to the sink
	tail      uint64 // sequence number of the next accepted record
	durable   uint64 // records before durable (and >= head) are on disk
	frontEnd  uint64 // front holds [head, frontEnd)
	front     []entry
	back      []entry // memory-only records [durable, tail) while the disk fails
	memCap    int
	connected bool
	started   bool
	closed    bool
	degraded  bool
	diskErr   string
	lastTry   time.Time
	lastErr   string
	delivered int64
	cached    int64
	replayed  int64
	dropped   int64
	failed    int64
	syncTimer clock.Timer

	ctx    context.Context // covers the replay goroutine's sink calls
	cancel context.CancelFunc
	kick   chan struct{}
	stop   chan struct{}
	done   chan struct{}
}

var _ api.Sink = (*Cache)(nil)

// Wrap validates cfg and returns a Cache around inner. With EnableCache it
// opens Config.Dir, cuts torn segment tails left by a crash and loads the
// backlog; replay starts when Connect is called, without waiting for new
// traffic. With CleanCacheAtStop, leftovers in Dir are deleted instead (as
// eKuiper does at rule start). Close releases what Wrap opened.
func Wrap(inner api.Sink, cfg Config, deps Deps) (*Cache, error) {
	if inner == nil {
		return nil, errors.New("wrap sink: nil sink")
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("sink cache config: %w", err)
	}
	cfg = cfg.withDefaults()
	c := &Cache{
		inner: inner, alt: deps.Alternate, cfg: cfg, deps: deps,
		clk: deps.Clock, log: deps.Logger, memCap: cfg.MemoryCacheThreshold,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
	}
	if c.clk == nil {
		c.clk = clock.Wall{}
	}
	if c.log == nil {
		c.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	if !cfg.EnableCache {
		return c, nil
	}
	if cfg.CleanCacheAtStop {
		if err := os.RemoveAll(cfg.Dir); err != nil {
			return nil, fmt.Errorf("clean sink cache: %w", err)
		}
	}
	disk, info, err := openLog(cfg.Dir, cfg.Sync, cfg.BufferPageSize)
	if err != nil {
		return nil, fmt.Errorf("open sink cache: %w", err)
	}
	c.disk = disk
	head := info.head
	if first, ok := disk.firstFrom(head); ok {
		head = first
	} else {
		head = max(head, info.tail)
	}
	c.head, c.frontEnd = head, head
	c.tail = max(info.tail, head)
	c.durable = c.tail
	if info.torn > 0 {
		c.lastErr = fmt.Sprintf("open sink cache: cut %d torn segment tails", info.torn)
		c.log.Warn("sink cache: cut torn segment tails", "dir", cfg.Dir, "segments", info.torn)
	}
	c.mu.Lock()
	c.afterHeadMove()
	c.mu.Unlock()
	return c, nil
}

// Connect connects the inner sink (and Deps.Alternate) and starts the replay
// goroutine. ctx covers only this call. A retryable connect error is not
// returned: the cache accepts records meanwhile and the replay goroutine
// keeps connecting every retry interval. A permanent error is returned and
// nothing is started.
func (c *Cache) Connect(ctx context.Context) error {
	if !c.cfg.EnableCache {
		return c.inner.Connect(ctx)
	}
	c.mu.Lock()
	if c.started || c.closed {
		c.mu.Unlock()
		return errors.New("connect sink cache: already connected or closed")
	}
	c.mu.Unlock()
	err := c.connectSinks(ctx)
	if err != nil && !errors.Is(err, api.ErrRetryable) {
		return fmt.Errorf("connect sink: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.connected = err == nil
	if err != nil {
		c.lastErr = err.Error()
	}
	c.started = true
	go c.run()
	return nil
}

func (c *Cache) connectSinks(ctx context.Context) error {
	if err := c.inner.Connect(ctx); err != nil {
		return err
	}
	if c.alt != nil && c.cfg.ResendAlterQueue {
		if err := c.alt.Connect(ctx); err != nil {
			return fmt.Errorf("connect resend sink: %w", err)
		}
	}
	return nil
}

// Write delivers msg or takes responsibility for it. It returns nil when
// msg was delivered, accepted into the cache (appended to the segment log
// with the configured sync, or held in memory while the disk fails), or
// discarded by the drop policy (counted in Stats.Dropped). It returns the
// sink's error, counted in Stats.Failed, when the sink rejects msg
// permanently. Write takes ownership of msg: the caller must not modify it
// afterwards.
//
// Whether Write tries the sink first depends on ResendPriority while a
// backlog exists: 1 appends msg behind the backlog; 0 replays the oldest
// cached record first, then sends msg; -1 (and ResendAlterQueue) sends msg
// at once and caches it only if that fails.
func (c *Cache) Write(ctx context.Context, msg *api.SinkMessage) error {
	if !c.cfg.EnableCache {
		return c.inner.Write(ctx, msg)
	}
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	backlog, connected := c.tail > c.head, c.connected
	c.mu.Unlock()
	if !connected {
		return c.accept(msg)
	}
	if backlog && !c.cfg.ResendAlterQueue && c.cfg.ResendPriority != -1 {
		if c.cfg.ResendPriority == 1 {
			return c.accept(msg)
		}
		if _, err := c.replayOne(ctx); err != nil {
			return c.accept(msg)
		}
	}
	err := c.inner.Write(ctx, msg)
	switch {
	case err == nil:
		c.mu.Lock()
		c.delivered++
		c.mu.Unlock()
		return nil
	case errors.Is(err, api.ErrRetryable) || ctx.Err() != nil:
		c.mu.Lock()
		c.lastErr = err.Error()
		c.mu.Unlock()
		return c.accept(msg)
	default:
		c.mu.Lock()
		c.failed++
		c.lastErr = err.Error()
		c.mu.Unlock()
		return fmt.Errorf("sink write: %w", err)
	}
}

// accept puts msg at the end of the backlog, applying the bound. It fails
// only when the cache is closed.
func (c *Cache) accept(msg *api.SinkMessage) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	defer c.kickReplay()
	if c.tail-c.head >= uint64(c.cfg.MaxDiskCache) {
		if c.cfg.DropPolicy == DropCurrent {
			c.dropped++
			return nil
		}
		c.removeHead()
		c.dropped++
	}
	e := entry{seq: c.tail, at: c.clk.Now().UnixMilli(), msg: msg}
	if c.diskUsable() {
		err := c.disk.append(e)
		if err == nil {
			c.recovered()
			c.durable = e.seq + 1
			if c.frontEnd == e.seq && c.memLen() < c.memCap {
				c.front = append(c.front, e)
				c.frontEnd++
			}
			c.tail++
			c.cached++
			c.scheduleSync()
			return nil
		}
		c.degrade(err)
	}
	if len(c.back) >= c.memCap {
		c.dropped++
		c.lastErr = "sink cache: disk failing and memory tier full, record dropped"
		return nil
	}
	c.back = append(c.back, e)
	c.tail++
	c.cached++
	if c.memLen() > c.memCap && len(c.front) > 1 {
		// The evicted record is on disk; it is read back when its turn comes.
		c.front[len(c.front)-1] = entry{}
		c.front = c.front[:len(c.front)-1]
		c.frontEnd--
	}
	return nil
}

func (c *Cache) memLen() int { return len(c.front) + len(c.back) }

// diskUsable reports whether the next record may go to disk: always while
// the disk works; while it fails, at most every DiskRetryInterval, after the
// memory-only records were written back in order.
func (c *Cache) diskUsable() bool {
	if !c.degraded {
		return true
	}
	if c.clk.Now().Sub(c.lastTry) < c.cfg.DiskRetryInterval {
		return false
	}
	c.lastTry = c.clk.Now()
	return c.flushBack() == nil
}

// flushBack writes the memory-only records to disk, oldest first.
func (c *Cache) flushBack() error {
	wrote := false
	for len(c.back) > 0 {
		e := c.back[0]
		if err := c.disk.append(e); err != nil {
			c.degrade(err)
			return err
		}
		wrote = true
		c.durable = e.seq + 1
		c.back[0] = entry{}
		c.back = c.back[1:]
		if c.frontEnd == e.seq && c.memLen() < c.memCap {
			c.front = append(c.front, e)
			c.frontEnd++
		}
	}
	if wrote {
		c.recovered()
		c.scheduleSync()
	}
	return nil
}

func (c *Cache) degrade(err error) {
	if !c.degraded {
		c.log.Warn("sink cache: disk failed, holding new records in memory", "dir", c.cfg.Dir, "err", err)
	}
	c.degraded = true
	c.diskErr = err.Error()
	c.lastErr = err.Error()
	c.lastTry = c.clk.Now()
}

func (c *Cache) recovered() {
	if c.degraded && len(c.back) == 0 {
		c.log.Info("sink cache: disk works again", "dir", c.cfg.Dir)
		c.degraded = false
		c.diskErr = ""
	}
}

// removeHead takes the oldest record out of the backlog.
func (c *Cache) removeHead() {
	var seq uint64
	switch {
	case len(c.front) > 0:
		seq = c.front[0].seq
		c.front[0] = entry{}
		c.front = c.front[1:]
	case c.head < c.durable:
		seq = c.head
	case len(c.back) > 0:
		seq = c.back[0].seq
		c.back[0] = entry{}
		c.back = c.back[1:]
	default:
		return
	}
	if seq > c.head {
		// Records lost to a corrupt segment leave a gap.
		c.dropped += int64(seq - c.head)
	}
	c.head = seq + 1
	c.durable = max(c.durable, c.head)
	c.frontEnd = max(c.frontEnd, c.head)
	c.afterHeadMove()
}

// afterHeadMove persists the head, deletes consumed segments and loads the
// next page of disk records into memory when needed.
func (c *Cache) afterHeadMove() {
	if c.closed {
		return
	}
	if err := c.disk.writeHead(c.head); err != nil {
		c.lastErr = err.Error()
	}
	if err := c.disk.removeBefore(c.head); err != nil {
		c.lastErr = err.Error()
	}
	c.scheduleSync()
	c.ensureFront()
}

// ensureFront makes front[0] the oldest record when it is on disk.
func (c *Cache) ensureFront() {
	if len(c.front) > 0 || c.head >= c.durable {
		return
	}
	room := max(1, min(c.cfg.BufferPageSize, c.memCap-len(c.back)))
	recs, err := c.disk.read(c.head, room)
	if err != nil {
		c.lastErr = err.Error()
		c.log.Warn("sink cache: unreadable records skipped", "dir", c.cfg.Dir, "err", err)
	}
	var skip uint64
	switch {
	case len(recs) == 0:
		skip = c.durable - c.head
	case recs[0].seq > c.head:
		skip = min(recs[0].seq, c.durable) - c.head
	}
	if skip > 0 {
		c.dropped += int64(skip)
		c.head += skip
		c.frontEnd = c.head
		if err := c.disk.writeHead(c.head); err != nil {
			c.lastErr = err.Error()
		}
	}
	for _, e := range recs {
		if e.seq >= c.durable {
			break
		}
		c.front = append(c.front, e)
		c.frontEnd = e.seq + 1
	}
}

// peek returns the oldest cached record.
func (c *Cache) peek() (entry, bool) {
	c.ensureFront()
	if len(c.front) > 0 {
		return c.front[0], true
	}
	if c.head >= c.durable && len(c.back) > 0 {
		return c.back[0], true
	}
	return entry{}, false
}

func (c *Cache) kickReplay() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

func (c *Cache) scheduleSync() {
	if c.cfg.Sync != SyncPeriodic || c.syncTimer != nil || c.closed {
		return
	}
	c.syncTimer = c.clk.AfterFunc(c.cfg.SyncInterval, c.periodicSync)
}

func (c *Cache) periodicSync() {
	defer panics.Catch("sink cache sync", c.panicked) // the timer's goroutine
	c.mu.Lock()
	defer c.mu.Unlock()
	c.syncTimer = nil
	if c.closed {
		return
	}
	if err := c.disk.syncAll(); err != nil {
		c.lastErr = err.Error()
	}
}

// Flush returns once every record written before it is delivered or
// durably cached: memory-only records (disk failing) are written back and
// the segments fsynced; then the inner sink's own Flush, if it has one, is
// called. It does not wait for a Write running concurrently.
func (c *Cache) Flush(ctx context.Context) error {
	if c.cfg.EnableCache {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return ErrClosed
		}
		var errs []error
		if len(c.back) > 0 {
			if err := c.flushBack(); err != nil {
				errs = append(errs, fmt.Errorf("flush sink cache: %d records held only in memory: %w", len(c.back), err))
			}
		}
		if err := c.disk.syncAll(); err != nil {
			errs = append(errs, fmt.Errorf("flush sink cache: %w", err))
		}
		c.mu.Unlock()
		if err := errors.Join(errs...); err != nil {
			return err
		}
	}
	if f, ok := c.inner.(flusher); ok {
		if err := f.Flush(ctx); err != nil {
			return fmt.Errorf("flush sink: %w", err)
		}
	}
	return nil
}

// Stats returns a snapshot of the counters and gauges.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := Stats{
		Delivered: c.delivered, Cached: c.cached, Replayed: c.replayed, Dropped: c.dropped, Failed: c.failed,
		Length:       int(c.tail - c.head),
		MemoryLength: c.memLen(),
		DiskLength:   int(c.durable - c.head),
		DiskError:    c.diskErr,
		LastError:    c.lastErr,
		Destination:  c.cfg.ResendDestination,
		Connected:    c.connected,
	}
	if c.disk != nil && !c.closed {
		s.DiskBytes = c.disk.bytes()
	}
	var oldest *entry
	switch {
	case len(c.front) > 0:
		oldest = &c.front[0]
	case c.head >= c.durable && len(c.back) > 0:
		oldest = &c.back[0]
	}
	if oldest != nil {
		s.OldestAge = max(0, c.clk.Now().Sub(time.UnixMilli(oldest.at)))
	}
	return s
}

// Close stops the replay goroutine (aborting a replay in flight through
// its context), writes memory-only records to disk if it can, fsyncs and
// closes the segment log, deletes it with CleanCacheAtStop, and closes the
// inner sink. Records still cached stay on disk for the next Wrap. If ctx
// ends before the replay goroutine has stopped, Close goes on and returns
// ctx's error with the others.
func (c *Cache) Close(ctx context.Context) error {
	if !c.cfg.EnableCache {
		return c.inner.Close(ctx)
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	// From here on Write, Flush and the replay goroutine leave the disk
	// alone; only Close touches it.
	c.closed = true
	started := c.started
	c.mu.Unlock()
	var errs []error
	c.cancel()
	if started {
		close(c.stop)
		select {
		case <-c.done:
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("stop sink cache replay: %w", ctx.Err()))
		}
	}
	c.mu.Lock()
	if c.syncTimer != nil {
		c.syncTimer.Stop()
		c.syncTimer = nil
	}
	if len(c.back) > 0 && !c.cfg.CleanCacheAtStop {
		if err := c.flushBack(); err != nil {
			errs = append(errs, fmt.Errorf("close sink cache: %d records held only in memory are lost: %w", len(c.back), err))
		}
	}
	if !c.cfg.CleanCacheAtStop {
		if err := c.disk.syncAll(); err != nil {
			errs = append(errs, fmt.Errorf("close sink cache: %w", err))
		}
	}
	if err := c.disk.close(); err != nil {
		errs = append(errs, fmt.Errorf("close sink cache: %w", err))
	}
	if c.cfg.CleanCacheAtStop {
		if err := os.RemoveAll(c.cfg.Dir); err != nil {
			errs = append(errs, fmt.Errorf("clean sink cache: %w", err))
		}
	}
	c.mu.Unlock()
	if err := c.inner.Close(ctx); err != nil {
		errs = append(errs, fmt.Errorf("close sink: %w", err))
	}
	if c.alt != nil && c.cfg.ResendAlterQueue {
		if err := c.alt.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("close resend sink: %w", err))
		}
	}
	return errors.Join(errs...)
}
