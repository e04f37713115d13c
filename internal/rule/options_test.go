package rule

import (
	"strings"
	"testing"
)

func TestSourceLogSyncOption(t *testing.T) {
	for _, v := range []string{"", "none", "periodic", "always"} {
		if _, err := ParseOptions(Options{}, map[string]any{"sourceLogSync": v}); err != nil {
			t.Errorf("sourceLogSync %q: %v", v, err)
		}
	}
	_, err := ParseOptions(Options{}, map[string]any{"sourceLogSync": "sometimes"})
	if err == nil || !strings.Contains(err.Error(), "sourceLogSync") {
		t.Fatalf("err = %v, want one naming sourceLogSync", err)
	}
}

// TestOptionBounds: every bounded option accepts its bound and refuses the
// next value with an error naming the option, the value and the bound.
func TestOptionBounds(t *testing.T) {
	cases := []struct {
		opt       map[string]any
		bad       map[string]any
		wantParts []string
	}{
		{map[string]any{"bufferLength": MaxBufferLength}, map[string]any{"bufferLength": 1000000000000}, []string{"bufferLength", "1000000000000", "1048576"}},
		{map[string]any{"concurrency": 1}, map[string]any{"concurrency": 2}, []string{"concurrency", "2", "one instance"}},
		{map[string]any{"lateTolerance": "24h"}, map[string]any{"lateTolerance": "25h"}, []string{"lateTolerance", "25h0m0s", "24h0m0s"}},
		{map[string]any{"checkpointInterval": "24h"}, map[string]any{"checkpointInterval": "24h1s"}, []string{"checkpointInterval", "24h0m1s", "24h0m0s"}},
		{map[string]any{"checkpointInterval": "10ms"}, map[string]any{"checkpointInterval": "1ms"}, []string{"checkpointInterval", "1ms", "at least 10ms"}},
		{map[string]any{"forceExitTimeout": "1h"}, map[string]any{"forceExitTimeout": "2h"}, []string{"forceExitTimeout", "2h0m0s", "1h0m0s"}},
		{map[string]any{"repartitionPartitions": MaxRepartitionPartitions}, map[string]any{"repartitionPartitions": MaxRepartitionPartitions + 1}, []string{"repartitionPartitions", "10001", "10000"}},
		{map[string]any{"repartitionPartitions": 0}, map[string]any{"repartitionPartitions": -1}, []string{"repartitionPartitions", "-1"}},
		{map[string]any{"restartStrategy": map[string]any{"attempts": MaxRestartAttempts}}, map[string]any{"restartStrategy": map[string]any{"attempts": MaxRestartAttempts + 1}}, []string{"restartStrategy.attempts", "1000001", "1000000"}},
		{map[string]any{"restartStrategy": map[string]any{"delay": "24h"}}, map[string]any{"restartStrategy": map[string]any{"delay": 86400001}}, []string{"restartStrategy.delay", "24h0m0.001s", "24h0m0s"}},
		{map[string]any{"restartStrategy": map[string]any{"maxDelay": "24h"}}, map[string]any{"restartStrategy": map[string]any{"maxDelay": "48h"}}, []string{"restartStrategy.maxDelay", "48h0m0s"}},
		{map[string]any{"restartStrategy": map[string]any{"multiplier": 100}}, map[string]any{"restartStrategy": map[string]any{"multiplier": 101}}, []string{"restartStrategy.multiplier", "101", "100"}},
	}
	for _, c := range cases {
		if _, err := ParseOptions(Options{}, c.opt); err != nil {
			t.Errorf("%v: %v", c.opt, err)
		}
		_, err := ParseOptions(Options{}, c.bad)
		if err == nil {
			t.Errorf("%v accepted", c.bad)
			continue
		}
		for _, p := range c.wantParts {
			if !strings.Contains(err.Error(), p) {
				t.Errorf("%v: error %q does not say %q", c.bad, err, p)
			}
		}
	}
	if _, err := ParseOptions(Options{}, map[string]any{"checkpointInterval": 9223372036854775}); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("checkpointInterval of 2^63 ns in ms: err = %v, want out of range", err)
	}
}

// TestParseOptionsLeavesDefaultsAlone: a rule's options are laid over the
// defaults without writing into them, so one rule's experiment,
// planOptimizeStrategy or cronDatetimeRange never reaches the next rule.
func TestParseOptionsLeavesDefaultsAlone(t *testing.T) {
	base := Options{
		Experiment:           map[string]any{"useSliceTuple": false},
		PlanOptimizeStrategy: map[string]any{"windowOption": map[string]any{"windowVersion": "v1"}},
		CronDatetimeRange:    []DatetimeRange{{Begin: "2024-01-01 00:00:00"}},
	}
	got, _ := ParseOptions(base, map[string]any{
		"experiment":           map[string]any{"useSliceTuple": true},
		"planOptimizeStrategy": map[string]any{"windowOption": map[string]any{"windowVersion": "v2"}},
		"cronDatetimeRange":    []any{map[string]any{"begin": "2025-01-01 00:00:00"}},
	})
	if got.Experiment["useSliceTuple"] != true {
		t.Fatalf("rule's experiment not applied: %v", got.Experiment)
	}
	if base.Experiment["useSliceTuple"] != false {
		t.Errorf("defaults' experiment changed to %v", base.Experiment)
	}
	if v := base.PlanOptimizeStrategy["windowOption"].(map[string]any)["windowVersion"]; v != "v1" {
		t.Errorf("defaults' windowVersion changed to %v", v)
	}
	if base.CronDatetimeRange[0].Begin != "2024-01-01 00:00:00" {
		t.Errorf("defaults' cronDatetimeRange changed to %v", base.CronDatetimeRange)
	}
	next, err := ParseOptions(base, map[string]any{"sendError": true})
	if err != nil {
		t.Fatalf("next rule refused: %v", err)
	}
	if anySet(next.Experiment) {
		t.Errorf("next rule inherited experiment %v", next.Experiment)
	}
}

// TestParseDefLeavesDefaultsAlone: the same through ParseDef, the path of
// every rule created over REST.
func TestParseDefLeavesDefaultsAlone(t *testing.T) {
	base := Options{Experiment: map[string]any{"useSliceTuple": false}}
	_, err := ParseDef([]byte(`{"id":"a","sql":"SELECT * FROM s","actions":[{"log":{}}],"options":{"experiment":{"useSliceTuple":true}}}`), base)
	if err == nil || !strings.Contains(err.Error(), "experiment") {
		t.Fatalf("rule with experiment: err = %v, want refused naming experiment", err)
	}
	if base.Experiment["useSliceTuple"] != false {
		t.Fatalf("defaults' experiment changed to %v", base.Experiment)
	}
	if _, err := ParseDef([]byte(`{"id":"b","sql":"SELECT * FROM s","actions":[{"log":{}}],"options":{"sendError":true}}`), base); err != nil {
		t.Fatalf("next rule refused: %v", err)
	}
}
