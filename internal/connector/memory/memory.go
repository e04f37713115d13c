// Package memory provides the memory source, sink and lookup table: rule
// pipelines connected through the daemon's in-process bus (membus.Bus in
// Deps.Memory).
package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"text/template"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/connector/membus"
	"github.com/rekuiper/rekuiper/internal/value"
)

// Type is the connector type name.
const Type = "memory"

// SourceSpec is the memory source's property spec.
func SourceSpec() connector.Spec {
	return connector.Spec{Props: []connector.Prop{
		{Name: "datasource", Type: connector.TypeString, Required: true, Doc: "topic filter; + and # wildcards allowed"},
		{Name: "bufferLength", Type: connector.TypeInt, Default: 1024, Max: connector.MaxBufferLength, Doc: "messages buffered for this subscriber before publishers block"},
	}}
}

// SinkSpec is the memory sink's property spec.
func SinkSpec() connector.Spec {
	return connector.Spec{Props: []connector.Prop{
		{Name: "topic", Type: connector.TypeString, Required: true, Doc: "topic; may be a template over the row such as devices/{{.id}}"},
		{Name: "rowkindField", Type: connector.TypeString, Doc: "row field holding insert/update/upsert/delete for lookup tables"},
		{Name: "keyField", Type: connector.TypeString, Doc: "row field holding the key for updates and deletes"},
	}, WritesRows: true}
}

// LookupSpec is the memory lookup table's property spec.
func LookupSpec() connector.Spec {
	return connector.Spec{Props: []connector.Prop{
		{Name: "datasource", Type: connector.TypeString, Required: true, Doc: "topic filter the table follows"},
		{Name: "key", Type: connector.TypeString, Required: true, Doc: "the table's KEY field"},
		{Name: "bufferLength", Type: connector.TypeInt, Default: 1024, Max: connector.MaxBufferLength, Doc: "subscriber buffer"},
	}}
}

// Register adds the memory source, sink and lookup table to r.
func Register(r *connector.Registry) error {
	if err := r.RegisterSource(Type, SourceSpec(), NewSource); err != nil {
		return err
	}
	if err := r.RegisterSink(Type, SinkSpec(), NewSink); err != nil {
		return err
	}
	return r.RegisterLookup(Type, LookupSpec(), NewLookup)
}

// Source reads rows published on the bus to topics matching its filter.
// Connect subscribes; Close unsubscribes (releasing blocked publishers). The
// source starts no goroutine; Read is called from the engine's read loop.
type Source struct {
	bus    *membus.Bus
	filter string
	buffer int
	sub    *membus.Subscription
	// pending are the rows of a message of several rows not read yet.
	pending []membus.Message
}

var _ api.Source = (*Source)(nil)

// NewSource builds a memory source from validated props.
func NewSource(props map[string]any, deps connector.Deps) (api.Source, error) {
	if deps.Memory == nil {
		return nil, errors.New("memory bus not available")
	}
	filter := connector.Get[string](props, "datasource")
	if err := membus.ValidFilter(filter); err != nil {
		return nil, err
	}
	return &Source{bus: deps.Memory, filter: filter, buffer: int(connector.Get[int64](props, "bufferLength"))}, nil
}

// Connect subscribes to the topic filter.
func (s *Source) Connect(context.Context) error {
	if s.sub != nil {
		return nil
	}
	sub, err := s.bus.Subscribe(s.filter, s.buffer)
	if err != nil {
		return fmt.Errorf("subscribe %s: %w", s.filter, err)
	}
	s.sub = sub
	return nil
}

// Read returns the next row as Data (a shallow copy the caller owns) with
// meta "topic". It blocks until a row arrives or ctx is done.
func (s *Source) Read(ctx context.Context) (*api.Message, error) {
	if s.sub == nil {
		return nil, errors.New("memory source not connected")
	}
	for len(s.pending) == 0 {
		m, err := s.sub.Receive(ctx)
		if err != nil {
			return nil, err
		}
		s.pending = m.Split()
	}
	m := s.pending[0]
	s.pending = s.pending[1:]
	return &api.Message{Data: maps.Clone(m.Data), Meta: map[string]any{"topic": m.Topic}}, nil
}

// Close unsubscribes.
func (s *Source) Close(context.Context) error {
	if s.sub != nil {
		s.sub.Close()
		s.sub = nil
	}
	s.pending = nil
	return nil
}

// Sink publishes each row of a SinkMessage to its topic. Write blocks while
// a subscriber is full, until ctx is done. Errors are permanent except a
// done ctx, which is returned as is. Nothing needs closing.
type Sink struct {
	bus     *membus.Bus
	topic   string
	tmpl    *template.Template
	rowkind string
	key     string
}

var _ api.Sink = (*Sink)(nil)

// NewSink builds a memory sink from validated props.
func NewSink(props map[string]any, deps connector.Deps) (api.Sink, error) {
	if deps.Memory == nil {
		return nil, errors.New("memory bus not available")
	}
	s := &Sink{
		bus:     deps.Memory,
		topic:   connector.Get[string](props, "topic"),
		rowkind: connector.Get[string](props, "rowkindField"),
		key:     connector.Get[string](props, "keyField"),
	}
	if strings.Contains(s.topic, "{{") {
		t, err := template.New("topic").Option("missingkey=error").Parse(s.topic)
		if err != nil {
			return nil, fmt.Errorf("parse topic template: %w", err)
		}
		s.tmpl = t
	} else if err := membus.ValidTopic(s.topic); err != nil {
		return nil, err
	}
	return s, nil
}

// Connect does nothing: the bus is always available.
func (s *Sink) Connect(context.Context) error { return nil }

// Write publishes the rows of msg. When msg has no rows, its payload is
// decoded as a JSON object or array of objects. Several rows go as one
// message of several rows (membus.Message.Rows), as eKuiper publishes a
// list, unless each row needs its own topic, rowkind or key.
func (s *Sink) Write(ctx context.Context, msg *api.SinkMessage) error {
	rows := msg.Rows
	if len(rows) == 0 && len(msg.Payload) > 0 {
		var err error
		if rows, err = decodeRows(msg.Payload); err != nil {
			return err
		}
	}
	if len(rows) > 1 && s.tmpl == nil && s.rowkind == "" && s.key == "" {
		return s.bus.Publish(ctx, membus.Message{Topic: s.topic, Rows: rows})
	}
	for _, row := range rows {
		m, err := s.message(row)
		if err != nil {
			return err
		}
		if err := s.bus.Publish(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

func (s *Sink) message(row map[string]any) (membus.Message, error) {
	m := membus.Message{Topic: s.topic, Data: row}
	if s.tmpl != nil {
		var b strings.Builder
		if err := s.tmpl.Execute(&b, row); err != nil {
			return m, fmt.Errorf("evaluate topic template: %w", err)
		}
		m.Topic = b.String()
	}
	if s.rowkind != "" {
		if rk, ok := row[s.rowkind]; ok {
			kind := strings.ToLower(value.ToString(rk))
			switch kind {
			case "insert", "update", "upsert", "delete":
				m.Rowkind = kind
			default:
				return m, fmt.Errorf("invalid rowkind %q in field %s", kind, s.rowkind)
			}
		}
	}
	if s.key != "" {
		m.Key = row[s.key]
	}
	return m, nil
}

// Close does nothing.
func (s *Sink) Close(context.Context) error { return nil }

func decodeRows(payload []byte) ([]map[string]any, error) {
	var v any
	d := json.NewDecoder(strings.NewReader(string(payload)))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("decode payload: %w", err)
	}
	switch x := value.Normalize(v).(type) {
	case map[string]any:
		return []map[string]any{x}, nil
	case []any:
		rows := make([]map[string]any, 0, len(x))
		for _, e := range x {
			m, ok := e.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("decode payload: array element is %s, not an object", value.TypeName(e))
			}
			rows = append(rows, m)
		}
		return rows, nil
	}
	return nil, errors.New("decode payload: not an object or array of objects")
}
