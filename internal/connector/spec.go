package connector

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rekuiper/rekuiper/internal/rule"
)

// ErrInvalidProps marks property validation failures (test with errors.Is);
// the REST layer maps it to 400.
var ErrInvalidProps = errors.New("invalid properties")

// MaskedValue replaces secret property values in Mask's output.
const MaskedValue = "******"

// PropType is the type of a connector property. Validate converts every
// value to the Go type listed with each constant.
type PropType string

// Property types.
const (
	TypeString   PropType = "string"   // string
	TypeInt      PropType = "int"      // int64
	TypeBool     PropType = "bool"     // bool
	TypeFloat    PropType = "float"    // float64
	TypeDuration PropType = "duration" // time.Duration; numbers are milliseconds, strings "10s" or "500"
	TypeMap      PropType = "map"      // map[string]any
	TypeList     PropType = "list"     // []any
)

// Prop describes one connector property.
type Prop struct {
	Name string
	Type PropType
	// Default applies when the property is absent or null. It may be given
	// in any form the type accepts (1, "10s", ...); Register checks it.
	Default any
	// Enum lists the allowed values. Strings match case-insensitively and
	// are replaced by the enum's spelling ("post" becomes "POST").
	Enum []any
	// Required properties must be present (a Default makes no sense then).
	Required bool
	// Secret values are replaced by MaskedValue in Mask.
	Secret bool
	// Doc is a one-line description for generated docs and the UI.
	Doc string
	// Max, when set, is the largest value accepted for an int, float or
	// duration property (in any form the type accepts). Properties that
	// size memory or time declare one, so that a typo cannot allocate
	// gigabytes; docs/limits.md lists them.
	Max any
	// Target marks a property that names what is read or written (a
	// topic, a table, channels), not where or how to connect. A connection
	// check does not need it (see Spec.PingProps).
	Target bool
}

// Bounds shared by the connectors' properties that size memory.
const (
	// MaxBufferLength bounds a connector's bufferLength (messages queued).
	MaxBufferLength = 1 << 20
	// MaxBatchSize bounds a sink's batchSize (records held per batch).
	MaxBatchSize = 100_000
)

// Spec is the property specification of one connector. It drives
// validation before any constructor runs, and masking of secrets.
type Spec struct {
	Props []Prop
	// Kind selects which engine-level properties Validate ignores; Register
	// sets it. The zero value ignores none.
	Kind Kind
	// WritesRows marks a sink that writes the rows of a message, not its
	// encoded payload (memory, sql, redis): the payload properties
	// compression and encryption are refused for it.
	WritesRows bool
	// Ping marks a connector whose Connect reaches a server (a broker, a
	// database), so that connecting and closing it checks the connection
	// properties (POST /metadata/{sources,sinks,lookups}/connection/{type}).
	// Other connectors have no connection to check.
	Ping bool
}

// PingTarget is what PingProps puts in an absent Target property (a list of
// it for a list property): a name valid as a topic, a table and a channel.
const PingTarget = "rekuiper_connection_check"

// PingProps returns a copy of props completed for a connection check: every
// Target property that is absent gets PingTarget, so that only the
// connection properties need to be given.
func (s Spec) PingProps(props map[string]any) map[string]any {
	out := maps.Clone(props)
	if out == nil {
		out = map[string]any{}
	}
	for _, p := range s.Props {
		if !p.Target {
			continue
		}
		given := false
		for k, v := range out {
			if strings.EqualFold(k, p.Name) && v != nil {
				given = true
			}
		}
		switch {
		case given:
		case p.Type == TypeList:
			out[p.Name] = []any{PingTarget}
		default:
			out[p.Name] = PingTarget
		}
	}
	return out
}

// Kind is what a connector is registered as.
type Kind int

// Connector kinds.
const (
	KindSource Kind = iota + 1
	KindSink
	KindLookup
)

func (k Kind) String() string {
	switch k {
	case KindSource:
		return "source"
	case KindSink:
		return "sink"
	case KindLookup:
		return "lookup"
	}
	return "unknown"
}

// EngineProps returns the property names that belong to the engine, not to
// connectors of kind k (decoding, rate limiting, sink encoding, caching,
// batching, and the stream's datasource). Validate drops them from its output
// unless the connector declares a property of the same name.
func EngineProps(k Kind) []string {
	source := []string{
		"datasource", "format", "schemaId", "delimiter", "decompression",
		"connectionSelector", "interval", "bufferLength", "shared",
		"mergeField", "merger", "payloadFormat", "payloadSchemaId",
		"payloadDelimiter", "payloadBatchField", "payloadField",
	}
	switch k {
	case KindSource:
		return source
	case KindLookup:
		return append(source, "key", "cache", "cacheTtl", "cacheMissingKey", "lookup")
	case KindSink:
		return []string{
			"sendSingle", "dataTemplate", "fields", "excludeFields", "dataField",
			"tableDataField", "omitIfEmpty", "format", "schemaId", "delimiter",
			"hasHeader", "compression", "encryption", "enableCache",
			"memoryCacheThreshold", "maxDiskCache", "maxCacheSize",
			"bufferPageSize", "resendInterval", "cleanCacheAtStop",
			"resendAlterQueue", "resendPriority", "resendIndicatorField",
			"resendDestination", "concurrency", "runAsync", "batchSize",
			"lingerInterval", "bufferLength", "connectionSelector", "resourceId",
			"dropPolicy", "cacheSync",
		}
	}
	return nil
}

// unimplemented lists eKuiper's engine-level properties that rekuiper does
// not implement for a connector that does not declare them itself, with the
// values that mean "off" (compared in their printed form) and why: any
// other value is refused rather than ignored.
var unimplemented = map[Kind]map[string]struct {
	off []string
	why string
}{
	KindSource: {
		"decompression":     {[]string{""}, "this source does not decompress payloads"},
		"mergeField":        {[]string{""}, "no merging of source records"},
		"merger":            {[]string{""}, "no merging of source records"},
		"payloadFormat":     {[]string{""}, "no nested payload decoding"},
		"payloadSchemaId":   {[]string{""}, "no nested payload decoding"},
		"payloadDelimiter":  {[]string{""}, "no nested payload decoding"},
		"payloadBatchField": {[]string{""}, "no nested payload decoding"},
		"payloadField":      {[]string{""}, "no nested payload decoding"},
		"interval":          {[]string{"0", "0s", ""}, "this source is not polled, and records are not down-sampled"},
		"bufferLength":      {nil, "this source has no queue to size: it hands records to the rule as it reads them, and a full rule blocks it"},
	},
	KindLookup: {
		"interval":     {[]string{"0", "0s", ""}, "this lookup table is not polled"},
		"bufferLength": {nil, "this lookup table has no queue to size"},
	},
	KindSink: {
		"concurrency":    {[]string{"0", "1"}, "a sink writes from one goroutine"},
		"runAsync":       {[]string{"false"}, "sinks write in order; use the sink cache to decouple"},
		"batchSize":      {[]string{"0", "1"}, "this sink sends one message per emission (sendSingle: one per row)"},
		"lingerInterval": {[]string{"0", "0s", ""}, "this sink does not batch"},
	},
}

// unimplementedProblem returns why an engine property the connector does
// not declare cannot be accepted with value v, or "".
func unimplementedProblem(k Kind, name string, v any) string {
	for n, u := range unimplemented[k] {
		if !strings.EqualFold(n, name) || v == nil || slices.Contains(u.off, fmt.Sprint(v)) {
			continue
		}
		return fmt.Sprintf("property %q: %v is not supported (%s)", n, v, u.why)
	}
	return ""
}

// check verifies the spec itself: unique non-empty names, known types,
// defaults and enum values that convert.
func (s *Spec) check() error {
	seen := map[string]bool{}
	for i := range s.Props {
		p := &s.Props[i]
		if p.Name == "" {
			return fmt.Errorf("property %d: empty name", i)
		}
		key := strings.ToLower(p.Name)
		if seen[key] {
			return fmt.Errorf("property %q declared twice", p.Name)
		}
		seen[key] = true
		switch p.Type {
		case TypeString, TypeInt, TypeBool, TypeFloat, TypeDuration, TypeMap, TypeList:
		default:
			return fmt.Errorf("property %q: unknown type %q", p.Name, p.Type)
		}
		for j, e := range p.Enum {
			v, err := convert(p.Type, e)
			if err != nil {
				return fmt.Errorf("property %q enum value %d: %w", p.Name, j, err)
			}
			p.Enum[j] = v
		}
		if p.Target && p.Type != TypeString && p.Type != TypeList {
			return fmt.Errorf("property %q: Target on a %s property", p.Name, p.Type)
		}
		if p.Max != nil {
			if p.Type != TypeInt && p.Type != TypeFloat && p.Type != TypeDuration {
				return fmt.Errorf("property %q: Max on a %s property", p.Name, p.Type)
			}
			m, err := convert(p.Type, p.Max)
			if err != nil {
				return fmt.Errorf("property %q max: %w", p.Name, err)
			}
			p.Max = m
		}
		if p.Default != nil {
			v, err := p.normalize(p.Default)
			if err != nil {
				return fmt.Errorf("property %q default: %w", p.Name, err)
			}
			p.Default = v
		}
	}
	return nil
}

// Validate checks props against the spec and returns a new map holding
// exactly the declared properties (under their declared names), converted to
// their types, with defaults filled in. Names match case-insensitively, as
// in eKuiper. Engine-level properties (EngineProps) that the spec does not
// declare are dropped; any other unknown property is an error naming it. All
// problems are reported in one error wrapping ErrInvalidProps.
func (s Spec) Validate(props map[string]any) (map[string]any, error) {
	declared := make(map[string]*Prop, len(s.Props))
	for i := range s.Props {
		declared[strings.ToLower(s.Props[i].Name)] = &s.Props[i]
	}
	engine := map[string]bool{}
	for _, n := range EngineProps(s.Kind) {
		engine[strings.ToLower(n)] = true
	}
	rule.RegisterSecretsIn(props) // error texts mask them, wherever they quote them
	var problems []string
	given := make(map[string]any, len(props))
	var unknown []string
	for _, k := range slices.Sorted(maps.Keys(props)) {
		lk := strings.ToLower(k)
		p, ok := declared[lk]
		if !ok {
			if !engine[lk] {
				unknown = append(unknown, k)
			} else if why := unimplementedProblem(s.Kind, k, props[k]); why != "" {
				problems = append(problems, why)
			}
			continue
		}
		if _, dup := given[p.Name]; dup {
			problems = append(problems, fmt.Sprintf("property %q given twice (as %q)", p.Name, k))
			continue
		}
		given[p.Name] = props[k]
		if p.Secret {
			rule.RegisterDeclaredSecret(p.Name, props[k])
		}
	}
	if len(unknown) > 0 {
		problems = append(problems, "unknown properties: "+strings.Join(unknown, ", "))
	}
	out := make(map[string]any, len(s.Props))
	for i := range s.Props {
		p := &s.Props[i]
		raw, ok := given[p.Name]
		if !ok || raw == nil {
			if p.Required {
				problems = append(problems, fmt.Sprintf("property %q is required", p.Name))
			} else if p.Default != nil {
				out[p.Name] = p.Default
			}
			continue
		}
		v, err := p.normalize(raw)
		if err != nil {
			problems = append(problems, fmt.Sprintf("property %q: %v", p.Name, err))
			continue
		}
		out[p.Name] = v
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrInvalidProps, strings.Join(problems, "; "))
	}
	return out, nil
}

// Mask returns a deep copy of props masked as every REST response and log
// line is (rule.MaskProps: secret names at any depth, URL passwords,
// credential headers and parameters), with the spec's own secret
// properties (matched case-insensitively) replaced by MaskedValue when
// they are non-empty, whatever their names.
func (s Spec) Mask(props map[string]any) map[string]any {
	out := rule.MaskProps(props)
	for k, v := range out {
		if v == nil || v == "" {
			continue
		}
		for _, p := range s.Props {
			if p.Secret && strings.EqualFold(p.Name, k) {
				out[k] = MaskedValue
				break
			}
		}
	}
	return out
}

// normalize converts v to the property's type and checks the bound and the
// enum.
func (p *Prop) normalize(v any) (any, error) {
	c, err := convert(p.Type, v)
	if err != nil {
		return nil, err
	}
	if err := p.checkMax(c); err != nil {
		return nil, err
	}
	if len(p.Enum) == 0 {
		return c, nil
	}
	for _, e := range p.Enum {
		if es, ok := e.(string); ok {
			if cs, ok := c.(string); ok && strings.EqualFold(es, cs) {
				return es, nil
			}
			continue
		}
		if e == c {
			return e, nil
		}
	}
	allowed := make([]string, len(p.Enum))
	for i, e := range p.Enum {
		allowed[i] = fmt.Sprint(e)
	}
	return nil, fmt.Errorf("%v is not one of %s", c, strings.Join(allowed, ", "))
}

// checkMax refuses a converted value above p.Max.
func (p *Prop) checkMax(c any) error {
	if p.Max == nil {
		return nil
	}
	over := false
	switch x := c.(type) {
	case int64:
		m, _ := p.Max.(int64)
		over = x > m
	case float64:
		m, _ := p.Max.(float64)
		over = x > m
	case time.Duration:
		m, _ := p.Max.(time.Duration)
		over = x > m
	}
	if over {
		return fmt.Errorf("%v exceeds the maximum %v", c, p.Max)
	}
	return nil
}

// convert turns a configuration value (from JSON, YAML, SQL WITH options or
// environment overrides) into the Go type of t.
func convert(t PropType, v any) (any, error) {
	switch t {
	case TypeString:
		switch x := v.(type) {
		case string:
			return x, nil
		case int, int64, float64, bool:
			return fmt.Sprint(x), nil
		}
	case TypeInt:
		return toInt(v)
	case TypeFloat:
		switch x := v.(type) {
		case float64:
			return x, nil
		case float32:
			return float64(x), nil
		case int:
			return float64(x), nil
		case int64:
			return float64(x), nil
		case string:
			f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
			if err != nil {
				return nil, fmt.Errorf("cannot convert %q to float", x)
			}
			return f, nil
		}
	case TypeBool:
		switch x := v.(type) {
		case bool:
			return x, nil
		case string:
			b, err := strconv.ParseBool(strings.TrimSpace(x))
			if err != nil {
				return nil, fmt.Errorf("cannot convert %q to bool", x)
			}
			return b, nil
		}
	case TypeDuration:
		return toDuration(v)
	case TypeMap:
		switch x := v.(type) {
		case map[string]any:
			return maps.Clone(x), nil
		case map[string]string:
			m := make(map[string]any, len(x))
			for k, e := range x {
				m[k] = e
			}
			return m, nil
		case map[any]any:
			m := make(map[string]any, len(x))
			for k, e := range x {
				m[fmt.Sprint(k)] = e
			}
			return m, nil
		}
	case TypeList:
		switch x := v.(type) {
		case []any:
			return slices.Clone(x), nil
		case []string:
			l := make([]any, len(x))
			for i, e := range x {
				l[i] = e
			}
			return l, nil
		case []map[string]any:
			l := make([]any, len(x))
			for i, e := range x {
				l[i] = e
			}
			return l, nil
		}
	default:
		return nil, fmt.Errorf("unknown property type %q", t)
	}
	return nil, fmt.Errorf("cannot convert %T to %s", v, t)
}

func toInt(v any) (int64, error) {
	switch x := v.(type) {
	case int64:
		return x, nil
	case int:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case float64:
		if x != math.Trunc(x) || math.Abs(x) > 1<<53 {
			return 0, fmt.Errorf("%v is not an integer", x)
		}
		return int64(x), nil
	case string:
		i, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("cannot convert %q to int", x)
		}
		return i, nil
	}
	return 0, fmt.Errorf("cannot convert %T to int", v)
}

func toDuration(v any) (time.Duration, error) {
	var d time.Duration
	switch x := v.(type) {
	case time.Duration:
		d = x
	case string:
		s := strings.TrimSpace(x)
		if ms, err := strconv.ParseFloat(s, 64); err == nil {
			return msDuration(ms)
		}
		parsed, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("cannot convert %q to duration", x)
		}
		d = parsed
	case int, int64, float64:
		ms, err := toFloatMS(x)
		if err != nil {
			return 0, err
		}
		return msDuration(ms)
	default:
		return 0, fmt.Errorf("cannot convert %T to duration", v)
	}
	if d < 0 {
		return 0, fmt.Errorf("negative duration %s", d)
	}
	return d, nil
}

// msDuration converts milliseconds to a duration, refusing negative, NaN
// and out-of-range values (about 292 years) instead of wrapping.
func msDuration(ms float64) (time.Duration, error) {
	ns := ms * float64(time.Millisecond)
	if ns != ns || ns < 0 {
		return 0, fmt.Errorf("negative duration %v ms", ms)
	}
	if ns >= 9223372036854775807 {
		return 0, fmt.Errorf("duration %v ms out of range", ms)
	}
	return time.Duration(ns), nil
}

func toFloatMS(v any) (float64, error) {
	switch x := v.(type) {
	case int:
		return float64(x), nil
	case int64:
		return float64(x), nil
	case float64:
		return x, nil
	}
	return 0, fmt.Errorf("cannot convert %T to duration", v)
}

// Has reports whether the spec declares a property.
func (s Spec) Has(name string) bool {
	for _, p := range s.Props {
		if strings.EqualFold(p.Name, name) {
			return true
		}
	}
	return false
}
