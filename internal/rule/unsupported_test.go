package rule

import (
	"strings"
	"testing"
)

func TestUnsupportedOptionsRefused(t *testing.T) {
	for _, c := range []struct {
		raw  map[string]any
		want string // "" accepted
	}{
		{map[string]any{"debug": true}, "rule option debug"},
		{map[string]any{"logFilename": "r.log"}, "rule option logFilename"},
		{map[string]any{"concurrency": 4}, "rule option concurrency 4"},
		{map[string]any{"concurrency": 1}, ""},
		{map[string]any{"enableSaveStateBeforeStop": true}, "rule option enableSaveStateBeforeStop"},
		{map[string]any{"planOptimizeStrategy": map[string]any{"enableAliasPushdown": true}}, "rule option planOptimizeStrategy"},
		{map[string]any{"planOptimizeStrategy": map[string]any{"enableAliasPushdown": false, "optimizeControl": map[string]any{"disableOptimizeRules": []any{}}}}, ""},
		{map[string]any{"planOptimizeStrategy": map[string]any{"enableIncrementalWindow": true}}, ""},
		{map[string]any{"planOptimizeStrategy": map[string]any{"windowOption": map[string]any{"windowVersion": "v2"}}}, ""},
		{map[string]any{"planOptimizeStrategy": map[string]any{"windowOption": map[string]any{"windowVersion": "v3"}}}, "rule option planOptimizeStrategy"},
		{map[string]any{"planOptimizeStrategy": map[string]any{"windowOption": map[string]any{"enableSendSlidingWindowTwice": true}}}, "rule option planOptimizeStrategy"},
		{map[string]any{"notifySub": true}, "rule option notifySub"},
		{map[string]any{"experiment": map[string]any{"useSliceTuple": true}}, "rule option experiment"},
		{map[string]any{"disableBufferFullDiscard": true}, ""},
		{map[string]any{"disableBufferFullDiscard": false}, ""},
	} {
		_, err := ParseOptions(Options{}, c.raw)
		if c.want == "" {
			if err != nil {
				t.Errorf("%v refused: %v", c.raw, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error containing %q", c.raw, err, c.want)
		}
	}
}
