package differential

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rekuiper/rekuiper/internal/conformance"
)

// WriteCases writes cases into dir, one file per case named suite.name.json,
// in the corpus encoding (floats always with a fraction, byte arrays as
// {"$bytes"}). Their expected outputs are left empty: the oracle fills them.
func WriteCases(dir string, cases []*conformance.Case) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write cases: %w", err)
	}
	for _, c := range cases {
		data, err := EncodeCase(c)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, c.Suite+"."+c.Name+".json"), data, 0o644); err != nil {
			return fmt.Errorf("write cases: %w", err)
		}
	}
	return nil
}

// EncodeCase renders c as a case file.
func EncodeCase(c *conformance.Case) ([]byte, error) {
	inputs := map[string]any{}
	for s, evs := range c.Inputs {
		out := make([]any, len(evs))
		for i, e := range evs {
			out[i] = map[string]any{"ts": e.TS, "arrival": e.Arrival, "data": corpusValue(e.Data)}
		}
		inputs[s] = out
	}
	timeline := make([]any, len(c.Timeline))
	for i, st := range c.Timeline {
		timeline[i] = map[string]any{"at": st.At, "stream": st.Stream, "index": st.Index}
	}
	rule := map[string]any{"sql": c.Rule.SQL, "options": corpusValue(c.Rule.Options)}
	if c.Rule.ID != "" {
		rule["id"] = c.Rule.ID
	}
	variants := make([]any, len(c.OptionVariants))
	for i, v := range c.OptionVariants {
		variants[i] = corpusValue(v)
	}
	expected := make([]any, len(c.Expected))
	for i, em := range c.Expected {
		rows := make([]any, len(em))
		for j, r := range em {
			rows[j] = corpusValue(r)
		}
		expected[i] = rows
	}
	doc := map[string]any{
		"name": c.Name, "suite": c.Suite, "source": "generated", "source_line": nil,
		"streams": c.Streams, "stream_names": c.StreamNames, "inputs": inputs,
		"input_metadata": corpusValue(c.InputMetadata), "start_time": c.StartTime,
		"timeline": timeline, "end_time": c.EndTime, "rule": rule, "option_variants": variants,
		"clock": c.Clock, "expected": expected, "notes": c.Notes,
	}
	if c.Quirk != "" {
		doc["quirk"] = c.Quirk
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("encode case %s: %w", c.ID(), err)
	}
	return b.Bytes(), nil
}

// corpusValue maps the value model to JSON values that keep the int/float
// distinction.
func corpusValue(v any) any {
	return conformance.MapLeaves(v, func(v any) any {
		switch x := v.(type) {
		case float64:
			s := strconv.FormatFloat(x, 'g', -1, 64)
			if !strings.ContainsAny(s, ".eEIN") {
				s += ".0"
			}
			return json.Number(s)
		case []byte:
			return map[string]any{"$bytes": base64.StdEncoding.EncodeToString(x)}
		}
		return v
	})
}

// KeepCase copies the oracle's output of o's case (the case with eKuiper's
// emissions) into dir/<suite>/<name>.json.
func KeepCase(dir string, o Outcome) error {
	data, err := os.ReadFile(o.Case.Path)
	if err != nil {
		return err
	}
	d := filepath.Join(dir, o.Case.Suite)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(d, o.Case.Name+".json"), data, 0o644)
}
