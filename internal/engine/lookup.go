package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/operator"
	"github.com/rekuiper/rekuiper/internal/planner"
	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/sql/parser"
	"github.com/rekuiper/rekuiper/internal/value"
)

// Bounds of the lookup cache options.
const (
	defaultCacheTTL  = 600 * time.Second
	defaultCacheSize = 10000
	maxCacheSize     = 1000000
)

// lookupCacheOpts are a lookup table's cache options: eKuiper's `lookup`
// map of the source confKey (cache, cacheTtl in seconds, cacheMissingKey),
// plus cacheSize, the most keys one rule's cache holds.
type lookupCacheOpts struct {
	on      bool
	ttl     time.Duration
	missing bool
	size    int
}

// lookupProps resolves a lookup table's properties as sourceProps does,
// adds its KEY, and takes out the cache options, which the engine
// implements for every lookup type: the `lookup` map (eKuiper's form) and,
// for compatibility with older confKeys, top-level cache, cacheTtl and
// cacheMissingKey (the `lookup` map wins).
func (rn *Engine) lookupProps(def *ast.CreateStreamStmt) (string, map[string]any, lookupCacheOpts, error) {
	typ, props, err := rn.sourceProps(def)
	if err != nil {
		return "", nil, lookupCacheOpts{}, err
	}
	if k, ok := def.Option("KEY"); ok && k != "" {
		props["key"] = k
	}
	opts := map[string]any{}
	for _, k := range []string{"cache", "cacheTtl", "cacheMissingKey"} {
		if v, ok := props[k]; ok {
			opts[k] = v
			delete(props, k)
		}
	}
	if m, ok := props["lookup"]; ok {
		mm, ok := m.(map[string]any)
		if !ok {
			return "", nil, lookupCacheOpts{}, fmt.Errorf("table %s: property \"lookup\" must be a map of cache options, found %T", def.Name, m)
		}
		maps.Copy(opts, mm)
		delete(props, "lookup")
	}
	c, err := parseCacheOpts(opts)
	if err != nil {
		return "", nil, lookupCacheOpts{}, fmt.Errorf("table %s: %w", def.Name, err)
	}
	return typ, props, c, nil
}

func parseCacheOpts(m map[string]any) (lookupCacheOpts, error) {
	c := lookupCacheOpts{ttl: defaultCacheTTL, missing: true, size: defaultCacheSize}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		var err error
		switch k {
		case "cache":
			c.on, err = value.ToBool(v)
		case "cacheMissingKey":
			c.missing, err = value.ToBool(v)
		case "cacheTtl":
			c.ttl, err = parseTTL(v)
		case "cacheSize":
			var n int64
			if n, err = value.ToInt(v); err == nil && (n <= 0 || n > maxCacheSize) {
				err = fmt.Errorf("must be between 1 and %d, found %d", maxCacheSize, n)
			}
			c.size = int(n)
		default:
			return c, fmt.Errorf("unknown lookup cache option %q (known: cache, cacheTtl, cacheMissingKey, cacheSize)", k)
		}
		if err != nil {
			return c, fmt.Errorf("lookup cache option %s: %w", k, err)
		}
	}
	return c, nil
}

// parseTTL reads cacheTtl: a number of seconds (eKuiper's form) or a
// duration string such as "5m".
func parseTTL(v any) (time.Duration, error) {
	var d time.Duration
	if str, ok := v.(string); ok {
		if pd, err := time.ParseDuration(str); err == nil {
			d = pd
		} else if n, err := value.ToInt(str); err == nil {
			d = time.Duration(n) * time.Second
		} else {
			return 0, fmt.Errorf("must be a number of seconds or a duration such as \"5m\", found %q", str)
		}
	} else {
		n, err := value.ToInt(v)
		if err != nil {
			return 0, err
		}
		d = time.Duration(n) * time.Second
	}
	if d <= 0 {
		return 0, fmt.Errorf("must be a positive number of seconds, found %v", v)
	}
	return d, nil
}

// checkLookupTable is CheckStream for KIND="lookup" tables: the type is a
// lookup type, the properties pass its spec and its factory (which does no
// I/O) builds it. A memory lookup table is also started here (see
// pinMemoryTable).
func (rn *Engine) checkLookupTable(def *ast.CreateStreamStmt) error {
	typ := sourceType(def)
	entry, ok := rn.cfg.Registry.Lookup(typ)
	if !ok {
		return fmt.Errorf("table %s: TYPE %q cannot serve a lookup table; lookup types are %s",
			def.Name, typ, strings.Join(rn.cfg.Registry.Names(connector.KindLookup), ", "))
	}
	_, props, _, err := rn.lookupProps(def)
	if err != nil {
		return err
	}
	valid, err := entry.Spec.Validate(props)
	if err != nil {
		return fmt.Errorf("table %s: %w", def.Name, err)
	}
	if _, err := entry.New(valid, rn.cfg.Deps); err != nil {
		return fmt.Errorf("table %s: %w", def.Name, err)
	}
	if isMemory(typ) {
		if _, err := rn.pinMemoryTable(context.Background(), typ, props); err != nil {
			return fmt.Errorf("table %s: %w", def.Name, err)
		}
	}
	return nil
}

func isMemory(typ string) bool { return strings.EqualFold(typ, "memory") }

// memoryTables holds the daemon's memory lookup tables. A memory lookup
// table is filled from the rows published on its topic, so it follows the
// topic from the table's creation (or the daemon's start), not from the
// start of the first rule that joins it, and all rules share it.
type memoryTables struct {
	mu     sync.Mutex
	tables map[string]*memoryTable
}

type memoryTable struct {
	src connector.LookupSource
	// seen: a table of the catalog has used it. Only such tables are
	// stopped when no table uses them any more: one started by the check
	// of a CREATE TABLE is not in the catalog until the create commits.
	seen bool
}

// pinMemoryTable returns the running memory table for props, starting it
// if needed. Tables no longer defined in the catalog are stopped first.
func (rn *Engine) pinMemoryTable(ctx context.Context, typ string, props map[string]any) (connector.LookupSource, error) {
	key := propsKey(typ, props)
	mt := &rn.memTables
	mt.mu.Lock()
	defer mt.mu.Unlock()
	if mt.tables == nil {
		mt.tables = map[string]*memoryTable{}
	}
	rn.pruneMemoryTables(ctx)
	if t, ok := mt.tables[key]; ok {
		return t.src, nil
	}
	t, err := rn.cfg.Registry.NewLookup(typ, props, rn.cfg.Deps)
	if err != nil {
		return nil, err
	}
	if err := t.Connect(ctx); err != nil {
		_ = t.Close(ctx)
		return nil, err
	}
	mt.tables[key] = &memoryTable{src: t}
	return t, nil
}

// pruneMemoryTables stops the memory tables that no table of the catalog
// defines any more (dropped or replaced). mt.mu is held. It runs whenever
// a memory lookup table is checked or joined: a dropped table's rows stay
// in memory until then.
func (rn *Engine) pruneMemoryTables(ctx context.Context) {
	if rn.cfg.Catalog == nil || len(rn.memTables.tables) == 0 {
		return
	}
	used := map[string]bool{}
	for _, s := range rn.cfg.Catalog.Streams(catalog.KindTable) {
		def, ok := parseDef(s.SQL)
		if !ok || !planner.IsLookup(def) || !isMemory(sourceType(def)) {
			continue
		}
		if typ, props, _, err := rn.lookupProps(def); err == nil {
			used[propsKey(typ, props)] = true
		}
	}
	for k, t := range rn.memTables.tables {
		switch {
		case used[k]:
			t.seen = true
		case t.seen:
			_ = t.src.Close(ctx)
			delete(rn.memTables.tables, k)
		}
	}
}

func parseDef(sql string) (*ast.CreateStreamStmt, bool) {
	st, err := parser.ParseStatement(sql)
	if err != nil {
		return nil, false
	}
	cs, ok := st.(*ast.CreateStreamStmt)
	return cs, ok
}

// StartLookupTables starts the memory lookup tables of the catalog; the
// daemon calls it at start, before any rule runs.
func (rn *Engine) StartLookupTables(ctx context.Context) error {
	if rn.cfg.Catalog == nil {
		return nil
	}
	for _, s := range rn.cfg.Catalog.Streams(catalog.KindTable) {
		def, ok := parseDef(s.SQL)
		if !ok || !planner.IsLookup(def) || !isMemory(sourceType(def)) {
			continue
		}
		typ, props, _, err := rn.lookupProps(def)
		if err != nil {
			return err
		}
		if _, err := rn.pinMemoryTable(ctx, typ, props); err != nil {
			return fmt.Errorf("table %s: %w", def.Name, err)
		}
		rn.memTables.mu.Lock()
		rn.memTables.tables[propsKey(typ, props)].seen = true // it is in the catalog
		rn.memTables.mu.Unlock()
	}
	return nil
}

// openLookup is a lookup source opened for one rule.
type openLookup struct {
	src    connector.LookupSource
	shared bool // a memory table: not the rule's to close
}

// connectLookups gives every LookupJoin of the plan its source, cache and
// context. ctx covers connecting; lookups run under the rule's context,
// which ends when the rule stops.
func (rr *running) connectLookups(ctx context.Context) error {
	rr.lookupCtx, rr.lookupCancel = context.WithCancel(context.Background())
	for _, op := range rr.built.Plan.Ops {
		lj, ok := op.(*operator.LookupJoin)
		if !ok {
			continue
		}
		var def *ast.CreateStreamStmt
		for _, in := range rr.built.Plan.Inputs {
			if in.Lookup && in.Name == lj.Table {
				def = in.Def
			}
		}
		if def == nil {
			return fmt.Errorf("lookup table %s: no definition", lj.Table)
		}
		typ, props, cache, err := rr.rn.lookupProps(def)
		if err != nil {
			return err
		}
		var ol openLookup
		if isMemory(typ) {
			src, err := rr.rn.pinMemoryTable(ctx, typ, props)
			if err != nil {
				return fmt.Errorf("lookup table %s: %w", lj.Table, err)
			}
			ol = openLookup{src: src, shared: true}
		} else {
			deps := rr.rn.cfg.Deps
			deps.Logger = rr.logger.With("table", lj.Table)
			src, err := rr.rn.cfg.Registry.NewLookup(typ, props, deps)
			if err != nil {
				return fmt.Errorf("lookup table %s: %w", lj.Table, err)
			}
			if err := src.Connect(ctx); err != nil {
				_ = src.Close(ctx)
				return fmt.Errorf("connect lookup table %s: %w", lj.Table, err)
			}
			ol = openLookup{src: src}
		}
		rr.lookups = append(rr.lookups, ol)
		lj.Source, lj.Ctx = ol.src, rr.lookupCtx
		if cache.on {
			lj.Cache = operator.NewLookupCache(cache.ttl.Milliseconds(), cache.size, cache.missing)
		}
	}
	return nil
}

// closeLookups cancels lookups in flight and closes the rule's own lookup
// sources. It runs after the rule's operators have stopped.
func (rr *running) closeLookups(ctx context.Context) error {
	if rr.lookupCancel != nil {
		rr.lookupCancel()
	}
	var errs []error
	for _, l := range rr.lookups {
		if !l.shared {
			if err := l.src.Close(ctx); err != nil {
				errs = append(errs, err)
			}
		}
	}
	rr.lookups = nil
	if len(errs) > 0 {
		return fmt.Errorf("close lookup sources: %w", errs[0])
	}
	return nil
}

// CloseLookupTables stops the daemon's memory lookup tables; the daemon
// calls it at shutdown, after the rules stopped.
func (rn *Engine) CloseLookupTables(ctx context.Context) {
	mt := &rn.memTables
	mt.mu.Lock()
	defer mt.mu.Unlock()
	for k, t := range mt.tables {
		_ = t.src.Close(ctx)
		delete(mt.tables, k)
	}
}
