package output

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

type mrow = map[string]any

// mustShaper makes the Shaper of props; an error fails the test.
func mustShaper(t testing.TB, props map[string]any) *Shaper {
	t.Helper()
	s, err := NewShaper(props)
	if err != nil {
		t.Fatalf("NewShaper(%v): %v", props, err)
	}
	return s
}

func TestShape(t *testing.T) {
	two := []mrow{{"id": int64(1), "name": "dev1", "temp": 20.5}, {"id": int64(2), "name": "dev2", "temp": 21.0}}
	tests := []struct {
		name     string
		props    map[string]any
		rows     []mrow
		want     []string // payloads
		wantRows [][]mrow // optional: Rows of each message
	}{
		{name: "default json array", rows: two,
			want:     []string{`[{"id":1,"name":"dev1","temp":20.5},{"id":2,"name":"dev2","temp":21}]`},
			wantRows: [][]mrow{two}},
		{name: "empty emission", rows: []mrow{}, want: []string{`[]`}},
		{name: "empty row kept", rows: []mrow{{}}, want: []string{`[{}]`}},
		{name: "sendSingle", props: map[string]any{"sendSingle": true}, rows: two,
			want:     []string{`{"id":1,"name":"dev1","temp":20.5}`, `{"id":2,"name":"dev2","temp":21}`},
			wantRows: [][]mrow{{two[0]}, {two[1]}}},
		{name: "sendSingle nil row", props: map[string]any{"sendSingle": true}, rows: []mrow{nil}, want: []string{`null`}},
		{name: "omitIfEmpty no rows", props: map[string]any{"omitIfEmpty": true}, rows: nil, want: nil},
		{name: "omitIfEmpty empty row", props: map[string]any{"omitIfEmpty": true}, rows: []mrow{{}}, want: nil},
		{name: "omitIfEmpty sendSingle skips empty rows", props: map[string]any{"omitIfEmpty": true, "sendSingle": true},
			rows: []mrow{{}, {"a": int64(1)}, {}}, want: []string{`{"a":1}`}},
		{name: "omitIfEmpty keeps data", props: map[string]any{"omitIfEmpty": true}, rows: []mrow{{}, {"a": int64(1)}},
			want: []string{`[{},{"a":1}]`}},
		{name: "template per row", props: map[string]any{"sendSingle": true, "dataTemplate": `{"t":{{.temp}},"who":"{{.name}}"}`},
			rows:     two,
			want:     []string{`{"t":20.5,"who":"dev1"}`, `{"t":21,"who":"dev2"}`},
			wantRows: [][]mrow{{{"t": 20.5, "who": "dev1"}}, {{"t": int64(21), "who": "dev2"}}}},
		{name: "template over emission, text output", props: map[string]any{"dataTemplate": `{{range $i, $r := .}}{{if $i}};{{end}}{{$r.id}}{{end}}`},
			rows: two, want: []string{`1;2`}, wantRows: [][]mrow{two}},
		{name: "template sprig and json funcs", props: map[string]any{"sendSingle": true, "dataTemplate": `{{.name | upper}} {{json .}} {{base64 .name}}`},
			rows: two[:1], want: []string{`DEV1 {"id":1,"name":"dev1","temp":20.5} ZGV2MQ==`}},
		{name: "template conditional over a missing key", props: map[string]any{"sendSingle": true, "dataTemplate": `{{if .nope}}x{{else}}{{.id}}{{end}}`},
			rows: two[:1], want: []string{`1`}},
		{name: "fields select and null for absent", props: map[string]any{"fields": []any{"name", "missing"}}, rows: two,
			want:     []string{`[{"missing":null,"name":"dev1"},{"missing":null,"name":"dev2"}]`},
			wantRows: [][]mrow{{{"name": "dev1", "missing": nil}, {"name": "dev2", "missing": nil}}}},
		{name: "excludeFields", props: map[string]any{"excludeFields": []string{"temp", "id"}, "sendSingle": true}, rows: two,
			want: []string{`{"name":"dev1"}`, `{"name":"dev2"}`}},
		{name: "dataField per row", props: map[string]any{"dataField": "data", "sendSingle": true},
			rows: []mrow{{"data": mrow{"x": int64(1)}}, {"data": mrow{"x": int64(2)}}},
			want: []string{`{"x":1}`, `{"x":2}`}, wantRows: [][]mrow{{{"x": int64(1)}}, {{"x": int64(2)}}}},
		{name: "dataField of emission takes first row", props: map[string]any{"dataField": "arr"},
			rows: []mrow{{"arr": []any{mrow{"x": int64(1)}, mrow{"x": int64(2)}}}, {"arr": []any{}}},
			want: []string{`[{"x":1},{"x":2}]`}, wantRows: [][]mrow{{{"x": int64(1)}, {"x": int64(2)}}}},
		{name: "tableDataField alias, scalar value", props: map[string]any{"tableDataField": "v", "sendSingle": true},
			rows: []mrow{{"v": int64(5)}}, want: []string{`5`}, wantRows: [][]mrow{{{"v": int64(5)}}}},
		{name: "dataField on empty emission", props: map[string]any{"dataField": "v"}, rows: []mrow{}, want: []string{`null`}},
		{name: "template then dataField and fields", props: map[string]any{"sendSingle": true,
			"dataTemplate": `{"payload":{"a":{{.id}},"b":"{{.name}}","c":true}}`, "dataField": "payload", "fields": []any{"b", "a"}},
			rows: two[:1], want: []string{`{"a":1,"b":"dev1"}`}},
		{name: "delimited with fields order", props: map[string]any{"format": "delimited", "fields": []any{"name", "id"}, "sendSingle": true},
			rows: two, want: []string{`dev1,1`, `dev2,2`}},
		{name: "delimited emission with header", props: map[string]any{"format": "delimited", "delimiter": ";", "hasHeader": true},
			rows: two, want: []string{"id;name;temp\n1;dev1;20.5\n2;dev2;21"}},
		{name: "binary dataField", props: map[string]any{"format": "binary", "dataField": "img", "sendSingle": true},
			rows: []mrow{{"img": []byte{0xff, 0x00}, "id": int64(1)}}, want: []string{"\xff\x00"}},
		{name: "urlencoded", props: map[string]any{"format": "urlencoded", "sendSingle": true},
			rows: two[:1], want: []string{`id=1&name=dev1&temp=20.5`}},
		{name: "template ignores format", props: map[string]any{"format": "delimited", "dataTemplate": `{{len .}} rows`},
			rows: two, want: []string{`2 rows`}},
		{name: "error rows pass through", rows: []mrow{{"error": "run Select error: boom"}},
			want: []string{`[{"error":"run Select error: boom"}]`}},
		{name: "error rows through template", props: map[string]any{"sendSingle": true, "dataTemplate": `ERR {{.error}}`},
			rows: []mrow{{"error": "boom"}}, want: []string{`ERR boom`}},
		{name: "datetime and bytes", props: map[string]any{"sendSingle": true},
			rows: []mrow{{"t": time.Date(2023, 11, 14, 22, 13, 20, 0, time.UTC), "b": []byte("hi")}},
			want: []string{`{"b":"aGk=","t":"2023-11-14T22:13:20Z"}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustShaper(t, tt.props)
			msgs, err := s.Shape(tt.rows)
			if err != nil {
				t.Fatalf("Shape: %v", err)
			}
			var got []string
			for _, m := range msgs {
				got = append(got, string(m.Payload))
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("payloads = %q, want %q", got, tt.want)
			}
			if tt.wantRows != nil {
				for i, m := range msgs {
					if i < len(tt.wantRows) && !reflect.DeepEqual(m.Rows, tt.wantRows[i]) {
						t.Errorf("message %d rows = %#v, want %#v", i, m.Rows, tt.wantRows[i])
					}
				}
			}
		})
	}
}

func TestShapeDoesNotModifyInput(t *testing.T) {
	rows := []mrow{{"a": int64(1), "b": int64(2)}}
	s := mustShaper(t, map[string]any{"excludeFields": []any{"b"}})
	msgs, err := s.Shape(rows)
	if err != nil {
		t.Fatal(err)
	}
	if string(msgs[0].Payload) != `[{"a":1}]` {
		t.Errorf("payload = %s", msgs[0].Payload)
	}
	if len(rows[0]) != 2 {
		t.Errorf("input row modified: %v", rows[0])
	}
	again, err := s.Shape(rows)
	if err != nil {
		t.Fatal(err)
	}
	if string(msgs[0].Payload) != `[{"a":1}]` || string(again[0].Payload) != `[{"a":1}]` {
		t.Errorf("payloads share a buffer: %s %s", msgs[0].Payload, again[0].Payload)
	}
}

func TestShapeErrors(t *testing.T) {
	tests := []struct {
		name  string
		props map[string]any
		rows  []mrow
		want  string // error prefix
	}{
		{name: "template execution", props: map[string]any{"sendSingle": true, "dataTemplate": `{{index .a 5}}`},
			rows: []mrow{{"a": []any{int64(1)}}},
			want: "execute sink property dataTemplate: template: dataTemplate:1:2: executing \"dataTemplate\" at <index .a 5>: error calling index: index out of range: 5"},
		{name: "template output not json", props: map[string]any{"sendSingle": true, "dataTemplate": `x{{.a}}`, "fields": []any{"a"}},
			rows: []mrow{{"a": int64(1)}},
			want: "dataTemplate output must be JSON to apply dataField or fields: decode json: invalid character 'x' looking for beginning of value at offset 0"},
		{name: "fields on scalar", props: map[string]any{"sendSingle": true, "dataField": "a", "fields": []any{"x"}},
			rows: []mrow{{"a": int64(1)}}, want: "sink property fields: cannot select from int64"},
		{name: "dataField on array of scalars", props: map[string]any{"dataTemplate": `[1,2]`, "dataField": "a"},
			rows: []mrow{{"a": int64(1)}}, want: `sink property dataField "a": cannot select from an array of int64`},
		{name: "template prints a missing key", props: map[string]any{"sendSingle": true, "dataTemplate": `{"t":{{.nope}}}`},
			rows: []mrow{{"a": int64(1)}}, want: `render sink property dataTemplate: the template printed a missing or null field ("{\"t\":<no value>}")`},
		{name: "binary needs one field", props: map[string]any{"format": "binary", "sendSingle": true},
			rows: []mrow{{"a": int64(1), "b": int64(2)}}, want: "encode binary: need a row with exactly one field, got 2 fields"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustShaper(t, tt.props)
			msgs, err := s.Shape(tt.rows)
			if err == nil {
				t.Fatalf("Shape = %v, want error %q", msgs, tt.want)
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error = %q, want prefix %q", err, tt.want)
			}
		})
	}
}

func TestNewShaperValidation(t *testing.T) {
	tests := []struct {
		props map[string]any
		want  string
	}{
		{map[string]any{"sendSingle": "true"}, "invalid sink property sendSingle: must be a bool, got string"},
		{map[string]any{"omitIfEmpty": int64(1)}, "invalid sink property omitIfEmpty: must be a bool, got int64"},
		{map[string]any{"dataTemplate": int64(1)}, "invalid sink property dataTemplate: must be a string, got int64"},
		{map[string]any{"dataField": true}, "invalid sink property dataField: must be a string, got bool"},
		{map[string]any{"fields": "a,b"}, "invalid sink property fields: must be a list of strings, got string"},
		{map[string]any{"fields": []any{"a", int64(2)}}, "invalid sink property fields: element 1 must be a string, got int64"},
		{map[string]any{"excludeFields": 3.5}, "invalid sink property excludeFields: must be a list of strings, got float64"},
		{map[string]any{"fields": []any{"a"}, "excludeFields": []any{"b"}}, "invalid sink properties: fields and excludeFields cannot both be set"},
		{map[string]any{"format": "xml"}, `invalid sink property format: unknown format "xml"`},
		{map[string]any{"format": int64(1)}, "invalid sink property format: must be a string, got int64"},
		{map[string]any{"delimiter": []any{}}, "invalid sink property delimiter: must be a string, got []interface {}"},
		{map[string]any{"hasHeader": "yes"}, "invalid sink property hasHeader: must be a bool, got string"},
		{map[string]any{"dataTemplate": "{{.a"}, "parse sink property dataTemplate: template: dataTemplate:1: unclosed action"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			_, err := NewShaper(tt.props)
			if err == nil || err.Error() != tt.want {
				t.Errorf("NewShaper(%v) error = %v, want %q", tt.props, err, tt.want)
			}
		})
	}
	if _, err := NewShaper(map[string]any{"sendSingle": nil, "fields": nil, "topic": 7, "format": "JSON"}); err != nil {
		t.Errorf("null and foreign props must be accepted: %v", err)
	}
}

func TestPropTemplate(t *testing.T) {
	tests := []struct {
		name, text string
		row        mrow
		want       string
		static     bool
		wantErr    string
	}{
		{name: "static", text: "alerts/all", row: mrow{"deviceId": "d1"}, want: "alerts/all", static: true},
		{name: "field", text: "alerts/{{.deviceId}}", row: mrow{"deviceId": "d1"}, want: "alerts/d1"},
		{name: "sprig", text: `{{.deviceId | upper | trunc 2}}/{{.n}}`, row: mrow{"deviceId": "dev", "n": int64(3)}, want: "DE/3"},
		{name: "missing", text: "a/{{.x}}", row: mrow{},
			wantErr: `render sink property topic: the template printed a missing or null field ("a/<no value>")`},
		{name: "null", text: "a/{{.x}}", row: mrow{"x": nil},
			wantErr: `render sink property topic: the template printed a missing or null field ("a/<no value>")`},
		{name: "conditional over missing", text: "a/{{if .x}}{{.x}}{{else}}none{{end}}", row: mrow{}, want: "a/none"},
		{name: "exec error", text: "{{index .a 2}}", row: mrow{"a": []any{}},
			wantErr: `render sink property topic: template: topic:1:2: executing "topic" at <index .a 2>: error calling index: index out of range: 2`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewPropTemplate("topic", tt.text)
			if err != nil {
				t.Fatal(err)
			}
			if p.Static() != tt.static || p.String() != tt.text {
				t.Errorf("Static() = %v, String() = %q", p.Static(), p.String())
			}
			got, err := p.Render(tt.row)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("Render error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("Render = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	if _, err := NewPropTemplate("topic", "a/{{.x"); err == nil || !strings.HasPrefix(err.Error(), "parse template of sink property topic: ") {
		t.Errorf("parse error = %v", err)
	}
}

func TestBase64Func(t *testing.T) {
	tests := []struct {
		in   any
		want string
	}{
		{"hi", "aGk="}, {int64(12), "MTI="}, {12, "MTI="}, {2.5, "Mi41"}, {true, "dHJ1ZQ=="},
		{[]byte{1, 2}, "AQI="}, {map[string]any{"b": int64(1), "a": "x"}, "eyJhIjoieCIsImIiOjF9"},
	}
	for _, tt := range tests {
		got, err := base64Func(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("base64(%#v) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	if _, err := base64Func(nil); err == nil {
		t.Error("base64(nil): want error")
	}
}
