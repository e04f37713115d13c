// Package conformance loads rule test cases (the format docs/kuiper-test.md
// describes) and replays them through the engine on a virtual clock. `go test` runs the corpus with it, and `kuiper test` runs
// users' own rule test files.
package conformance

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Case is one rule test case.
type Case struct {
	Name           string             `json:"name"`
	Suite          string             `json:"suite"`
	Streams        []string           `json:"streams"`
	StreamNames    []string           `json:"stream_names"`
	Inputs         map[string][]Event `json:"inputs"`
	Tables         map[string][]any   `json:"tables"`
	InputMetadata  map[string]any     `json:"input_metadata"`
	StartTime      int64              `json:"start_time"`
	Timeline       []Step             `json:"timeline"`
	EndTime        int64              `json:"end_time"`
	Rule           RuleSpec           `json:"rule"`
	OptionVariants []map[string]any   `json:"option_variants"`
	Clock          string             `json:"clock"`
	Expected       [][]map[string]any `json:"-"`
	RawExpected    []json.RawMessage  `json:"expected"`
	Notes          string             `json:"notes"`
	Skip           string             `json:"skip"`
	Quirk          string             `json:"quirk"`
	// OracleError is set instead of Expected when eKuiper refused or could
	// not run the rule (written by the differential oracle).
	OracleError string `json:"oracle_error"`

	// Path is the file the case came from.
	Path string `json:"-"`
}

// ID is suite/name.
func (c *Case) ID() string { return c.Suite + "/" + c.Name }

// Event is one input record.
type Event struct {
	TS      int64          `json:"ts"`
	Arrival int64          `json:"arrival"`
	Data    map[string]any `json:"data"`
}

// Step delivers inputs[Stream][Index] at virtual time At.
type Step struct {
	At     int64  `json:"at"`
	Stream string `json:"stream"`
	Index  int    `json:"index"`
}

// RuleSpec is the rule under test.
type RuleSpec struct {
	ID      string         `json:"id"`
	SQL     string         `json:"sql"`
	Options map[string]any `json:"options"`
}

// Load reads one case file, keeping integers and floats distinct and
// decoding {"$bytes": base64} objects.
func Load(path string) (*Case, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read case: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var c Case
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("decode case %s: %w", path, err)
	}
	c.Path = path
	if err := c.NormalizeValues(); err != nil {
		return nil, fmt.Errorf("case %s: %w", path, err)
	}
	return &c, nil
}

// NormalizeValues converts the values of a case decoded with UseNumber to
// the value model (see Normalize) and decodes RawExpected into Expected.
// It reports a record, row or emission of the wrong shape instead of
// panicking, so it is safe on cases sent by users.
func (c *Case) NormalizeValues() error {
	for s, evs := range c.Inputs {
		for i := range evs {
			m, ok := Normalize(evs[i].Data).(map[string]any)
			if !ok {
				return fmt.Errorf("inputs.%s[%d].data is not an object", s, i)
			}
			evs[i].Data = m
		}
	}
	for t, rows := range c.Tables {
		for i, r := range rows {
			if rows[i] = Normalize(r); rows[i] != nil {
				if _, ok := rows[i].(map[string]any); !ok {
					return fmt.Errorf("tables.%s[%d] is not an object", t, i)
				}
			}
		}
	}
	c.InputMetadata, _ = Normalize(c.InputMetadata).(map[string]any)
	c.Rule.Options, _ = Normalize(c.Rule.Options).(map[string]any)
	for i, v := range c.OptionVariants {
		c.OptionVariants[i], _ = Normalize(v).(map[string]any)
	}
	c.Expected = nil
	for k, raw := range c.RawExpected {
		var em []map[string]any
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		if err := d.Decode(&em); err != nil {
			return fmt.Errorf("expected[%d]: %w", k, err)
		}
		for i, r := range em {
			m, ok := Normalize(r).(map[string]any)
			if !ok {
				return fmt.Errorf("expected[%d][%d] is not an object", k, i)
			}
			em[i] = m
		}
		c.Expected = append(c.Expected, em)
	}
	return nil
}

// Normalize converts decoded JSON to the value model: json.Number to int64
// when written without fraction or exponent, else float64; {"$bytes": b64}
// to []byte.
func Normalize(v any) any {
	switch x := v.(type) {
	case json.Number:
		s := x.String()
		if !strings.ContainsAny(s, ".eE") {
			if i, err := x.Int64(); err == nil {
				return i
			}
		}
		f, _ := x.Float64()
		return f
	case []any:
		for i, e := range x {
			x[i] = Normalize(e)
		}
		return x
	case map[string]any:
		if b, ok := x["$bytes"].(string); ok && len(x) == 1 {
			if raw, err := base64.StdEncoding.DecodeString(b); err == nil {
				return raw
			}
		}
		for k, e := range x {
			x[k] = Normalize(e)
		}
		return x
	}
	return v
}

// Discover finds case files under the given files or folders, sorted.
func Discover(paths ...string) ([]string, error) {
	var out []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("find cases: %w", err)
		}
		if !st.IsDir() {
			out = append(out, p)
			continue
		}
		err = filepath.WalkDir(p, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && strings.HasSuffix(path, ".json") && filepath.Base(path) != "INDEX.json" {
				out = append(out, path)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("find cases: %w", err)
		}
	}
	sort.Strings(out)
	return out, nil
}
