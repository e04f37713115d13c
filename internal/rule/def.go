package rule

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/rekuiper/rekuiper/internal/config"
	"github.com/rekuiper/rekuiper/internal/guard"
	"github.com/rekuiper/rekuiper/internal/value"
)

// Sentinel errors of rule decoding. Every error ParseDef and Validate return
// wraps exactly one of them.
var (
	// ErrMalformed: the JSON does not decode (syntax, unknown field, a field
	// of the wrong type). The REST layer answers 400.
	ErrMalformed = errors.New("malformed rule")
	// ErrInvalid: the rule decodes but does not validate (missing sql or
	// actions, bad id, bad option value, unsupported feature). The REST layer
	// answers 422.
	ErrInvalid = errors.New("invalid rule")
)

// Action is one entry of a rule's actions: a sink type and its properties.
type Action struct {
	Type  string
	Props map[string]any
}

// MarshalJSON writes the eKuiper shape {"<type>": {props}}.
func (a Action) MarshalJSON() ([]byte, error) {
	props := a.Props
	if props == nil {
		props = map[string]any{}
	}
	return json.Marshal(map[string]any{a.Type: props})
}

// Def is a decoded rule definition (eKuiper rule JSON).
type Def struct {
	ID      string
	Name    string
	SQL     string
	Actions []Action
	// Options are the rule's options laid over the defaults given to ParseDef.
	Options Options
	// Triggered is the wanted state given at creation (default true).
	Triggered bool
	// TriggeredSet reports whether the JSON gave triggered explicitly; an
	// update honours it then and keeps the rule's wanted state otherwise.
	TriggeredSet bool
	Tags         []string
	Version      string
	// Raw is the JSON as given; methods that change a field (tags, secrets)
	// return a Def whose Raw reflects the change.
	Raw json.RawMessage
	// Task is set on the definition of one task of a partitioned rule
	// (ForTask); it is not part of the JSON.
	Task *Task
}

var knownFields = []string{"id", "name", "sql", "actions", "options", "triggered", "tags", "version", "graph", "temp"}

// ParseDef decodes and validates a rule. Unknown top-level fields and
// unknown option names are ErrMalformed naming the field; semantic problems
// are ErrInvalid. Options start from defaults (see OptionsFromConfig).
func ParseDef(data []byte, defaults Options) (*Def, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil, fmt.Errorf("%w: empty body", ErrMalformed)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("%w: decode rule json: %v", ErrMalformed, err)
	}
	if top == nil {
		return nil, fmt.Errorf("%w: rule must be a json object", ErrMalformed)
	}
	for k := range top {
		if !slices.Contains(knownFields, k) {
			return nil, fmt.Errorf("%w: unknown field %q", ErrMalformed, k)
		}
	}
	d := &Def{Triggered: true, Options: defaults, Raw: slices.Clone(json.RawMessage(data))}
	fields := []struct {
		name string
		dst  any
	}{{"id", &d.ID}, {"name", &d.Name}, {"sql", &d.SQL}, {"triggered", &d.Triggered}, {"tags", &d.Tags}, {"version", &d.Version}}
	for _, f := range fields {
		if raw, ok := top[f.name]; ok && !isNull(raw) {
			if err := json.Unmarshal(raw, f.dst); err != nil {
				return nil, fmt.Errorf("%w: field %q: %v", ErrMalformed, f.name, err)
			}
		}
	}
	if raw, ok := top["triggered"]; ok && !isNull(raw) {
		d.TriggeredSet = true
	}
	if raw, ok := top["temp"]; ok && !isNull(raw) {
		var temp bool
		if err := json.Unmarshal(raw, &temp); err != nil {
			return nil, fmt.Errorf("%w: field \"temp\": %v", ErrMalformed, err)
		}
		if temp {
			return nil, fmt.Errorf("%w: temp rules are not supported", ErrInvalid)
		}
	}
	if raw, ok := top["actions"]; ok && !isNull(raw) {
		acts, err := decodeActions(raw)
		if err != nil {
			return nil, err
		}
		d.Actions = acts
	}
	if raw, ok := top["options"]; ok && !isNull(raw) {
		// Decoding writes into the maps and lists of the options; detach
		// them from the defaults shared by every rule first.
		d.Options = d.Options.detached()
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&d.Options); err != nil {
			return nil, fmt.Errorf("%w: field \"options\": %v", ErrMalformed, err)
		}
	}
	if raw, ok := top["graph"]; ok && !isNull(raw) {
		return nil, fmt.Errorf("%w: graph rules are not supported yet", ErrInvalid)
	}
	if err := d.Validate(); err != nil {
		return nil, err
	}
	return d, nil
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

func decodeActions(raw json.RawMessage) ([]Action, error) {
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("%w: field \"actions\": want an array of {\"<sink type>\": {props}}: %v", ErrMalformed, err)
	}
	out := make([]Action, 0, len(list))
	for i, item := range list {
		dec := json.NewDecoder(bytes.NewReader(item))
		dec.UseNumber()
		var m map[string]any
		if err := dec.Decode(&m); err != nil || m == nil {
			return nil, fmt.Errorf("%w: actions[%d]: want {\"<sink type>\": {props}}", ErrMalformed, i)
		}
		if len(m) != 1 {
			return nil, fmt.Errorf("%w: actions[%d]: want exactly one sink type, found %d", ErrInvalid, i, len(m))
		}
		for typ, props := range m {
			p, ok := props.(map[string]any)
			if props != nil && !ok {
				return nil, fmt.Errorf("%w: actions[%d].%s: properties must be an object", ErrMalformed, i, typ)
			}
			if p == nil {
				p = map[string]any{}
			}
			out = append(out, Action{Type: typ, Props: value.Normalize(p).(map[string]any)})
		}
	}
	return out, nil
}

// Validate checks the semantic rules of a definition; errors wrap ErrInvalid.
func (d *Def) Validate() error {
	if err := ValidateID(d.ID); err != nil {
		return err
	}
	if strings.TrimSpace(d.SQL) == "" {
		return fmt.Errorf("%w: rule %s: sql is required", ErrInvalid, d.ID)
	}
	if len(d.Actions) == 0 {
		return fmt.Errorf("%w: rule %s: actions are required", ErrInvalid, d.ID)
	}
	for i, a := range d.Actions {
		if a.Type == "" {
			return fmt.Errorf("%w: rule %s: actions[%d]: empty sink type", ErrInvalid, d.ID, i)
		}
	}
	if err := d.Options.Validate(); err != nil {
		return fmt.Errorf("%w: rule %s: %v", ErrInvalid, d.ID, err)
	}
	if _, err := d.Schedule(); err != nil {
		return fmt.Errorf("%w: rule %s: %v", ErrInvalid, d.ID, err)
	}
	return nil
}

// Schedule is a rule's cron schedule: it runs at every Spec firing for
// Duration.
type Schedule struct {
	Spec     cron.Schedule
	Duration time.Duration
}

// Schedule returns the rule's cron schedule, or nil when options.cron is
// empty. A cron without a positive duration is an error.
func (d *Def) Schedule() (*Schedule, error) {
	o := d.Options
	if o.Cron == "" {
		if o.Duration != "" {
			return nil, errors.New("option duration needs option cron")
		}
		return nil, nil
	}
	spec, err := cron.ParseStandard(o.Cron)
	if err != nil {
		return nil, fmt.Errorf("invalid option cron %q: %w", o.Cron, err)
	}
	if o.Duration == "" {
		return nil, errors.New("option cron needs option duration")
	}
	dur, err := time.ParseDuration(o.Duration)
	if err != nil || dur <= 0 {
		return nil, fmt.Errorf("invalid option duration %q: want a positive Go duration like \"30m\"", o.Duration)
	}
	return &Schedule{Spec: spec, Duration: dur}, nil
}

// ValidateID checks a rule, stream or connection name with the engine's
// one name validator (guard.Name). Errors wrap ErrInvalid and guard.ErrName.
func ValidateID(id string) error {
	if err := guard.Name("id", id); err != nil {
		return idError(strings.TrimPrefix(err.Error(), guard.ErrName.Error()+": "))
	}
	return nil
}

// idError is an invalid rule because of its id: both ErrInvalid and
// guard.ErrName, so that callers mapping names to statuses see the name.
type idError string

func (e idError) Error() string   { return ErrInvalid.Error() + ": " + string(e) }
func (e idError) Unwrap() []error { return []error{ErrInvalid, guard.ErrName} }

// OptionsFromConfig converts the `rule:` section of kuiper.yaml into rule
// option defaults. Every key is inherited (eKuiper inherits only some).
func OptionsFromConfig(c config.RuleOptions) Options {
	o := Options{
		Debug:                     c.Debug,
		LogFilename:               c.LogFilename,
		IsEventTime:               c.IsEventTime,
		LateTolerance:             Duration(c.LateTolerance),
		Concurrency:               c.Concurrency,
		BufferLength:              c.BufferLength,
		SendMetaToSink:            c.SendMetaToSink,
		SendNilField:              c.SendNilField,
		SendError:                 c.SendError,
		Qos:                       QoS(c.Qos),
		CheckpointInterval:        Duration(c.CheckpointInterval),
		Cron:                      c.Cron,
		NotifySub:                 c.NotifySub,
		DisableBufferFullDiscard:  c.DisableBufferFullDiscard,
		EnableSaveStateBeforeStop: c.EnableSaveStateBeforeStop,
		ForceExitTimeout:          Duration(c.ForceExitTimeout),
		RestartStrategy: RestartStrategy{
			Attempts:     c.RestartStrategy.Attempts,
			Delay:        Duration(c.RestartStrategy.Delay),
			Multiplier:   c.RestartStrategy.Multiplier,
			MaxDelay:     Duration(c.RestartStrategy.MaxDelay),
			JitterFactor: c.RestartStrategy.JitterFactor,
		},
	}
	if c.Duration > 0 {
		o.Duration = c.Duration.String()
	}
	for _, r := range c.CronDatetimeRange {
		o.CronDatetimeRange = append(o.CronDatetimeRange, DatetimeRange(r))
	}
	o.PlanOptimizeStrategy = toMap(c.PlanOptimizeStrategy)
	o.Experiment = toMap(c.Experiment)
	return o
}

// toMap turns a config struct into its JSON object form.
func toMap(v any) map[string]any {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	return m
}

// Patch returns Raw with the given top-level fields replaced (a nil value
// removes the field). Raw is returned unchanged when set is empty.
func (d *Def) Patch(set map[string]any) (json.RawMessage, error) {
	if len(set) == 0 {
		return slices.Clone(d.Raw), nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(d.Raw, &top); err != nil {
		return nil, fmt.Errorf("patch rule %s: %w", d.ID, err)
	}
	for k, v := range set {
		if v == nil {
			delete(top, k)
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("patch rule %s field %s: %w", d.ID, k, err)
		}
		top[k] = b
	}
	out, err := json.Marshal(top)
	if err != nil {
		return nil, fmt.Errorf("patch rule %s: %w", d.ID, err)
	}
	return out, nil
}

// WithTags returns a copy of d carrying tags, with Raw rewritten.
func (d *Def) WithTags(tags []string) (*Def, error) {
	if tags == nil {
		tags = []string{}
	}
	raw, err := d.Patch(map[string]any{"tags": tags})
	if err != nil {
		return nil, err
	}
	c := *d
	c.Tags = slices.Clone(tags)
	c.Raw = raw
	return &c, nil
}

// MaskedJSON returns Raw with the secrets of the SQL (see MaskSQL) and
// of every action's properties (see MaskProps) masked and triggered set to
// the given wanted state.
func (d *Def) MaskedJSON(triggered bool) (json.RawMessage, error) {
	set := map[string]any{"triggered": triggered}
	if sql := MaskSQL(d.SQL); sql != d.SQL {
		set["sql"] = sql
	}
	if d.hasSecrets() {
		masked := make([]Action, len(d.Actions))
		for i, a := range d.Actions {
			masked[i] = Action{Type: a.Type, Props: MaskPropsOf(a.Type, a.Props)}
		}
		set["actions"] = masked
	}
	return d.Patch(set)
}

func (d *Def) hasSecrets() bool {
	for _, a := range d.Actions {
		if HasSecretsOf(a.Type, a.Props) {
			return true
		}
	}
	return false
}

// RestoreSecrets replaces every masked value ("******") in d's SQL and
// actions by the stored one in old (the SQL when d's is old's masked, an
// action property from old's action of the same index and type), rewriting
// Raw when something changed. A masked value with nothing to restore is
// kept as given; one whose endpoint changed is ErrInvalid.
func (d *Def) RestoreSecrets(old *Def) error {
	if old == nil {
		return nil
	}
	set := map[string]any{}
	sql, err := RestoreText("the rule's sql", d.SQL, old.SQL, MaskSQL)
	if err != nil {
		return err
	}
	if sql != d.SQL {
		d.SQL, set["sql"] = sql, sql
	}
	changed := false
	for i := range d.Actions {
		if i >= len(old.Actions) || old.Actions[i].Type != d.Actions[i].Type {
			continue
		}
		p, ch, err := RestoreProps(d.Actions[i].Props, old.Actions[i].Props)
		if err != nil {
			return fmt.Errorf("actions[%d] (%s): %w", i, d.Actions[i].Type, err)
		}
		if ch {
			d.Actions[i].Props, changed = p, true
		}
	}
	if changed {
		set["actions"] = d.Actions
	}
	raw, err := d.Patch(set)
	if err != nil {
		return err
	}
	d.Raw = raw
	return nil
}
