package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/rekuiper/rekuiper/internal/function"
)

// decodeCase decodes a case as the daemon's replay route does.
func decodeCase(t *testing.T, text string) *Case {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var c Case
	if err := dec.Decode(&c); err != nil {
		t.Fatal(err)
	}
	if err := c.NormalizeValues(); err != nil {
		t.Fatal(err)
	}
	return &c
}

// stormCase fires a window every millisecond over a year of virtual time.
const stormCase = `{"name":"storm","streams":["CREATE STREAM s (v BIGINT) WITH (DATASOURCE=\"s\", FORMAT=\"json\");"],
 "inputs":{"s":[{"ts":0,"arrival":0,"data":{"v":1}},{"ts":31536000000,"arrival":31536000000,"data":{"v":2}}]},
 "start_time":0,"timeline":[{"at":0,"stream":"s","index":0},{"at":31536000000,"stream":"s","index":1}],
 "rule":{"sql":"SELECT count(*) AS n FROM s GROUP BY TUMBLINGWINDOW(ms, 1)"}}`

func TestReplayBounded(t *testing.T) {
	funcs := function.Builtins()
	t.Run("emissions", func(t *testing.T) {
		c := decodeCase(t, stormCase)
		_, err := ReplayBounded(context.Background(), c, c.Rule.Options, funcs, Limits{MaxEmissions: 500})
		if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "more than 500") {
			t.Fatalf("err = %v, want the emission limit", err)
		}
	})
	t.Run("steps", func(t *testing.T) {
		// Two records and three window firings are five steps.
		c := decodeCase(t, strings.ReplaceAll(stormCase, "31536000000", "3"))
		if _, err := ReplayBounded(context.Background(), c, c.Rule.Options, funcs, Limits{MaxSteps: 5}); err != nil {
			t.Fatalf("five steps allowed: %v", err)
		}
		_, err := ReplayBounded(context.Background(), c, c.Rule.Options, funcs, Limits{MaxSteps: 4})
		if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "more than 4 records and timer firings") {
			t.Fatalf("err = %v, want the step limit", err)
		}
	})
	t.Run("context", func(t *testing.T) {
		c := decodeCase(t, stormCase)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := ReplayBounded(ctx, c, c.Rule.Options, funcs, Limits{})
		if !errors.Is(err, ErrLimit) || !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want the context's end", err)
		}
	})
	t.Run("within limits", func(t *testing.T) {
		c := decodeCase(t, strings.ReplaceAll(stormCase, "31536000000", "3"))
		got, err := ReplayBounded(context.Background(), c, c.Rule.Options, funcs, Limits{MaxEmissions: 500})
		if err != nil {
			t.Fatal(err)
		}
		// Windows [0,1), [1,2), [2,3) fire before the record at 3; only
		// the first holds a record.
		if len(got) != 3 {
			t.Fatalf("%d emissions, want 3: %s", len(got), Show(got))
		}
		if m, _ := Compare([][]map[string]any{{{"n": int64(1)}}}, got[:1]); m != nil {
			t.Fatal(m)
		}
	})
	t.Run("stream the rule does not read", func(t *testing.T) {
		short := strings.ReplaceAll(stormCase, "31536000000", "3")
		c := decodeCase(t, strings.Replace(short, `"streams":[`, `"streams":["CREATE STREAM other (v BIGINT) WITH (DATASOURCE=\"o\");",`, 1))
		c.Inputs["other"] = c.Inputs["s"]
		c.Timeline[1].Stream = "other"
		_, err := ReplayBounded(context.Background(), c, c.Rule.Options, funcs, Limits{})
		if err == nil || !strings.Contains(err.Error(), "other, which the rule does not read") {
			t.Fatalf("err = %v, want the unread stream named", err)
		}
	})
}

func TestNormalizeValuesRefusesShapes(t *testing.T) {
	for name, text := range map[string]string{
		"inputs.s[0].data is not an object": `{"inputs":{"s":[{"data":{"$bytes":"AAAA"}}]}}`,
		"expected[1][0] is not an object":   `{"expected":[[], [{"$bytes":"AAAA"}]]}`,
		"expected[0]":                       `{"expected":[{"a":1}]}`,
	} {
		dec := json.NewDecoder(strings.NewReader(text))
		dec.UseNumber()
		var c Case
		if err := dec.Decode(&c); err != nil {
			t.Fatal(err)
		}
		if err := c.NormalizeValues(); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: err = %v", text, err)
		}
	}
}
