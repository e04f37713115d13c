package config

import (
	"fmt"
	"reflect"
)

// unsupported refuses kuiper.yaml settings that eKuiper has and rekuiper
// does not implement, when they are set to anything but eKuiper's default
// (the shipped etc/kuiper.yaml keeps the defaults, so it starts): a setting
// accepted must do what it says. Each error names the key and says why.
func (c *Config) unsupported() []error {
	d := Default()
	var errs []error
	check := func(key string, got, def any, why string) {
		if !reflect.DeepEqual(got, def) {
			errs = append(errs, fmt.Errorf("%s %v: not supported (%s); remove it or set it to %v", key, show(got), why, show(def)))
		}
	}
	b, db := c.Basic, d.Basic
	if b.RotateCount == 0 && b.MaxAge > 0 && b.FileLog {
		errs = append(errs, fmt.Errorf("basic.maxAge %d: not supported (rotated logs are kept by count, not age); set basic.rotateCount above 0", b.MaxAge))
	}
	check("basic.ip", b.IP, db.IP, "there is no CLI server: the kuiper CLI uses the REST API at basic.restIp")
	check("basic.port", b.Port, db.Port, "there is no CLI server: the kuiper CLI uses the REST API at basic.restPort")
	check("basic.enableOpenZiti", b.EnableOpenZiti, db.EnableOpenZiti, "no OpenZiti transport")
	check("basic.resourceProfileConfig.enable", b.ResourceProfileConfig.Enable, db.ResourceProfileConfig.Enable, "no CPU profile per rule; use pprof")
	check("basic.metricsDumpConfig.enable", b.MetricsDumpConfig.Enable, db.MetricsDumpConfig.Enable, "no metrics dump; scrape /metrics")
	check("basic.sql.maxConnections", b.SQL.MaxConnections, db.SQL.MaxConnections, "SQL connection pools are not capped")
	check("basic.pluginHosts", b.PluginHosts, db.PluginHosts, "no plugin download; extensions are built in (docs/extensions.md)")
	r, dr := c.Rule, d.Rule
	p := r.PlanOptimizeStrategy
	if len(p.OptimizeControl.DisableOptimizeRules) == 0 {
		p.OptimizeControl.DisableOptimizeRules = nil // [] as absent
	}
	// Hints that choose how eKuiper computes a result, not what it is
	// (rule.withoutPlanHints): accepted, no effect.
	p.EnableIncrementalWindow = false
	if v := p.WindowOption.WindowVersion; v == "v1" || v == "v2" {
		p.WindowOption.WindowVersion = ""
	}
	check("rule.planOptimizeStrategy", p, dr.PlanOptimizeStrategy, "the planner has no such switches")
	check("rule.debug", r.Debug, dr.Debug, "set basic.logLevel to debug")
	check("rule.logFilename", r.LogFilename, dr.LogFilename, "rules log to the daemon's log")
	if r.Concurrency > 1 {
		errs = append(errs, fmt.Errorf("rule.concurrency %d: not supported (each operator runs as one instance); remove it or set it to 1", r.Concurrency))
	}
	check("rule.enableSaveStateBeforeStop", r.EnableSaveStateBeforeStop, dr.EnableSaveStateBeforeStop, "at qos 1 and 2 checkpoints keep the state across stops")
	check("rule.notifySub", r.NotifySub, dr.NotifySub, "no subscription notifications")
	check("rule.experiment.useSliceTuple", r.Experiment.UseSliceTuple, dr.Experiment.UseSliceTuple, "typed streams already decode into slots")
	check("portable", c.Portable, d.Portable, "no portable plugin runtime")
	check("openTelemetry.enableLocalStorage", c.OpenTelemetry.EnableLocalStorage, d.OpenTelemetry.EnableLocalStorage, "traces are kept in memory only, the last localTraceCapacity of them")
	check("connection.backoffMaxElapsedDuration", c.Connection.BackoffMaxElapsedDuration, d.Connection.BackoffMaxElapsedDuration,
		"connections retry with capped backoff until their rules stop; they never give up")
	check("hack.cold", c.Hack.Cold, d.Hack.Cold, "internal eKuiper switch")
	return errs
}

// show prints a setting for an error message: strings quoted, structs
// with their field names.
func show(v any) string {
	switch v.(type) {
	case string:
		return fmt.Sprintf("%q", v)
	case bool, int, int64, float64:
		return fmt.Sprint(v)
	}
	return fmt.Sprintf("%+v", v)
}
