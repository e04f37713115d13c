package operator

import (
	"container/list"
	"maps"
	"slices"
	"strings"

	"github.com/rekuiper/rekuiper/internal/value"
)

// LookupCache is a lookup join's read cache: the rows found for a key,
// kept for TTL milliseconds, at most Size keys (the least recently used
// goes first). It belongs to one operator and takes no locks. Cached rows
// are shared read-only by the rows joined with them.
type LookupCache struct {
	TTL int64 // milliseconds; <= 0 keeps entries until evicted
	// Size bounds the number of keys held.
	Size int
	// Missing also caches lookups that found nothing.
	Missing bool

	order   *list.List // front: most recently used; values are *cacheItem
	entries map[string]*list.Element
}

type cacheItem struct {
	key     string
	rows    []map[string]any
	expires int64
}

// NewLookupCache returns an empty cache.
func NewLookupCache(ttlMS int64, size int, missing bool) *LookupCache {
	return &LookupCache{TTL: ttlMS, Size: size, Missing: missing, order: list.New(), entries: map[string]*list.Element{}}
}

// cacheKey renders keys in a canonical form. Values compare by their string
// form, as the lookup sources match them (1 and "1" are the same key).
func cacheKey(keys map[string]any) string {
	if len(keys) == 1 {
		for _, v := range keys {
			return value.ToString(v)
		}
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(value.ToString(keys[k]))
		b.WriteByte(0)
	}
	return b.String()
}

// Get returns the rows cached for keys at time now (ms).
func (c *LookupCache) Get(keys map[string]any, now int64) ([]map[string]any, bool) {
	e, ok := c.entries[cacheKey(keys)]
	if !ok {
		return nil, false
	}
	it := e.Value.(*cacheItem)
	if c.TTL > 0 && now >= it.expires {
		c.order.Remove(e)
		delete(c.entries, it.key)
		return nil, false
	}
	c.order.MoveToFront(e)
	return it.rows, true
}

// Put caches rows for keys at time now (ms), evicting the least recently
// used key when the cache is full.
func (c *LookupCache) Put(keys map[string]any, rows []map[string]any, now int64) {
	if len(rows) == 0 && !c.Missing {
		return
	}
	k := cacheKey(keys)
	it := &cacheItem{key: k, rows: rows, expires: now + c.TTL}
	if e, ok := c.entries[k]; ok {
		e.Value = it
		c.order.MoveToFront(e)
		return
	}
	c.entries[k] = c.order.PushFront(it)
	for c.Size > 0 && c.order.Len() > c.Size {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.entries, last.Value.(*cacheItem).key)
	}
}

// Len returns the number of keys held.
func (c *LookupCache) Len() int { return c.order.Len() }
