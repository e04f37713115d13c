package rule

import "fmt"

// unsupported refuses eKuiper rule options rekuiper does not implement
// when they are set to anything but "off", so that no option is accepted
// and ignored. disableBufferFullDiscard is not here: rekuiper never
// discards, which is what true asks for, and false (eKuiper's default)
// cannot make it start discarding (docs/compatibility.md).
func (o *Options) unsupported() error {
	switch {
	case o.Debug:
		return fmt.Errorf("rule option debug true is not supported: set basic.logLevel to debug")
	case o.LogFilename != "":
		return fmt.Errorf("rule option logFilename %q is not supported: rules log to the daemon's log", o.LogFilename)
	case o.Concurrency > 1:
		return fmt.Errorf("rule option concurrency %d is not supported: each operator runs as one instance", o.Concurrency)
	case o.EnableSaveStateBeforeStop:
		return fmt.Errorf("rule option enableSaveStateBeforeStop true is not supported: at qos 1 and 2 the state is kept across stops and restarts by checkpoints")
	case anySet(withoutPlanHints(o.PlanOptimizeStrategy)):
		return fmt.Errorf("rule option planOptimizeStrategy is not supported beyond enableIncrementalWindow and windowOption.windowVersion: the planner has no such switches")
	case o.NotifySub:
		return fmt.Errorf("rule option notifySub true is not supported")
	case anySet(o.Experiment):
		return fmt.Errorf("rule option experiment is not supported")
	}
	return nil
}

// withoutPlanHints drops the planOptimizeStrategy keys that only choose how
// eKuiper computes a result, never what it is: enableIncrementalWindow
// (aggregate as rows arrive; rekuiper folds a window's aggregates whenever
// it can) and windowOption.windowVersion "v1"/"v2" (eKuiper's two window
// implementations). Rules exported from eKuiper carry them; they are
// accepted and change nothing. What remains must be unset.
func withoutPlanHints(p map[string]any) map[string]any {
	if p == nil {
		return nil
	}
	rest := make(map[string]any, len(p))
	for k, v := range p {
		switch k {
		case "enableIncrementalWindow":
			if _, ok := v.(bool); ok {
				continue
			}
		case "windowOption":
			if w, ok := v.(map[string]any); ok {
				wr := make(map[string]any, len(w))
				for wk, wv := range w {
					if ver, ok := wv.(string); ok && wk == "windowVersion" && (ver == "" || ver == "v1" || ver == "v2") {
						continue
					}
					wr[wk] = wv
				}
				v = wr
			}
		}
		rest[k] = v
	}
	return rest
}

// anySet reports whether v holds anything but zero values: false, 0, "",
// empty lists and maps (kuiper.yaml's defaults arrive as such maps).
func anySet(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case float64:
		return x != 0
	case int:
		return x != 0
	case int64:
		return x != 0
	case map[string]any:
		for _, e := range x {
			if anySet(e) {
				return true
			}
		}
		return false
	case []any:
		for _, e := range x {
			if anySet(e) {
				return true
			}
		}
		return false
	}
	return true
}
