package output

import (
	"encoding/base64"
	"fmt"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig/v3"

	"github.com/rekuiper/rekuiper/internal/format"
	"github.com/rekuiper/rekuiper/internal/value"
)

// FuncMap returns the functions available to sink templates (dataTemplate
// and templated properties), as in eKuiper: the sprig text functions plus
// json (alias of toJson) and base64. Each call returns a new map.
func FuncMap() template.FuncMap {
	fm := sprig.TxtFuncMap()
	fm["json"] = fm["toJson"]
	fm["base64"] = base64Func
	return fm
}

// base64Func encodes the string form of a scalar, the raw bytes of a bytes
// value or the JSON of an object or array in standard base64.
func base64Func(v any) (string, error) {
	var raw []byte
	switch x := v.(type) {
	case nil:
		return "", fmt.Errorf("base64: nil value")
	case []byte:
		raw = x
	case map[string]any, []any:
		b, err := format.AppendJSON(nil, x)
		if err != nil {
			return "", fmt.Errorf("base64: %w", err)
		}
		raw = b
	default:
		raw = []byte(value.ToString(value.Normalize(v)))
	}
	return base64.StdEncoding.EncodeToString(raw), nil
}

// PropTemplate is a sink property that may be a Go template over the
// output row, such as an MQTT topic "alerts/{{.deviceId}}". It is compiled
// once; a value without "{{" renders as itself at no cost. Render is safe for
// concurrent use.
type PropTemplate struct {
	text string
	tmpl *template.Template
}

// NewPropTemplate compiles text as the template of the property name (used
// in error messages).
func NewPropTemplate(name, text string) (*PropTemplate, error) {
	p := &PropTemplate{text: text}
	if !strings.Contains(text, "{{") {
		return p, nil
	}
	t, err := template.New(name).Funcs(FuncMap()).Parse(text)
	if err != nil {
		return nil, fmt.Errorf("parse template of sink property %s: %w", name, err)
	}
	p.tmpl = t
	return p, nil
}

// Static reports whether the property renders the same for every row.
func (p *PropTemplate) Static() bool { return p.tmpl == nil }

// String returns the property's source text.
func (p *PropTemplate) String() string { return p.text }

// Render returns the property value for row.
func (p *PropTemplate) Render(row map[string]any) (string, error) {
	if p.tmpl == nil {
		return p.text, nil
	}
	var sb strings.Builder
	if err := p.tmpl.Execute(&sb, row); err != nil {
		return "", fmt.Errorf("render sink property %s: %w", p.tmpl.Name(), err)
	}
	out := sb.String()
	if err := checkNoValue(p.tmpl.Name(), out); err != nil {
		return "", err
	}
	return out, nil
}

// noValue is what text/template prints for a missing map key or a nil
// value.
const noValue = "<no value>"

// checkNoValue refuses template output that printed a missing or null
// field, such as a topic "alerts/<no value>" from a misspelled key.
// Conditionals over missing fields ({{if .x}}) stay allowed.
func checkNoValue(name, out string) error {
	if strings.Contains(out, noValue) {
		return fmt.Errorf("render sink property %s: the template printed a missing or null field (%q)", name, out)
	}
	return nil
}
