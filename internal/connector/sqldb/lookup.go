package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/rekuiper/rekuiper/internal/connector"
)

// LookupSpec is the sql lookup source's property spec. The table's
// DATASOURCE is the database table.
func LookupSpec() connector.Spec {
	return connector.Spec{Props: append(urlProps(),
		connector.Prop{Name: "datasource", Type: connector.TypeString, Required: true, Target: true, Doc: "table to look rows up in"},
	), Ping: true}
}

// Lookup queries rows whose columns equal the lookup keys; every call
// reads the database (the engine's lookup join caches, see lookup.cache).
// It is safe for concurrent use.
type Lookup struct {
	d     dialect
	table string

	mu sync.Mutex
	h  database
	db *sql.DB
}

var _ connector.LookupSource = (*Lookup)(nil)

// NewLookup builds a sql lookup source from validated props.
func NewLookup(props map[string]any, deps connector.Deps) (connector.LookupSource, error) {
	d, err := parseURL(props)
	if err != nil {
		return nil, err
	}
	l := &Lookup{d: d, h: database{reg: deps.Connections, d: d}}
	if l.table, err = quoteIdent(connector.Get[string](props, "datasource")); err != nil {
		return nil, fmt.Errorf("property \"datasource\": %w", err)
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
	return nil
}

// Lookup returns the rows whose columns equal keys.
func (l *Lookup) Lookup(ctx context.Context, keys map[string]any) ([]map[string]any, error) {
	names := slices.Sorted(maps.Keys(keys))
	if len(names) == 0 {
		return nil, errors.New("lookup without keys")
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
	return rows, nil
}

// Close releases the database pool.
func (l *Lookup) Close(context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.db = nil
	return l.h.release()
}
