package sqldb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/value"
)

// SourceSpec is the sql source's property spec. The stream's DATASOURCE
// names the table when internalSqlQueryCfg has none.
func SourceSpec() connector.Spec {
	return connector.Spec{Props: append(urlProps(),
		connector.Prop{Name: "datasource", Type: connector.TypeString, Target: true, Doc: "table to poll"},
		connector.Prop{Name: "interval", Type: connector.TypeDuration, Default: "10s", Doc: "time between two polls"},
		connector.Prop{Name: "internalSqlQueryCfg", Type: connector.TypeMap, Doc: "{table, limit, indexFields:[{indexField, indexValue}]}"},
		connector.Prop{Name: "templateSqlQueryCfg", Type: connector.TypeMap, Doc: "{templateSql, indexFields:[{indexField, indexValue}]}; the template sees the index values by field name"},
	), Ping: true}
}

// Source polls a table (rows whose index fields are greater than the last
// values read, in index order, at most limit per poll) or a templated
// query. It polls at Connect and then every interval on Deps.Clock, and
// returns the rows one per Read as Data. It is Rewindable: the offset is
// the index field values of the last row returned. Without index fields
// each poll returns the whole result again.
type Source struct {
	d        dialect
	clk      clock.Clock
	interval time.Duration
	table    string
	limit    int64
	tmpl     *template.Template
	index    []string
	initial  map[string]any

	h    database
	db   *sql.DB
	buf  []map[string]any
	last map[string]any // index values of the last row returned
	due  time.Time
}

var (
	_ api.Source     = (*Source)(nil)
	_ api.Rewindable = (*Source)(nil)
)

// NewSource builds a sql source from validated props.
func NewSource(props map[string]any, deps connector.Deps) (api.Source, error) {
	d, err := parseURL(props)
	if err != nil {
		return nil, err
	}
	if deps.Clock == nil {
		return nil, errors.New("clock not available")
	}
	s := &Source{d: d, clk: deps.Clock, interval: connector.Get[time.Duration](props, "interval"), initial: map[string]any{},
		h: database{reg: deps.Connections, d: d}}
	internal := connector.Get[map[string]any](props, "internalSqlQueryCfg")
	templ := connector.Get[map[string]any](props, "templateSqlQueryCfg")
	var idx any
	switch {
	case templ != nil:
		text, _ := templ["templateSql"].(string)
		if strings.TrimSpace(text) == "" {
			return nil, errors.New("templateSqlQueryCfg.templateSql is empty")
		}
		if s.tmpl, err = template.New("templateSql").Option("missingkey=zero").Parse(text); err != nil {
			return nil, fmt.Errorf("templateSqlQueryCfg.templateSql: %w", err)
		}
		idx = templ["indexFields"]
	default:
		table := connector.Get[string](props, "datasource")
		if internal != nil {
			if t, ok := internal["table"].(string); ok && t != "" {
				table = t
			}
			if l, ok := internal["limit"]; ok {
				if s.limit, err = value.ToInt(value.Normalize(l)); err != nil || s.limit < 0 {
					return nil, fmt.Errorf("internalSqlQueryCfg.limit: %v is not a non-negative integer", l)
				}
			}
			idx = internal["indexFields"]
			if idx == nil {
				if f, ok := internal["indexField"].(string); ok && f != "" {
					idx = []any{map[string]any{"indexField": f, "indexValue": internal["indexValue"]}}
				}
			}
		}
		if table == "" {
			return nil, errors.New("no table: set internalSqlQueryCfg.table, templateSqlQueryCfg or the stream's DATASOURCE")
		}
		if s.table, err = quoteIdent(table); err != nil {
			return nil, fmt.Errorf("table: %w", err)
		}
	}
	if err := s.parseIndex(idx); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Source) parseIndex(idx any) error {
	if idx == nil {
		return nil
	}
	list, ok := idx.([]any)
	if !ok {
		return fmt.Errorf("indexFields must be a list, not %T", idx)
	}
	for i, e := range list {
		switch x := e.(type) {
		case string:
			s.index = append(s.index, x)
		case map[string]any:
			f, _ := x["indexField"].(string)
			if f == "" {
				return fmt.Errorf("indexFields[%d].indexField is empty", i)
			}
			s.index = append(s.index, f)
			if v, ok := x["indexValue"]; ok && v != nil {
				s.initial[f] = value.Normalize(v)
			}
		default:
			return fmt.Errorf("indexFields[%d] is %T, want a name or {indexField, indexValue}", i, e)
		}
	}
	if len(s.initial) > 0 && len(s.initial) != len(s.index) {
		return errors.New("indexFields: give an indexValue for every index field or for none")
	}
	return nil
}

// Connect takes the database pool shared with the other connectors using
// the same url (see database); the first Read polls at once.
func (s *Source) Connect(ctx context.Context) error {
	s.db = nil
	db, err := s.h.connect(ctx)
	if err != nil {
		return err
	}
	s.db, s.buf, s.due = db, nil, s.clk.Now()
	if s.last == nil && len(s.initial) > 0 {
		s.last = s.initial
	}
	return nil
}

// Read returns the next row, polling when none is buffered.
func (s *Source) Read(ctx context.Context) (*api.Message, error) {
	if s.db == nil {
		return nil, errors.New("sql source not connected")
	}
	for len(s.buf) == 0 {
		if err := connector.WaitUntil(ctx, s.clk, s.due); err != nil {
			return nil, err
		}
		s.due = s.clk.Now().Add(s.interval)
		rows, err := s.poll(ctx)
		if err != nil {
			return nil, err
		}
		s.buf = rows
	}
	row := s.buf[0]
	s.buf = s.buf[1:]
	if len(s.index) > 0 {
		last := make(map[string]any, len(s.index))
		for _, f := range s.index {
			last[f] = row[f]
		}
		s.last = last
	}
	return &api.Message{Data: row}, nil
}

func (s *Source) query() (string, []any, error) {
	if s.tmpl != nil {
		var b strings.Builder
		data := map[string]any{}
		for _, f := range s.index {
			data[f] = s.last[f]
		}
		if err := s.tmpl.Execute(&b, data); err != nil {
			return "", nil, fmt.Errorf("render templateSql: %w", err)
		}
		return b.String(), nil, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "SELECT * FROM %s", s.table)
	var args []any
	if len(s.index) > 0 {
		cols := quoteCols(s.index)
		if s.last != nil {
			ph := make([]string, len(s.index))
			for i, f := range s.index {
				args = append(args, dbValue(s.last[f]))
				ph[i] = s.d.placeholder(i + 1)
			}
			if len(s.index) == 1 {
				fmt.Fprintf(&b, " WHERE %s > %s", cols, ph[0])
			} else {
				fmt.Fprintf(&b, " WHERE (%s) > (%s)", cols, strings.Join(ph, ", "))
			}
		}
		fmt.Fprintf(&b, " ORDER BY %s", cols)
	}
	if s.limit > 0 {
		fmt.Fprintf(&b, " LIMIT %d", s.limit)
	}
	return b.String(), args, nil
}

func (s *Source) poll(ctx context.Context) ([]map[string]any, error) {
	q, args, err := s.query()
	if err != nil {
		return nil, err
	}
	rows, err := queryRows(ctx, s.db, q, args...)
	return rows, s.h.report(err)
}

// queryRows runs q and returns its rows as runtime values: text columns as
// strings, binary columns as []byte.
func queryRows(ctx context.Context, db *sql.DB, q string, args ...any) ([]map[string]any, error) {
	rs, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, classify(fmt.Errorf("query %q: %w", q, err))
	}
	defer rs.Close()
	types, err := rs.ColumnTypes()
	if err != nil {
		return nil, fmt.Errorf("query %q: %w", q, err)
	}
	var out []map[string]any
	for rs.Next() {
		vals := make([]any, len(types))
		ptrs := make([]any, len(types))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rs.Scan(ptrs...); err != nil {
			return nil, fmt.Errorf("scan row of %q: %w", q, err)
		}
		row := make(map[string]any, len(types))
		for i, ct := range types {
			v := vals[i]
			if b, ok := v.([]byte); ok {
				tn := strings.ToUpper(ct.DatabaseTypeName())
				if tn != "BLOB" && tn != "BYTEA" {
					v = string(b)
				}
			}
			row[ct.Name()] = value.Normalize(v)
		}
		out = append(out, row)
	}
	if err := rs.Err(); err != nil {
		return nil, classify(fmt.Errorf("read rows of %q: %w", q, err))
	}
	return out, nil
}

// Close releases the database pool (the last connector using it closes
// it).
func (s *Source) Close(context.Context) error {
	s.buf = nil
	s.db = nil
	return s.h.release()
}

// indexValue is one typed index value of an offset.
type indexValue struct {
	Field string `json:"f"`
	Type  string `json:"t"`
	Value string `json:"v"`
}

type sourceOffset struct {
	V     int          `json:"v"`
	Index []indexValue `json:"index"`
}

// Offset returns the index values of the last row returned (none before
// the first row), as {"v":1,"index":[{"f","t","v"}]}.
func (s *Source) Offset() ([]byte, error) {
	o := sourceOffset{V: 1, Index: []indexValue{}}
	for _, f := range s.index {
		if s.last == nil {
			break
		}
		v := s.last[f]
		iv := indexValue{Field: f}
		switch x := v.(type) {
		case time.Time:
			iv.Type, iv.Value = "time", x.Format(time.RFC3339Nano)
		case nil:
			iv.Type = "null"
		case int64:
			iv.Type, iv.Value = "int", strconv.FormatInt(x, 10)
		case float64:
			iv.Type, iv.Value = "float", strconv.FormatFloat(x, 'g', -1, 64)
		case bool:
			iv.Type, iv.Value = "bool", strconv.FormatBool(x)
		case []byte:
			iv.Type, iv.Value = "bytes", string(x)
		default:
			iv.Type, iv.Value = "string", value.ToString(x)
		}
		o.Index = append(o.Index, iv)
	}
	return json.Marshal(o)
}

// Rewind makes the next poll return the rows after the index values in b
// and drops buffered rows. It is idempotent.
func (s *Source) Rewind(b []byte) error {
	var o sourceOffset
	if err := connector.DecodeOffset("sql", b, &o); err != nil {
		return err
	}
	if len(o.Index) == 0 {
		s.last = nil
		s.buf = nil
		return nil
	}
	last := map[string]any{}
	for _, iv := range o.Index {
		v, err := decodeIndex(iv)
		if err != nil {
			return fmt.Errorf("decode sql offset: %w", err)
		}
		last[iv.Field] = v
	}
	for _, f := range s.index {
		if _, ok := last[f]; !ok {
			return fmt.Errorf("sql offset lacks index field %s", f)
		}
	}
	s.last, s.buf = last, nil
	s.due = s.clk.Now()
	return nil
}

func decodeIndex(iv indexValue) (any, error) {
	switch iv.Type {
	case "int":
		return strconv.ParseInt(iv.Value, 10, 64)
	case "float":
		return strconv.ParseFloat(iv.Value, 64)
	case "bool":
		return strconv.ParseBool(iv.Value)
	case "time":
		return time.Parse(time.RFC3339Nano, iv.Value)
	case "bytes":
		return []byte(iv.Value), nil
	case "string":
		return iv.Value, nil
	case "null", "":
		return nil, nil
	}
	return nil, fmt.Errorf("index field %s has unsupported type %s", iv.Field, iv.Type)
}
