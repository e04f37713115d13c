// Package simulator provides the simulator source, which replays a fixed
// list of rows at a fixed interval, for demos and tests.
package simulator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/value"
)

// Type is the connector type name.
const Type = "simulator"

// Spec is the simulator's property spec.
func Spec() connector.Spec {
	return connector.Spec{Props: []connector.Prop{
		{Name: "data", Type: connector.TypeList, Required: true, Doc: "rows (objects) to emit in order"},
		{Name: "interval", Type: connector.TypeDuration, Default: "1s", Doc: "time between two rows"},
		{Name: "loop", Type: connector.TypeBool, Default: true, Doc: "start over after the last row; false ends the stream (EOF)"},
	}}
}

// Register adds the simulator source and lookup table to r.
func Register(r *connector.Registry) error {
	if err := r.RegisterSource(Type, Spec(), New); err != nil {
		return err
	}
	return r.RegisterLookup(Type, LookupSpec(), NewLookup)
}

// Source emits data[0], data[1], ... one row per interval on the clock: the
// first row at Connect, as eKuiper pulls a pull source once when it starts,
// then on a fixed schedule. It starts
// no goroutine (Read waits on a clock timer) and holds nothing to close.
// It is Rewindable: the offset is the index of the next row.
type Source struct {
	rows     []map[string]any
	interval time.Duration
	loop     bool
	clk      clock.Clock

	next      int
	due       time.Time
	connected bool
}

var (
	_ api.Source     = (*Source)(nil)
	_ api.Rewindable = (*Source)(nil)
)

// New builds a simulator from validated props; every element of data must
// be an object.
func New(props map[string]any, deps connector.Deps) (api.Source, error) {
	if deps.Clock == nil {
		return nil, errors.New("clock not available")
	}
	rows, err := objects(connector.Get[[]any](props, "data"))
	if err != nil {
		return nil, err
	}
	return &Source{
		rows:     rows,
		interval: connector.Get[time.Duration](props, "interval"),
		loop:     connector.Get[bool](props, "loop"),
		clk:      deps.Clock,
	}, nil
}

// Connect starts the schedule: the next Read returns at once.
func (s *Source) Connect(context.Context) error {
	s.due = s.clk.Now()
	s.connected = true
	return nil
}

// Read waits for the next due time and returns a copy of the next row. When
// loop is false it returns io.EOF after the last row.
func (s *Source) Read(ctx context.Context) (*api.Message, error) {
	if !s.connected {
		return nil, errors.New("simulator not connected")
	}
	if s.next >= len(s.rows) {
		if !s.loop {
			return nil, io.EOF
		}
		s.next = 0
	}
	if err := connector.WaitUntil(ctx, s.clk, s.due); err != nil {
		return nil, err
	}
	now := s.clk.Now()
	s.due = s.due.Add(s.interval)
	if s.due.Before(now) {
		s.due = now
	}
	row := deepCopy(s.rows[s.next]).(map[string]any)
	s.next++
	return &api.Message{Data: row, Time: now}, nil
}

// Close ends the schedule.
func (s *Source) Close(context.Context) error {
	s.connected = false
	return nil
}

type offset struct {
	V int `json:"v"`
	I int `json:"i"`
}

// Offset returns {"v":1,"i":<index of the next row>}.
func (s *Source) Offset() ([]byte, error) {
	return json.Marshal(offset{V: 1, I: s.next})
}

// Rewind makes the next Read return row i of the offset (modulo the number
// of rows when looping).
func (s *Source) Rewind(b []byte) error {
	var o offset
	if err := connector.DecodeOffset("simulator", b, &o); err != nil {
		return err
	}
	if o.I < 0 {
		return fmt.Errorf("decode simulator offset: negative index %d", o.I)
	}
	if s.loop {
		o.I %= len(s.rows)
	}
	s.next = o.I
	return nil
}

// objects checks that data is a non-empty list of objects and returns
// normalized copies of them.
func objects(data []any) ([]map[string]any, error) {
	if len(data) == 0 {
		return nil, errors.New("property \"data\" is empty")
	}
	rows := make([]map[string]any, len(data))
	for i, e := range data {
		v := value.Normalize(deepCopy(e))
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("data[%d] is %s, not an object", i, value.TypeName(v))
		}
		rows[i] = m
	}
	return rows, nil
}

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = deepCopy(e)
		}
		return l
	}
	return v
}
