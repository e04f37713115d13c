package sdk

import (
	"errors"
	"slices"

	"github.com/rekuiper/rekuiper/internal/connector"
)

// PropType is the type of a property; validation converts every value to
// the Go type listed with each constant.
type PropType string

// Property types.
const (
	TypeString   PropType = "string"   // string
	TypeInt      PropType = "int"      // int64
	TypeBool     PropType = "bool"     // bool
	TypeFloat    PropType = "float"    // float64
	TypeDuration PropType = "duration" // time.Duration: milliseconds, or "10s"
	TypeMap      PropType = "map"      // map[string]any
	TypeList     PropType = "list"     // []any
)

// Prop describes one property of a connector.
type Prop struct {
	Name string
	Type PropType
	// Default applies when the property is absent or null. It may be given
	// in any form the type accepts (1, "10s", ...); registration checks it.
	Default any
	// Enum lists the allowed values. Strings match case-insensitively and
	// are replaced by the enum's spelling ("post" becomes "POST").
	Enum []any
	// Required properties must be present (a Default makes no sense then).
	Required bool
	// Secret values are masked in every REST response and log line.
	Secret bool
	// Doc is a one-line description for generated docs and the UI.
	Doc string
	// Max, when set, is the largest value accepted for an int, float or
	// duration property (in any form the type accepts), so that a typo
	// cannot size a buffer to gigabytes.
	Max any
	// Target marks a string or list property that names what is read or
	// written (a topic, a table), not where or how to connect: a connection
	// check (see Spec.Ping) fills it in when it is not given.
	Target bool
}

// Spec is a connector's property specification. It drives validation
// before any factory runs and the masking of secrets. Registration checks
// it (unique names, known types, defaults, enum values and maxima that
// convert) and keeps its own copy.
type Spec struct {
	Props []Prop
	// WritesRows marks a sink that writes the rows of a message, not its
	// encoded payload: the payload properties compression and encryption
	// are refused for it.
	WritesRows bool
	// Ping marks a connector whose Connect reaches a server, so that
	// connecting and closing it checks connection properties (POST
	// /metadata/{sources,sinks,lookups}/connection/{type}).
	Ping bool
}

// ErrInvalidProps marks property validation failures: errors.Is(err,
// ErrInvalidProps) holds for the errors of Spec.Validate and of
// Registry.NewSource, NewSink and NewLookup when properties are refused.
var ErrInvalidProps = errors.New("invalid properties")

// Validate checks props against the spec alone and returns a new map
// holding exactly the declared properties, converted to their types, with
// defaults filled in; names match case-insensitively. Every problem is
// reported in one error wrapping ErrInvalidProps. The engine's own
// properties (format, bufferLength, ...) are unknown to a spec by itself:
// Registry.NewSource and NewSink validate as the engine does.
func (s Spec) Validate(props map[string]any) (map[string]any, error) {
	v, err := s.internal().Validate(props)
	return v, publicErr(err)
}

// Mask returns a deep copy of props as every REST response and log line
// shows it: the spec's secret properties, and values that look like
// credentials (secret names at any depth, URL passwords), are masked.
func (s Spec) Mask(props map[string]any) map[string]any {
	return s.internal().Mask(props)
}

// PingProps returns a copy of props completed for a connection check:
// every Target property that is absent gets a placeholder name.
func (s Spec) PingProps(props map[string]any) map[string]any {
	return s.internal().PingProps(props)
}

// Has reports whether the spec declares a property (case-insensitively).
func (s Spec) Has(name string) bool {
	return s.internal().Has(name)
}

// internal is s as the engine's connector spec. The engine owns its copy
// (registration normalizes defaults and enums in place), so slices are
// copied.
func (s Spec) internal() connector.Spec {
	props := make([]connector.Prop, len(s.Props))
	for i, p := range s.Props {
		props[i] = connector.Prop{
			Name: p.Name, Type: connector.PropType(p.Type), Default: p.Default,
			Enum: slices.Clone(p.Enum), Required: p.Required, Secret: p.Secret,
			Doc: p.Doc, Max: p.Max, Target: p.Target,
		}
	}
	return connector.Spec{Props: props, WritesRows: s.WritesRows, Ping: s.Ping}
}

// invalidProps is an engine validation failure seen through the sdk: it
// reads the same and matches ErrInvalidProps.
type invalidProps struct{ err error }

func (e invalidProps) Error() string   { return e.err.Error() }
func (e invalidProps) Unwrap() []error { return []error{e.err, ErrInvalidProps} }

// publicErr marks the engine's validation failures with ErrInvalidProps.
func publicErr(err error) error {
	if err != nil && errors.Is(err, connector.ErrInvalidProps) {
		return invalidProps{err}
	}
	return err
}
