package output

import (
	"fmt"

	"github.com/rekuiper/rekuiper/internal/value"
)

// Sink property names handled by the Shaper (eKuiper's common sink
// properties). Other properties belong to the connector and are ignored.
const (
	PropSendSingle     = "sendSingle"
	PropOmitIfEmpty    = "omitIfEmpty"
	PropDataTemplate   = "dataTemplate"
	PropFields         = "fields"
	PropExcludeFields  = "excludeFields"
	PropDataField      = "dataField"
	PropTableDataField = "tableDataField" // alias of dataField
	PropFormat         = "format"
	PropSchemaID       = "schemaId"
	PropDelimiter      = "delimiter"
	PropHasHeader      = "hasHeader"
)

// boolProp reads an optional boolean property; absent or null is false.
func boolProp(props map[string]any, name string) (bool, error) {
	v, ok := props[name]
	if !ok || v == nil {
		return false, nil
	}
	b, ok := v.(bool)
	if !ok {
		return false, propTypeError(name, "a bool", v)
	}
	return b, nil
}

// stringProp reads an optional string property; absent or null is "".
func stringProp(props map[string]any, name string) (string, error) {
	v, ok := props[name]
	if !ok || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", propTypeError(name, "a string", v)
	}
	return s, nil
}

// stringsProp reads an optional list of strings ([]string or []any of
// strings, as decoded from JSON or YAML).
func stringsProp(props map[string]any, name string) ([]string, error) {
	v, ok := props[name]
	if !ok || v == nil {
		return nil, nil
	}
	switch x := v.(type) {
	case []string:
		return x, nil
	case []any:
		out := make([]string, len(x))
		for i, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("invalid sink property %s: element %d must be a string, got %s", name, i, value.TypeName(e))
			}
			out[i] = s
		}
		return out, nil
	}
	return nil, propTypeError(name, "a list of strings", v)
}

func propTypeError(name, want string, got any) error {
	return fmt.Errorf("invalid sink property %s: must be %s, got %s", name, want, value.TypeName(got))
}
