// Package output turns a rule's emissions into sink messages, applying
// eKuiper's common sink properties: sendSingle, dataTemplate, dataField,
// fields, excludeFields, omitIfEmpty and format.
package output

import (
	"bytes"
	"errors"
	"fmt"
	"text/template"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/format"
	"github.com/rekuiper/rekuiper/internal/row"
	"github.com/rekuiper/rekuiper/internal/value"
)

// Shaper shapes emissions for one sink. It keeps encoder scratch buffers, so
// it is not safe for concurrent use: a sink with concurrency > 1 needs one
// Shaper per instance.
//
// The steps, for each row (sendSingle) or for the whole emission:
//  1. dataTemplate, when set, is executed with the row (map[string]any) or
//     the rows ([]map[string]any). Without dataField and fields its output
//     is the payload as is, whatever the format.
//  2. dataField picks one field: of the row, or of the first row of the
//     emission (eKuiper behaviour). After a template, the template output is
//     decoded as JSON first.
//  3. fields keeps the listed fields in that order (absent ones as null);
//     excludeFields drops the listed ones.
//  4. The result is encoded with format (json by default).
//
// Error rows ({"error": "..."}) are shaped like any other row. Shape never
// modifies the rows it is given; messages may share row maps with them.
type Shaper struct {
	sendSingle  bool
	omitIfEmpty bool
	dataField   string
	fields      []string
	exclude     []string
	tmpl        *template.Template
	enc         format.Encoder
	json        *format.JSONCodec // decodes template output
	buf         bytes.Buffer      // template output scratch
	msg         api.SinkMessage   // ShapeSlots' message
	view        *format.SlotView  // ShapeSlots' fields or excludeFields
}

// NewShaper validates the common sink properties in props and returns a
// Shaper for them. A property of the wrong type is an error naming it.
func NewShaper(props map[string]any) (*Shaper, error) {
	return NewShaperWith(props, nil)
}

// NewShaperWith is NewShaper with the schema registry that resolves the
// schemaId of format protobuf.
func NewShaperWith(props map[string]any, schemas format.Schemas) (*Shaper, error) {
	s := &Shaper{json: format.NewJSON()}
	var err error
	if s.sendSingle, err = boolProp(props, PropSendSingle); err != nil {
		return nil, err
	}
	if s.omitIfEmpty, err = boolProp(props, PropOmitIfEmpty); err != nil {
		return nil, err
	}
	if s.dataField, err = stringProp(props, PropDataField); err != nil {
		return nil, err
	}
	if s.dataField == "" {
		if s.dataField, err = stringProp(props, PropTableDataField); err != nil {
			return nil, err
		}
	}
	if s.fields, err = stringsProp(props, PropFields); err != nil {
		return nil, err
	}
	if s.exclude, err = stringsProp(props, PropExcludeFields); err != nil {
		return nil, err
	}
	if len(s.fields) > 0 && len(s.exclude) > 0 {
		return nil, errors.New("invalid sink properties: fields and excludeFields cannot both be set")
	}
	dt, err := stringProp(props, PropDataTemplate)
	if err != nil {
		return nil, err
	}
	if dt != "" {
		if s.tmpl, err = template.New(PropDataTemplate).Funcs(FuncMap()).Parse(dt); err != nil {
			return nil, fmt.Errorf("parse sink property dataTemplate: %w", err)
		}
	}
	var opts format.Options
	name, err := stringProp(props, PropFormat)
	if err != nil {
		return nil, err
	}
	if opts.SchemaID, err = stringProp(props, PropSchemaID); err != nil {
		return nil, err
	}
	if opts.Delimiter, err = stringProp(props, PropDelimiter); err != nil {
		return nil, err
	}
	if opts.HasHeader, err = boolProp(props, PropHasHeader); err != nil {
		return nil, err
	}
	opts.Fields = s.fields
	opts.Schemas = schemas
	if name == "" || name == format.JSON {
		s.enc = s.json
	} else {
		c, err := format.New(name, opts)
		if err != nil {
			return nil, fmt.Errorf("invalid sink property format: %w", err)
		}
		s.enc = c
	}
	return s, nil
}

// Shape returns the messages to deliver for one emission: none when
// omitIfEmpty is set and the emission is empty (no rows, or only empty
// rows), one per non-empty row with sendSingle, else exactly one.
func (s *Shaper) Shape(rows []map[string]any) ([]*api.SinkMessage, error) {
	if s.omitIfEmpty && allEmpty(rows) {
		return nil, nil
	}
	if !s.sendSingle {
		msg, err := s.shape(false, nil, rows)
		if err != nil {
			return nil, err
		}
		// One allocation for the message and the slice pointing at it.
		one := &struct {
			ptr [1]*api.SinkMessage
			msg api.SinkMessage
		}{msg: msg}
		one.ptr[0] = &one.msg
		return one.ptr[:], nil
	}
	msgs := make([]api.SinkMessage, 0, len(rows))
	for i, r := range rows {
		if s.omitIfEmpty && len(r) == 0 {
			continue
		}
		msg, err := s.shape(true, r, rows[i:i+1:i+1])
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, msg)
	}
	out := make([]*api.SinkMessage, len(msgs))
	for i := range msgs {
		out[i] = &msgs[i]
	}
	return out, nil
}

// SendSingle reports whether each row becomes a message of its own.
func (s *Shaper) SendSingle() bool { return s.sendSingle }

// SlotsOK reports whether ShapeSlots can shape emissions for these
// properties: format json, without dataTemplate and dataField.
func (s *Shaper) SlotsOK() bool {
	return s.tmpl == nil && s.dataField == "" && s.enc == s.json
}

// slotView returns the view that applies fields or excludeFields to rows
// with cols, nil when neither is set; built once per set of columns.
func (s *Shaper) slotView(cols *row.Columns) *format.SlotView {
	if len(s.fields) == 0 && len(s.exclude) == 0 {
		return nil
	}
	if s.view == nil || s.view.Columns() != cols {
		s.view = format.NewSlotView(cols, s.fields, s.exclude)
	}
	return s.view
}

// ShapeSlots shapes one emission of slot rows and calls write with each
// message, in order: the messages Shape returns for rows.Maps(), without
// their Rows. The message and its payload are the shaper's scratch, valid
// only during the call to write. It stops at the first error. Only for a
// shaper whose SlotsOK reports true.
func (s *Shaper) ShapeSlots(rows *row.SlotRows, write func(*api.SinkMessage) error) error {
	if s.omitIfEmpty && rows.Empty() {
		return nil
	}
	view := s.slotView(rows.Columns())
	if !s.sendSingle {
		payload, err := s.json.EncodeSlots(rows, view)
		if err != nil {
			return err
		}
		s.msg = api.SinkMessage{Payload: payload}
		return write(&s.msg)
	}
	for i := range rows.Len() {
		if s.omitIfEmpty && rows.RowEmpty(i) {
			continue
		}
		payload, err := s.json.EncodeSlotRow(rows, i, view)
		if err != nil {
			return err
		}
		s.msg = api.SinkMessage{Payload: payload}
		if err := write(&s.msg); err != nil {
			return err
		}
	}
	return nil
}

func allEmpty(rows []map[string]any) bool {
	for _, r := range rows {
		if len(r) > 0 {
			return false
		}
	}
	return true
}

// transforms reports whether any step other than encoding applies.
func (s *Shaper) transforms() bool {
	return s.tmpl != nil || s.dataField != "" || len(s.fields) > 0 || len(s.exclude) > 0
}

// shape builds one message from row (single, for sendSingle; rows then
// holds just row) or from the rows of an emission.
func (s *Shaper) shape(single bool, row map[string]any, rows []map[string]any) (api.SinkMessage, error) {
	if !s.transforms() {
		var (
			payload []byte
			err     error
		)
		if single {
			payload, err = s.enc.EncodeRow(row)
		} else {
			payload, err = s.enc.Encode(rows)
		}
		if err != nil {
			return api.SinkMessage{}, err
		}
		return api.SinkMessage{Rows: rows, Payload: payload}, nil
	}
	var v any = rows
	if single {
		v = row
	}
	if s.tmpl != nil {
		s.buf.Reset()
		if err := s.tmpl.Execute(&s.buf, v); err != nil {
			return api.SinkMessage{}, fmt.Errorf("execute sink property dataTemplate: %w", err)
		}
		if bytes.Contains(s.buf.Bytes(), []byte(noValue)) {
			return api.SinkMessage{}, checkNoValue(PropDataTemplate, s.buf.String())
		}
		out := bytes.Clone(s.buf.Bytes())
		if s.dataField == "" && len(s.fields) == 0 && len(s.exclude) == 0 {
			return api.SinkMessage{Rows: s.templateRows(out, rows), Payload: out}, nil
		}
		var err error
		if v, err = s.json.DecodeValue(out); err != nil {
			return api.SinkMessage{}, fmt.Errorf("dataTemplate output must be JSON to apply dataField or fields: %w", err)
		}
	}
	if s.dataField != "" {
		var err error
		if v, err = pickField(v, s.dataField); err != nil {
			return api.SinkMessage{}, err
		}
	}
	if len(s.fields) > 0 || len(s.exclude) > 0 {
		var err error
		if v, err = s.selectFields(v); err != nil {
			return api.SinkMessage{}, err
		}
	}
	return s.encode(v, rows)
}

// templateRows returns the rows a tuple sink sees for a template payload:
// the payload decoded as JSON when it is an object or an array of objects,
// else the input rows.
func (s *Shaper) templateRows(payload []byte, rows []map[string]any) []map[string]any {
	if decoded, err := s.json.Decode(payload); err == nil {
		return decoded
	}
	return rows
}

// pickField returns the field of a row, or of the first row of a list.
func pickField(v any, field string) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		return x[field], nil
	case []map[string]any:
		if len(x) == 0 {
			return nil, nil
		}
		return x[0][field], nil
	case []any:
		if len(x) == 0 {
			return nil, nil
		}
		if m, ok := x[0].(map[string]any); ok {
			return m[field], nil
		}
		return nil, fmt.Errorf("sink property dataField %q: cannot select from an array of %s", field, value.TypeName(x[0]))
	}
	return nil, fmt.Errorf("sink property dataField %q: cannot select from %s", field, value.TypeName(v))
}

// selectFields applies fields or excludeFields to a row or a list of rows,
// returning new maps.
func (s *Shaper) selectFields(v any) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		return s.selectRow(x), nil
	case []map[string]any:
		out := make([]map[string]any, len(x))
		for i, r := range x {
			out[i] = s.selectRow(r)
		}
		return out, nil
	case []any:
		out := make([]map[string]any, len(x))
		for i, e := range x {
			r, ok := e.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("sink property fields: cannot select from an array element of type %s", value.TypeName(e))
			}
			out[i] = s.selectRow(r)
		}
		return out, nil
	}
	return nil, fmt.Errorf("sink property fields: cannot select from %s", value.TypeName(v))
}

func (s *Shaper) selectRow(r map[string]any) map[string]any {
	if len(s.fields) > 0 {
		out := make(map[string]any, len(s.fields))
		for _, f := range s.fields {
			out[f] = r[f]
		}
		return out
	}
	out := make(map[string]any, len(r))
	for k, v := range r {
		out[k] = v
	}
	for _, f := range s.exclude {
		delete(out, f)
	}
	return out
}

// encode encodes the shaped value v. The message's rows are the shaped rows
// when v is a row or a list of rows, else (a scalar dataField value) the
// input rows.
func (s *Shaper) encode(v any, rows []map[string]any) (api.SinkMessage, error) {
	var (
		payload []byte
		err     error
	)
	switch x := v.(type) {
	case map[string]any:
		payload, err = s.enc.EncodeRow(x)
		rows = []map[string]any{x}
	case []map[string]any:
		payload, err = s.enc.Encode(x)
		rows = x
	default:
		if list, ok := asRows(v); ok {
			payload, err = s.enc.Encode(list)
			rows = list
		} else {
			payload, err = s.enc.EncodeValue(v)
		}
	}
	if err != nil {
		return api.SinkMessage{}, err
	}
	return api.SinkMessage{Rows: rows, Payload: payload}, nil
}

// asRows converts an array whose elements are all objects to rows.
func asRows(v any) ([]map[string]any, bool) {
	arr, ok := v.([]any)
	if !ok {
		return nil, false
	}
	rows := make([]map[string]any, len(arr))
	for i, e := range arr {
		m, ok := e.(map[string]any)
		if !ok {
			return nil, false
		}
		rows[i] = m
	}
	return rows, true
}
