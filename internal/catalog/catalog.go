package catalog

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/rekuiper/rekuiper/internal/rule"
)

// Catalog is the in-memory view of a Store. Reads come from memory and never
// block on the database. Every mutation is written to the Store first, in
// one transaction; memory changes only after that transaction committed, so
// a failed write returns its error and leaves memory as it was. Mutations
// are serialized, so memory applies them in the order the store committed
// them. Values handed in or out are copies: callers may modify them freely.
//
// The Catalog does not own the Store: the caller closes it after the last
// use of the Catalog.
type Catalog struct {
	store Store

	wmu sync.Mutex   // serializes mutations: store write, then memory
	mu  sync.RWMutex // guards views
	views

	// seen is the version of a shared store that memory reflected at the
	// last full load (see Follow); guarded by wmu.
	seen int64
}

// New loads the whole store into a Catalog.
func New(ctx context.Context, store Store) (*Catalog, error) {
	c := &Catalog{store: store}
	if sh, ok := store.(Shared); ok {
		// Read before the load: a write between the two makes the next
		// reconcile reload, never miss it.
		v, err := sh.Version(ctx)
		if err != nil {
			return nil, fmt.Errorf("new catalog: %w", err)
		}
		c.seen = v
	}
	snap, err := store.Load(ctx)
	if err != nil {
		return nil, fmt.Errorf("new catalog: %w", err)
	}
	c.fill(snap)
	return c, nil
}

// fill replaces every view with the snapshot's content.
func (c *Catalog) fill(snap *Snapshot) {
	c.streams = viewOf(snap.Streams, Stream.clone, func(s Stream) string { return s.Name })
	c.rules = viewOf(snap.Rules, Rule.clone, func(r Rule) string { return r.ID })
	c.connections = viewOf(snap.Connections, Connection.clone, func(conn Connection) string { return conn.ID })
	c.confKeys = viewOf(snap.ConfKeys, ConfKey.clone, func(k ConfKey) string { return confKeyID(k.Category, k.Type, k.Key) })
	c.schemas = viewOf(snap.Schemas, Schema.clone, func(s Schema) string { return schemaID(s.Type, s.Name) })
	c.uploads = viewOf(snap.Uploads, Upload.clone, func(u Upload) string { return u.Name })
	rule.RegisterSecretsIn(snap) // error texts mask the secrets it holds
}

// mutate runs write against the store and, only if it succeeded, apply
// against memory, all under the mutation lock.
func mutate[T any](c *Catalog, write func() (T, error), apply func(T)) (T, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	v, err := write()
	if err != nil {
		var zero T
		return zero, err
	}
	c.mu.Lock()
	apply(v)
	c.mu.Unlock()
	rule.RegisterSecretsIn(v)
	return v, nil
}

// PutStream stores a stream or table (see PutMode) and returns it as stored.
func (c *Catalog) PutStream(ctx context.Context, s Stream, mode PutMode) (Stream, error) {
	stored, err := mutate(c, func() (Stream, error) { return c.store.PutStream(ctx, s, mode) },
		func(v Stream) { c.streams.m[v.Name] = v })
	return stored.clone(), err
}

// DeleteStream deletes a stream or table.
func (c *Catalog) DeleteStream(ctx context.Context, name string) error {
	_, err := mutate(c, func() (struct{}, error) { return struct{}{}, c.store.DeleteStream(ctx, name) },
		func(struct{}) { delete(c.streams.m, name) })
	return err
}

// Stream returns the stream or table named name.
func (c *Catalog) Stream(name string) (Stream, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	s, ok := c.streams.get(name)
	if !ok {
		return Stream{}, fmt.Errorf("get stream %s: %w", name, ErrNotFound)
	}
	return s, nil
}

// Streams lists streams of kind ("" for all) ordered by name.
func (c *Catalog) Streams(kind StreamKind) []Stream {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.streams.list(func(s Stream) bool { return kind == "" || s.Kind == kind })
}

// PutRule stores a rule (see PutMode) and returns it as stored.
func (c *Catalog) PutRule(ctx context.Context, r Rule, mode PutMode) (Rule, error) {
	stored, err := mutate(c, func() (Rule, error) { return c.store.PutRule(ctx, r, mode) },
		func(v Rule) { c.rules.m[v.ID] = v })
	return stored.clone(), err
}

// SetRuleState sets a rule's wanted state and returns the rule as stored.
func (c *Catalog) SetRuleState(ctx context.Context, id string, state RuleState) (Rule, error) {
	stored, err := mutate(c, func() (Rule, error) { return c.store.SetRuleState(ctx, id, state) },
		func(v Rule) { c.rules.m[v.ID] = v })
	return stored.clone(), err
}

// DeleteRule deletes a rule.
func (c *Catalog) DeleteRule(ctx context.Context, id string) error {
	_, err := mutate(c, func() (struct{}, error) { return struct{}{}, c.store.DeleteRule(ctx, id) },
		func(struct{}) { delete(c.rules.m, id) })
	return err
}

// Rule returns the rule with id.
func (c *Catalog) Rule(id string) (Rule, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	r, ok := c.rules.get(id)
	if !ok {
		return Rule{}, fmt.Errorf("get rule %s: %w", id, ErrNotFound)
	}
	return r, nil
}

// Rules lists rules ordered by id; with tags, only rules carrying all of them.
func (c *Catalog) Rules(tags ...string) []Rule {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.rules.list(func(r Rule) bool {
		for _, t := range tags {
			if !slices.Contains(r.Tags, t) {
				return false
			}
		}
		return true
	})
}

// PutConnection stores a named connection (see PutMode).
func (c *Catalog) PutConnection(ctx context.Context, conn Connection, mode PutMode) (Connection, error) {
	stored, err := mutate(c, func() (Connection, error) { return c.store.PutConnection(ctx, conn, mode) },
		func(v Connection) { c.connections.m[v.ID] = v })
	return stored.clone(), err
}

// DeleteConnection deletes a named connection.
func (c *Catalog) DeleteConnection(ctx context.Context, id string) error {
	_, err := mutate(c, func() (struct{}, error) { return struct{}{}, c.store.DeleteConnection(ctx, id) },
		func(struct{}) { delete(c.connections.m, id) })
	return err
}

// Connection returns the connection with id.
func (c *Catalog) Connection(id string) (Connection, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	conn, ok := c.connections.get(id)
	if !ok {
		return Connection{}, fmt.Errorf("get connection %s: %w", id, ErrNotFound)
	}
	return conn, nil
}

// Connections lists connections ordered by id.
func (c *Catalog) Connections() []Connection {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.connections.list(nil)
}

// PutConfKey stores a confKey (see PutMode).
func (c *Catalog) PutConfKey(ctx context.Context, k ConfKey, mode PutMode) (ConfKey, error) {
	stored, err := mutate(c, func() (ConfKey, error) { return c.store.PutConfKey(ctx, k, mode) },
		func(v ConfKey) { c.confKeys.m[confKeyID(v.Category, v.Type, v.Key)] = v })
	return stored.clone(), err
}

// DeleteConfKey deletes a confKey.
func (c *Catalog) DeleteConfKey(ctx context.Context, category ConfCategory, typ, key string) error {
	_, err := mutate(c, func() (struct{}, error) { return struct{}{}, c.store.DeleteConfKey(ctx, category, typ, key) },
		func(struct{}) { delete(c.confKeys.m, confKeyID(category, typ, key)) })
	return err
}

// ConfKey returns one confKey.
func (c *Catalog) ConfKey(category ConfCategory, typ, key string) (ConfKey, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	k, ok := c.confKeys.get(confKeyID(category, typ, key))
	if !ok {
		return ConfKey{}, fmt.Errorf("get conf key %s: %w", confKeyName(category, typ, key), ErrNotFound)
	}
	return k, nil
}

// ConfKeys lists the confKeys of category and typ ("" for every type),
// ordered by type and key.
func (c *Catalog) ConfKeys(category ConfCategory, typ string) []ConfKey {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.confKeys.list(func(k ConfKey) bool { return k.Category == category && (typ == "" || k.Type == typ) })
}

// PutSchema stores a schema (see PutMode).
func (c *Catalog) PutSchema(ctx context.Context, s Schema, mode PutMode) (Schema, error) {
	return mutate(c, func() (Schema, error) { return c.store.PutSchema(ctx, s, mode) },
		func(v Schema) { c.schemas.m[schemaID(v.Type, v.Name)] = v })
}

// DeleteSchema deletes a schema.
func (c *Catalog) DeleteSchema(ctx context.Context, typ, name string) error {
	_, err := mutate(c, func() (struct{}, error) { return struct{}{}, c.store.DeleteSchema(ctx, typ, name) },
		func(struct{}) { delete(c.schemas.m, schemaID(typ, name)) })
	return err
}

// Schema returns one schema.
func (c *Catalog) Schema(typ, name string) (Schema, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	s, ok := c.schemas.get(schemaID(typ, name))
	if !ok {
		return Schema{}, fmt.Errorf("get schema %s/%s: %w", typ, name, ErrNotFound)
	}
	return s, nil
}

// Schemas lists schemas of typ ("" for all) ordered by type and name.
func (c *Catalog) Schemas(typ string) []Schema {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.schemas.list(func(s Schema) bool { return typ == "" || s.Type == typ })
}

// PutUpload stores an upload record (see PutMode).
func (c *Catalog) PutUpload(ctx context.Context, u Upload, mode PutMode) (Upload, error) {
	return mutate(c, func() (Upload, error) { return c.store.PutUpload(ctx, u, mode) },
		func(v Upload) { c.uploads.m[v.Name] = v })
}

// DeleteUpload deletes an upload record.
func (c *Catalog) DeleteUpload(ctx context.Context, name string) error {
	_, err := mutate(c, func() (struct{}, error) { return struct{}{}, c.store.DeleteUpload(ctx, name) },
		func(struct{}) { delete(c.uploads.m, name) })
	return err
}

// Upload returns one upload record.
func (c *Catalog) Upload(name string) (Upload, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	u, ok := c.uploads.get(name)
	if !ok {
		return Upload{}, fmt.Errorf("get upload %s: %w", name, ErrNotFound)
	}
	return u, nil
}

// Uploads lists upload records ordered by name.
func (c *Catalog) Uploads() []Upload {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.uploads.list(nil)
}

// Backup writes a consistent copy of the catalog to path (see Store.Backup).
// Mutations wait while it runs, so the copy matches memory at one instant.
func (c *Catalog) Backup(ctx context.Context, path string) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.store.Backup(ctx, path)
}

// views are the in-memory catalog, one view per kind.
type views struct {
	streams     view[Stream]
	rules       view[Rule]
	connections view[Connection]
	confKeys    view[ConfKey]
	schemas     view[Schema]
	uploads     view[Upload]
}

// view is one kind's map, keyed by a string whose order is the list order.
type view[V any] struct {
	m     map[string]V
	clone func(V) V
}

func viewOf[V any](entries []V, clone func(V) V, key func(V) string) view[V] {
	v := view[V]{m: make(map[string]V, len(entries)), clone: clone}
	for _, e := range entries {
		v.m[key(e)] = e
	}
	return v
}

func (v view[V]) get(k string) (V, bool) {
	e, ok := v.m[k]
	if !ok {
		return e, false
	}
	return v.clone(e), true
}

// list returns copies of the entries keep accepts (all when nil), by key.
func (v view[V]) list(keep func(V) bool) []V {
	out := []V{}
	for _, k := range slices.Sorted(maps.Keys(v.m)) {
		if e := v.m[k]; keep == nil || keep(e) {
			out = append(out, v.clone(e))
		}
	}
	return out
}

// Composite keys join with NUL so that key order is (category, type, key).
func confKeyID(category ConfCategory, typ, key string) string {
	return string(category) + "\x00" + typ + "\x00" + key
}

func schemaID(typ, name string) string { return typ + "\x00" + name }

func (s Stream) clone() Stream { return s }
func (s Schema) clone() Schema { return s }
func (u Upload) clone() Upload { return u }

func (r Rule) clone() Rule {
	r.Definition = slices.Clone(r.Definition)
	r.Tags = slices.Clone(r.Tags)
	return r
}

func (c Connection) clone() Connection {
	c.Props = cloneProps(c.Props)
	return c
}

func (k ConfKey) clone() ConfKey {
	k.Props = cloneProps(k.Props)
	return k
}

func cloneProps(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	return deepCopy(m).(map[string]any)
}

// deepCopy copies the mutable parts of a value-model value.
func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = deepCopy(e)
		}
		return out
	case []byte:
		return slices.Clone(x)
	default:
		return v
	}
}
