package redis

import (
	"context"
	"errors"
	"fmt"
	"sync"

	goredis "github.com/redis/go-redis/v9"

	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/connector/connection"
	"github.com/rekuiper/rekuiper/internal/value"
)

// LookupSpec is the redis lookup source's property spec. As in eKuiper the
// table's DATASOURCE may name the database index.
func LookupSpec() connector.Spec {
	return connector.Spec{Props: append(connProps(),
		connector.Prop{Name: "datasource", Type: connector.TypeString, Doc: "database index (overrides db)"},
		connector.Prop{Name: "dataType", Type: connector.TypeString, Default: "string", Enum: []any{"string", "list"}},
	), Ping: true}
}

// Lookup reads rows stored by the redis sink: the lookup key's value is
// the redis key; a string holds one JSON row, a list one JSON row per
// element. It shares its client as Sink does. It is safe for concurrent
// use.
type Lookup struct {
	list bool

	mu   sync.Mutex
	conn client
	cl   *goredis.Client
	tr   *connection.Tracker
}

var _ connector.LookupSource = (*Lookup)(nil)

// NewLookup builds a redis lookup source from validated props.
func NewLookup(props map[string]any, deps connector.Deps) (connector.LookupSource, error) {
	opts, err := clientOptions(props)
	if err != nil {
		return nil, err
	}
	if ds := connector.Get[string](props, "datasource"); ds != "" {
		n, err := value.ToInt(ds)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("datasource %q is not a database index", ds)
		}
		opts.DB = int(n)
	}
	return &Lookup{conn: client{reg: deps.Connections, opts: opts}, list: connector.Get[string](props, "dataType") == "list"}, nil
}

// Connect takes the shared client and pings the server.
func (l *Lookup) Connect(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cl, l.tr = nil, nil
	cl, tr, err := l.conn.connect(ctx)
	if err != nil {
		return err
	}
	l.cl, l.tr = cl, tr
	return nil
}

// Lookup returns the rows stored under the value of the single lookup key.
func (l *Lookup) Lookup(ctx context.Context, keys map[string]any) ([]map[string]any, error) {
	if len(keys) != 1 {
		return nil, fmt.Errorf("redis lookup needs exactly one key, got %d", len(keys))
	}
	var key string
	for _, v := range keys {
		key = value.ToString(v)
	}
	l.mu.Lock()
	cl, tr := l.cl, l.tr
	l.mu.Unlock()
	if cl == nil {
		return nil, errors.New("redis lookup not connected")
	}
	var items []string
	if l.list {
		vs, err := cl.LRange(ctx, key, 0, -1).Result()
		if err != nil {
			return nil, tr.Report(classify(fmt.Errorf("lookup redis list %s: %w", key, err)))
		}
		items = vs
	} else {
		v, err := cl.Get(ctx, key).Result()
		if errors.Is(err, goredis.Nil) {
			tr.Connected()
			return nil, nil
		}
		if err != nil {
			return nil, tr.Report(classify(fmt.Errorf("lookup redis key %s: %w", key, err)))
		}
		items = []string{v}
	}
	tr.Connected()
	rows := make([]map[string]any, 0, len(items))
	for _, it := range items {
		r, err := decodeRow(it)
		if err != nil {
			return nil, fmt.Errorf("lookup redis key %s: %w", key, err)
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// Close releases the client (the last connector using it closes it).
func (l *Lookup) Close(context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cl, l.tr = nil, nil
	return l.conn.release()
}
