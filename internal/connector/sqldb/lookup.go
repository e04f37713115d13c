package sqldb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/connector"
)

// LookupSpec is the sql lookup source's property spec. The table's
// DATASOURCE is the database table.
func LookupSpec() connector.Spec {
	return connector.Spec{Props: append(urlProps(),
		connector.Prop{Name: "datasource", Type: connector.TypeString, Required: true, Doc: "table to look rows up in"},
		connector.Prop{Name: "cache", Type: connector.TypeBool, Default: false, Doc: "cache lookup results"},
		connector.Prop{Name: "cacheTtl", Type: connector.TypeDuration, Default: "5m", Doc: "how long a cached result is used"},
		connector.Prop{Name: "cacheMissingKey", Type: connector.TypeBool, Default: true, Doc: "also cache lookups that found nothing"},
	)}
}

// Lookup queries rows whose columns equal the lookup keys, with an optional
// cache whose entries expire after cacheTtl on Deps.Clock. It is safe for
// concurrent use.
type Lookup struct {
	d            dialect
	table        string
	cache        bool
	ttl          time.Duration
	cacheMissing bool
	clk          clock.Clock

	mu      sync.Mutex
	h       database
	db      *sql.DB
	entries map[string]cacheEntry
}

type cacheEntry struct {
	rows    []map[string]any
	expires time.Time
}

var _ connector.LookupSource = (*Lookup)(nil)

// NewLookup builds a sql lookup source from validated props.
func NewLookup(props map[string]any, deps connector.Deps) (connector.LookupSource, error) {
	d, err := parseURL(props)
	if err != nil {
		return nil, err
	}
	l := &Lookup{
		d:            d,
		cache:        connector.Get[bool](props, "cache"),
		ttl:          connector.Get[time.Duration](props, "cacheTtl"),
		cacheMissing: connector.Get[bool](props, "cacheMissingKey"),
		clk:          deps.Clock,
		entries:      map[string]cacheEntry{},
		h:            database{reg: deps.Connections, d: d},
	}
	if l.table, err = quoteIdent(connector.Get[string](props, "datasource")); err != nil {
		return nil, fmt.Errorf("property \"datasource\": %w", err)
	}
	if l.cache && l.clk == nil {
		return nil, errors.New("cache needs a clock")
	}
	return l, nil
}

// Connect takes the database pool shared with the other connectors using
// the same url (see database).
func (l *Lookup) Connect(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.db = nil
	db, err := l.h.connect(ctx)
	if err != nil {
		return err
	}
	l.db = db
	clear(l.entries)
	return nil
}

// Lookup returns the rows whose columns equal keys.
func (l *Lookup) Lookup(ctx context.Context, keys map[string]any) ([]map[string]any, error) {
	names := slices.Sorted(maps.Keys(keys))
	if len(names) == 0 {
		return nil, errors.New("lookup without keys")
	}
	var ck string
	if l.cache {
		b, _ := json.Marshal(keys)
		ck = string(b)
		l.mu.Lock()
		e, ok := l.entries[ck]
		l.mu.Unlock()
		if ok && l.clk.Now().Before(e.expires) {
			return cloneRows(e.rows), nil
		}
	}
	l.mu.Lock()
	db, tr := l.db, l.h.tr
	l.mu.Unlock()
	if db == nil {
		return nil, errors.New("sql lookup not connected")
	}
	conds := make([]string, len(names))
	args := make([]any, len(names))
	for i, n := range names {
		conds[i] = fmt.Sprintf("%s = %s", quoteCols([]string{n}), l.d.placeholder(i+1))
		args[i] = dbValue(keys[n])
	}
	rows, err := queryRows(ctx, db, fmt.Sprintf("SELECT * FROM %s WHERE %s", l.table, strings.Join(conds, " AND ")), args...)
	if err := tr.Report(err); err != nil {
		return nil, err
	}
	if l.cache && (len(rows) > 0 || l.cacheMissing) {
		l.mu.Lock()
		l.entries[ck] = cacheEntry{rows: cloneRows(rows), expires: l.clk.Now().Add(l.ttl)}
		l.mu.Unlock()
	}
	return rows, nil
}

func cloneRows(rows []map[string]any) []map[string]any {
	out := make([]map[string]any, len(rows))
	for i, r := range rows {
		out[i] = maps.Clone(r)
	}
	return out
}

// Close closes the database and empties the cache.
func (l *Lookup) Close(context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	clear(l.entries)
	l.db = nil
	return l.h.release()
}
