package memory

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/connector/membus"
	"github.com/rekuiper/rekuiper/internal/panics"
	"github.com/rekuiper/rekuiper/internal/value"
)

// Table is the memory lookup source: a keyed table kept up to date from the
// rows published on its topic filter (rowkind insert/upsert/update replace
// the row with that key, delete removes it). Rows published before Connect
// are not seen.
//
// Connect starts one goroutine, owned by the table, that applies updates;
// Close stops it and waits for it. Lookup is safe for concurrent use.
type Table struct {
	bus    *membus.Bus
	filter string
	key    string
	buffer int

	mu   sync.RWMutex
	rows map[string]map[string]any

	sub  *membus.Subscription
	done chan struct{}
	// failed is the panic that ended the update goroutine; every Lookup
	// returns it from then on, so that the rules joining the table stop
	// (the runtime rethrows it) instead of joining stale rows.
	failed *panics.Error

	// apply applies one update: update, or a test's replacement.
	apply func(membus.Message)
}

var _ connector.LookupSource = (*Table)(nil)

// NewLookup builds a memory lookup table from validated props.
func NewLookup(props map[string]any, deps connector.Deps) (connector.LookupSource, error) {
	if deps.Memory == nil {
		return nil, errors.New("memory bus not available")
	}
	filter := connector.Get[string](props, "datasource")
	if err := membus.ValidFilter(filter); err != nil {
		return nil, err
	}
	t := &Table{
		bus:    deps.Memory,
		filter: filter,
		key:    connector.Get[string](props, "key"),
		buffer: int(connector.Get[int64](props, "bufferLength")),
		rows:   map[string]map[string]any{},
	}
	t.apply = t.update
	return t, nil
}

// Connect subscribes and starts applying updates.
func (t *Table) Connect(context.Context) error {
	if t.sub != nil {
		return nil
	}
	sub, err := t.bus.Subscribe(t.filter, t.buffer)
	if err != nil {
		return fmt.Errorf("subscribe %s: %w", t.filter, err)
	}
	t.sub = sub
	t.done = make(chan struct{})
	go t.follow(sub, t.done)
	return nil
}

func (t *Table) follow(sub *membus.Subscription, done chan struct{}) {
	defer close(done)
	defer panics.Catch("memory table "+t.filter+" update", func(e *panics.Error) {
		sub.Close() // publishers to the topic must not wait for it
		t.mu.Lock()
		t.failed = e
		t.mu.Unlock()
	})
	for {
		m, err := sub.Receive(context.Background())
		if err != nil {
			return
		}
		for _, one := range m.Split() {
			t.apply(one)
		}
	}
}

// update applies one published row to the table.
func (t *Table) update(m membus.Message) {
	k := m.Key
	if k == nil {
		k = m.Data[t.key]
	}
	if k == nil {
		return
	}
	ks := keyString(k)
	t.mu.Lock()
	defer t.mu.Unlock()
	if m.Rowkind == "delete" {
		delete(t.rows, ks)
	} else {
		t.rows[ks] = maps.Clone(m.Data)
	}
}

// Lookup returns copies of the rows whose fields equal all of keys (values
// compare by their string form, so 1 and "1" match). A lookup on the KEY
// field alone is a map access; others scan the table.
func (t *Table) Lookup(_ context.Context, keys map[string]any) ([]map[string]any, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.failed != nil {
		return nil, t.failed
	}
	if len(keys) == 1 {
		if k, ok := keys[t.key]; ok {
			if row, ok := t.rows[keyString(k)]; ok {
				return []map[string]any{maps.Clone(row)}, nil
			}
			return nil, nil
		}
	}
	var out []map[string]any
	for _, ks := range slices.Sorted(maps.Keys(t.rows)) {
		row := t.rows[ks]
		if connector.MatchKeys(row, keys) {
			out = append(out, maps.Clone(row))
		}
	}
	return out, nil
}

func keyString(v any) string { return value.ToString(v) }

// Close unsubscribes and waits for the update goroutine to end.
func (t *Table) Close(context.Context) error {
	if t.sub != nil {
		t.sub.Close()
		<-t.done
		t.sub = nil
	}
	return nil
}
