// Package metrics exports rule metrics to Prometheus with eKuiper's names:
// kuiper_{source,op,sink}_<metric>{rule, op, op_instance}, kuiper_rule_status
// and kuiper_rule_count, plus sink cache and checkpoint figures. Metrics are
// read from the rule manager at scrape time; nothing is kept in globals: the
// caller owns the registry.
package metrics

import (
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rekuiper/rekuiper/internal/rule"
	"github.com/rekuiper/rekuiper/internal/rulemgr"
)

// Rules is what the collector reads: the rule manager.
type Rules interface {
	List() []rulemgr.Status
	Status(id string) (rulemgr.Status, error)
}

// Collector is a prometheus.Collector over the rules' metrics.
type Collector struct {
	rules Rules
	// descs caches descriptors by metric name.
	status, count *prometheus.Desc
}

// NewCollector returns a collector reading rules.
func NewCollector(rules Rules) *Collector {
	return &Collector{
		rules:  rules,
		status: prometheus.NewDesc("kuiper_rule_status", "Rule status: 1 running, 0 stopped, -1 stopped by error.", []string{"rule"}, nil),
		count:  prometheus.NewDesc("kuiper_rule_count", "Number of rules by status.", []string{"status"}, nil),
	}
}

var _ prometheus.Collector = (*Collector)(nil)

// Describe sends no descriptors: the metric set depends on the rules
// running, so the collector is unchecked.
func (c *Collector) Describe(chan<- *prometheus.Desc) {}

// Collect reads every rule's status and metrics.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	running, stopped := 0, 0
	for _, brief := range c.rules.List() {
		st, err := c.rules.Status(brief.ID)
		if err != nil || st.Node != "" && (st.Tasks == nil || st.Metrics == nil) {
			// Gone, or another node runs it (or every task of a rule
			// split into tasks) and reports it. A node running some tasks
			// of a split rule reports the sums of their counters.
			continue
		}
		v := 0.0
		switch {
		case st.State == rulemgr.StateRunning:
			v = 1
			running++
		case st.Message != "":
			v = -1
			stopped++
		default:
			stopped++
		}
		ch <- prometheus.MustNewConstMetric(c.status, prometheus.GaugeValue, v, st.ID)
		c.collectRule(ch, st)
	}
	ch <- prometheus.MustNewConstMetric(c.count, prometheus.GaugeValue, float64(running), "running")
	ch <- prometheus.MustNewConstMetric(c.count, prometheus.GaugeValue, float64(stopped), "stop")
}

func (c *Collector) collectRule(ch chan<- prometheus.Metric, st rulemgr.Status) {
	keys := make([]string, 0, len(st.Metrics))
	for k := range st.Metrics {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if msg, isText := st.Metrics[k].(string); isText && strings.HasSuffix(k, "_last_exception") && msg != "" {
			if kind, op, inst, _, ok := splitKey(k); ok {
				// The text as a label of a constant 1: one series per node.
				desc := prometheus.NewDesc("kuiper_"+kind+"_last_exception_info", "rekuiper "+kind+" last error, in the exception label.",
					[]string{"rule", "type", "op", "op_instance", "exception"}, nil)
				ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, 1, st.ID, kind, op, inst, truncate(rule.MaskText(msg), maxExceptionLabel))
			}
			continue
		}
		f, ok := number(st.Metrics[k])
		if !ok {
			continue
		}
		if strings.HasPrefix(k, "checkpoint_") {
			name := "kuiper_rule_" + k
			ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(name, "Rule checkpoint figure "+k+".", []string{"rule"}, nil), valueType(k), f, st.ID)
			continue
		}
		kind, op, inst, metric, ok := splitKey(k)
		if !ok {
			continue
		}
		name := "kuiper_" + kind + "_" + metric
		desc := prometheus.NewDesc(name, "rekuiper "+kind+" metric "+metric+".", []string{"rule", "type", "op", "op_instance"}, nil)
		ch <- prometheus.MustNewConstMetric(desc, valueType(metric), f, st.ID, kind, op, inst)
	}
}

// splitKey parses "<kind>_<name>_<instance>_<metric>", where name may hold
// underscores and instance is a number.
func splitKey(k string) (kind, op, inst, metric string, ok bool) {
	for _, p := range []string{"source_", "op_", "sink_"} {
		if strings.HasPrefix(k, p) {
			kind = strings.TrimSuffix(p, "_")
			k = strings.TrimPrefix(k, p)
			break
		}
	}
	if kind == "" {
		return "", "", "", "", false
	}
	parts := strings.Split(k, "_")
	for i := len(parts) - 2; i >= 1; i-- {
		if _, err := strconv.Atoi(parts[i]); err == nil {
			return kind, strings.Join(parts[:i], "_"), parts[i], strings.Join(parts[i+1:], "_"), true
		}
	}
	return "", "", "", "", false
}

// maxExceptionLabel bounds the exception label (bytes).
const maxExceptionLabel = 256

// truncate cuts s to at most n bytes on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func valueType(metric string) prometheus.ValueType {
	if strings.HasSuffix(metric, "_total") {
		return prometheus.CounterValue
	}
	return prometheus.GaugeValue
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case int:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}
