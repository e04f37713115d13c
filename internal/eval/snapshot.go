package eval

import (
	"fmt"

	"github.com/rekuiper/rekuiper/internal/function"
	"github.com/rekuiper/rekuiper/internal/value"
)

// Snapshot encodes every analytic call site's state per partition.
func (a *AnalyticStore) Snapshot() ([]byte, error) {
	sites := make(map[string]any, len(a.States))
	for id, parts := range a.States {
		pm := make(map[string]any, len(parts))
		for k, st := range parts {
			pm[k] = map[string]any(st)
		}
		sites[fmt.Sprint(id)] = pm
	}
	return value.AppendValue([]byte{1}, sites), nil
}

// Restore replaces the store's state with a snapshot.
func (a *AnalyticStore) Restore(data []byte) error {
	if len(data) == 0 || data[0] != 1 {
		return fmt.Errorf("restore analytic state: unsupported snapshot version")
	}
	r := value.NewReader(data[1:])
	sites, _ := r.Value().(map[string]any)
	if err := r.Err(); err != nil {
		return fmt.Errorf("restore analytic state: %w", err)
	}
	states := map[int]map[string]function.State{}
	for k, v := range sites {
		var id int
		if _, err := fmt.Sscan(k, &id); err != nil {
			return fmt.Errorf("restore analytic state: bad site id %q", k)
		}
		parts := map[string]function.State{}
		pm, _ := v.(map[string]any)
		for pk, st := range pm {
			m, _ := st.(map[string]any)
			parts[pk] = function.State(m)
		}
		states[id] = parts
	}
	a.States = states
	return nil
}

// Snapshot encodes the rule-level counters.
func (s *RuleStats) Snapshot() ([]byte, error) {
	return value.AppendValue([]byte{1}, map[string]any{
		"hitCount": s.HitCount, "hitTime": s.HitTime, "aggHitCount": s.AggHitCount, "aggHitTime": s.AggHitTime,
	}), nil
}

// Restore loads the counters; the rule id and start time stay as they are.
func (s *RuleStats) Restore(data []byte) error {
	if len(data) == 0 || data[0] != 1 {
		return fmt.Errorf("restore rule counters: unsupported snapshot version")
	}
	r := value.NewReader(data[1:])
	m, _ := r.Value().(map[string]any)
	if err := r.Err(); err != nil {
		return fmt.Errorf("restore rule counters: %w", err)
	}
	s.HitCount, _ = m["hitCount"].(int64)
	s.HitTime, _ = m["hitTime"].(int64)
	s.AggHitCount, _ = m["aggHitCount"].(int64)
	s.AggHitTime, _ = m["aggHitTime"].(int64)
	return nil
}
