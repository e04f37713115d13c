package catalog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/rekuiper/rekuiper/internal/clock"
)

// Shared is implemented by stores that several daemons share (the
// PostgreSQL store): each announces its committed writes to the others.
type Shared interface {
	// Watch calls fn with every change another store instance commits, in
	// commit order, and with an empty Change whenever changes may have
	// been missed (after each connection). It blocks until ctx ends and
	// calls fn on the calling goroutine.
	Watch(ctx context.Context, fn func(Change)) error
	// Version returns the catalog version: it moves on every committed
	// write of catalog content, from any instance.
	Version(ctx context.Context) (int64, error)
}

// FollowOptions configure Catalog.Follow.
type FollowOptions struct {
	// Reconcile is the period of the full check that repairs a lost
	// announcement. Default 10s.
	Reconcile time.Duration
	// OnChange, when set, is called for each change another node made,
	// after memory shows it (Deleted set when the entity is gone). It runs
	// on Follow's goroutine: it must not block for long, and must not
	// write the catalog synchronously (the daemon's rule manager queues
	// the command to the rule's own goroutine).
	OnChange func(Change)
	Clock    clock.Clock
	Logger   *slog.Logger
}

// Follow keeps memory in step with the writes other daemons commit to a
// shared store. It applies each announced change by reading that entity
// from the store, and every Reconcile it reads the catalog version and,
// when memory may be behind it, reloads the whole catalog and applies the
// difference; a lost announcement is repaired then. It blocks until ctx
// ends; the caller owns the goroutine. For a store that is not shared
// there is nothing to follow and Follow returns at once.
func (c *Catalog) Follow(ctx context.Context, opts FollowOptions) error {
	sh, ok := c.store.(Shared)
	if !ok {
		return nil
	}
	if opts.Reconcile <= 0 {
		opts.Reconcile = 10 * time.Second
	}
	if opts.Clock == nil {
		opts.Clock = clock.Wall{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	f := &follower{c: c, sh: sh, opts: opts}
	wctx, cancel := context.WithCancel(ctx)
	changes := make(chan Change, 64)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		sh.Watch(wctx, func(ch Change) { //nolint:errcheck // returns only when wctx ends
			select {
			case changes <- ch:
			case <-wctx.Done():
			}
		})
	}()
	defer func() {
		cancel()
		<-watched
	}()
	tick := make(chan struct{}, 1)
	arm := func() {
		opts.Clock.AfterFunc(opts.Reconcile, func() {
			select {
			case tick <- struct{}{}:
			default:
			}
		})
	}
	arm()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ch := <-changes:
			if ch.Kind == "" {
				f.reconcile(ctx, true)
			} else {
				f.apply(ctx, ch)
			}
		case <-tick:
			f.reconcile(ctx, f.dirty)
			arm()
		}
	}
}

type follower struct {
	c    *Catalog
	sh   Shared
	opts FollowOptions
	// dirty: an announced change could not be applied; the next
	// reconcile reloads whatever the version says.
	dirty bool
}

// apply reads the entity ch names and puts it into memory, or removes it.
func (f *follower) apply(ctx context.Context, ch Change) {
	c := f.c
	c.wmu.Lock()
	var err error
	switch ch.Kind {
	case ChangeStream:
		v, gerr := c.store.GetStream(ctx, ch.Key[0])
		ch.Deleted, err = applyOne(c, &c.streams, ch.Key[0], v, gerr)
	case ChangeRule:
		v, gerr := c.store.GetRule(ctx, ch.Key[0])
		ch.Deleted, err = applyOne(c, &c.rules, ch.Key[0], v, gerr)
	case ChangeConnection:
		v, gerr := c.store.GetConnection(ctx, ch.Key[0])
		ch.Deleted, err = applyOne(c, &c.connections, ch.Key[0], v, gerr)
	case ChangeConfKey:
		cat := ConfCategory(ch.Key[0])
		v, gerr := c.store.GetConfKey(ctx, cat, ch.Key[1], ch.Key[2])
		ch.Deleted, err = applyOne(c, &c.confKeys, confKeyID(cat, ch.Key[1], ch.Key[2]), v, gerr)
	case ChangeSchema:
		v, gerr := c.store.GetSchema(ctx, ch.Key[0], ch.Key[1])
		ch.Deleted, err = applyOne(c, &c.schemas, schemaID(ch.Key[0], ch.Key[1]), v, gerr)
	case ChangeUpload:
		v, gerr := c.store.GetUpload(ctx, ch.Key[0])
		ch.Deleted, err = applyOne(c, &c.uploads, ch.Key[0], v, gerr)
	case ChangeJSFunction:
		// Not kept in memory: readers go to the store.
	}
	c.wmu.Unlock()
	if err != nil {
		f.dirty = true
		f.opts.Logger.Warn("catalog change from another node not applied; the next reconcile reloads", "kind", ch.Kind, "key", strings.Join(ch.Key, "/"), "err", err)
		return
	}
	if f.opts.OnChange != nil {
		f.opts.OnChange(ch)
	}
}

// applyOne puts val under id, or removes id when the store no longer has
// it; it reports whether it removed.
func applyOne[V any](c *Catalog, v *view[V], id string, val V, err error) (deleted bool, _ error) {
	if err != nil && !errors.Is(err, ErrNotFound) {
		return false, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		delete(v.m, id)
		return true, nil
	}
	v.m[id] = val
	return false, nil
}

// reconcile reloads the whole catalog when the store's version moved past
// the last full load (or always, with force) and announces what differs.
func (f *follower) reconcile(ctx context.Context, force bool) {
	changes, err := f.c.reload(ctx, f.sh, force)
	if err != nil {
		f.dirty = true
		f.opts.Logger.Warn("catalog reconcile failed; memory keeps its view", "err", err)
		return
	}
	f.dirty = false
	if f.opts.OnChange == nil {
		return
	}
	for _, ch := range changes {
		f.opts.OnChange(ch)
	}
}

// reload is reconcile's work under the mutation lock, so that no local
// write interleaves with the load and the swap.
func (c *Catalog) reload(ctx context.Context, sh Shared, force bool) ([]Change, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	v, err := sh.Version(ctx)
	if err != nil {
		return nil, err
	}
	if v == c.seen && !force {
		return nil, nil
	}
	snap, err := c.store.Load(ctx)
	if err != nil {
		return nil, fmt.Errorf("reload catalog: %w", err)
	}
	old := c.views
	c.mu.Lock()
	c.fill(snap)
	c.mu.Unlock()
	c.seen = v
	one := func(k string) []string { return []string{k} }
	var out []Change
	out = append(out, diffView(ChangeStream, old.streams, c.streams, func(s Stream) []string { return one(s.Name) })...)
	out = append(out, diffView(ChangeRule, old.rules, c.rules, func(r Rule) []string { return one(r.ID) })...)
	out = append(out, diffView(ChangeConnection, old.connections, c.connections, func(x Connection) []string { return one(x.ID) })...)
	out = append(out, diffView(ChangeConfKey, old.confKeys, c.confKeys, func(k ConfKey) []string {
		return []string{string(k.Category), k.Type, k.Key}
	})...)
	out = append(out, diffView(ChangeSchema, old.schemas, c.schemas, func(s Schema) []string { return []string{s.Type, s.Name} })...)
	out = append(out, diffView(ChangeUpload, old.uploads, c.uploads, func(u Upload) []string { return one(u.Name) })...)
	for i := range out {
		out[i].Version = v
	}
	return out, nil
}

// diffView lists the entries added, changed or removed from old to cur,
// ordered by key.
func diffView[V any](kind ChangeKind, old, cur view[V], key func(V) []string) []Change {
	var out []Change
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range old.m {
			if !yield(k) {
				return
			}
		}
		for k := range cur.m {
			if _, ok := old.m[k]; !ok && !yield(k) {
				return
			}
		}
	}) {
		ov, inOld := old.m[k]
		nv, inCur := cur.m[k]
		switch {
		case !inCur:
			out = append(out, Change{Kind: kind, Key: key(ov), Deleted: true})
		case !inOld || !reflect.DeepEqual(ov, nv):
			out = append(out, Change{Kind: kind, Key: key(nv)})
		}
	}
	return out
}
