package qualify

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// OutageVariant is one broker-outage run.
type OutageVariant struct {
	ResendPriority int `json:"resend_priority"`
	// KillDuringOutage SIGKILLs kuiperd a third into the outage and
	// restarts it before the broker returns.
	KillDuringOutage bool `json:"kill_during_outage"`
	// SharedBroker makes the source read from the broker that goes down
	// (the publisher then buffers and retries, and the source's persistent
	// session catches up); otherwise the source reads from a second broker
	// that stays up, so records keep flowing into the sink cache during the
	// outage.
	SharedBroker bool `json:"shared_broker"`
}

// Name is a short label such as "p1-kill".
func (v OutageVariant) Name() string {
	n := fmt.Sprintf("p%d", v.ResendPriority)
	if v.ResendPriority < 0 {
		n = "pm1"
	}
	if v.KillDuringOutage {
		n += "-kill"
	}
	if v.SharedBroker {
		n += "-shared"
	}
	return n
}

// OutageParams configure the broker-outage scenario.
type OutageParams struct {
	Variants []OutageVariant
	Rate     float64       // default 100
	Duration time.Duration // publishing time per variant (default Outage + 6 s)
	Outage   time.Duration // how long the output broker is down (default 5 s; issue 6 asks 30 s)
	RuleQos  int           // default 1
}

// DefaultOutageVariants are the variants of the CI run.
func DefaultOutageVariants() []OutageVariant {
	return []OutageVariant{
		{ResendPriority: 0},
		{ResendPriority: 1},
		{ResendPriority: 1, KillDuringOutage: true},
		{ResendPriority: 1, SharedBroker: true},
	}
}

func (p OutageParams) withDefaults() OutageParams {
	if len(p.Variants) == 0 {
		p.Variants = DefaultOutageVariants()
	}
	if p.Rate == 0 {
		p.Rate = 100
	}
	if p.Outage == 0 {
		p.Outage = 5 * time.Second
	}
	if p.Duration < p.Outage+4*time.Second {
		p.Duration = p.Outage + 6*time.Second
	}
	if p.RuleQos == 0 {
		p.RuleQos = 1
	}
	return p
}

// OutageResult is the account of one variant.
type OutageResult struct {
	Variant        OutageVariant  `json:"variant"`
	Name           string         `json:"name"`
	RuleQos        int            `json:"rule_qos"`
	OutageSeconds  float64        `json:"outage_seconds"`
	Restarts       DurationStats  `json:"restart_times"`
	Publish        PublishStats   `json:"publisher"`
	Counts         SeqCounts      `json:"counts"`
	CacheMetrics   map[string]any `json:"cache_metrics,omitempty"`
	RecoverSeconds float64        `json:"recover_seconds"` // broker back → every record published before it delivered
	Seconds        float64        `json:"seconds"`
}

// Violations lists broken promises: nothing lost; without a kill and with
// the source on a broker that stays up, every record exactly once; with resendPriority 1 strict order; with records
// produced during the outage, the cache must have engaged.
func (r OutageResult) Violations() []string {
	var v []string
	c := r.Counts
	if c.Lost > 0 {
		v = append(v, fmt.Sprintf("outage %s: %d of %d records lost (first %v)", r.Name, c.Lost, c.Sent, c.FirstLost))
	}
	// With a shared broker the source's own QoS 1 subscription also loses
	// its broker; MQTT redelivers a message whose PUBACK the stopping broker
	// never processed, so duplicates there are a reported figure.
	if !r.Variant.KillDuringOutage && !r.Variant.SharedBroker && c.Duplicated > 0 {
		v = append(v, fmt.Sprintf("outage %s: %d records delivered twice (first %v)", r.Name, c.Duplicated, c.FirstDupes))
	}
	if r.Variant.ResendPriority == 1 && !r.Variant.KillDuringOutage && c.Reordered > 0 {
		v = append(v, fmt.Sprintf("outage %s: %d records out of order with resendPriority 1", r.Name, c.Reordered))
	}
	if !r.Variant.SharedBroker && c.Resent == 0 {
		v = append(v, fmt.Sprintf("outage %s: no record marked resent: the sink cache did not engage", r.Name))
	}
	if c.Unexpected > 0 || c.Unreadable > 0 {
		v = append(v, fmt.Sprintf("outage %s: %d unexpected and %d unreadable outputs", r.Name, c.Unexpected, c.Unreadable))
	}
	return v
}

// RunOutage runs every variant: an MQTT rule whose mqtt sink has
// enableCache, resendPriority and resendIndicatorField "resent", under
// paced load, while the output broker (persistence on) is stopped for
// Outage and started again. An independent validator with a persistent
// session on the output broker checks every record.
func RunOutage(ctx context.Context, env Env, p OutageParams) ([]OutageResult, error) {
	p = p.withDefaults()
	var out []OutageResult
	for i, v := range p.Variants {
		r, err := runOutageVariant(ctx, env, p, v, i)
		if err != nil {
			return out, fmt.Errorf("outage %s: %w", v.Name(), err)
		}
		env.logf("outage %s: sent %d lost %d duplicated %d reordered %d resent %d (outage %.1fs)",
			r.Name, r.Counts.Sent, r.Counts.Lost, r.Counts.Duplicated, r.Counts.Reordered, r.Counts.Resent, r.OutageSeconds)
		out = append(out, r)
	}
	return out, nil
}

func runOutageVariant(ctx context.Context, env Env, p OutageParams, v OutageVariant, idx int) (OutageResult, error) {
	start := time.Now()
	res := OutageResult{Variant: v, Name: v.Name(), RuleQos: p.RuleQos}
	dir, err := env.sub(fmt.Sprintf("outage-%d-%s", idx, v.Name()))
	if err != nil {
		return res, err
	}
	outBroker, err := StartBroker(filepath.Join(dir, "broker-out"))
	if err != nil {
		return res, err
	}
	defer outBroker.Stop()
	inBroker := outBroker
	if !v.SharedBroker {
		if inBroker, err = StartBroker(filepath.Join(dir, "broker-in")); err != nil {
			return res, err
		}
		defer inBroker.Stop()
	}
	d, err := env.startDaemon(ctx, dir)
	if err != nil {
		return res, err
	}
	defer d.Kill()
	tag := "outage" + v.Name()
	spec := PipelineSpec{Stream: "s", Rule: "outage", SourceServer: inBroker.URL(), InTopic: "in/" + tag,
		SinkServer: outBroker.URL(), OutTopic: "out/" + tag, RuleQos: p.RuleQos,
		SinkProps: map[string]any{"enableCache": true, "resendPriority": v.ResendPriority, "resendIndicatorField": "resent"}}
	val, err := createValidated(ctx, d, spec, "validator-"+tag, "resent")
	if err != nil {
		return res, err
	}
	defer val.Close()
	pub := StartPublisher(ctx, PublisherConfig{Server: inBroker.URL(), ClientID: "publisher-" + tag,
		Topic: spec.InTopic, Rate: p.Rate, Duration: p.Duration})
	lead := (p.Duration - p.Outage) / 3
	time.Sleep(lead)
	outBroker.Stop()
	down := time.Now()
	var restarts []float64
	if v.KillDuringOutage {
		time.Sleep(p.Outage / 3)
		d.Kill()
		secs, err := restart(ctx, d)
		if err != nil {
			return res, fmt.Errorf("restart during outage: %w", err)
		}
		restarts = append(restarts, secs)
	}
	if wait := time.Until(down.Add(p.Outage)); wait > 0 {
		time.Sleep(wait)
	}
	if err := outBroker.Start(); err != nil {
		return res, fmt.Errorf("restart broker: %w", err)
	}
	up := time.Now()
	res.OutageSeconds = up.Sub(down).Seconds()
	// Recovery: until everything published before the broker returned
	// has arrived (the backlog is delivered).
	for backlog := pub.Sent(); time.Since(up) < 2*time.Minute && ctx.Err() == nil; time.Sleep(20 * time.Millisecond) {
		if val.Unique() >= backlog {
			res.RecoverSeconds = time.Since(up).Seconds()
			break
		}
	}
	res.Publish = pub.Wait()
	val.Drain(ctx, res.Publish.Sent, 10*time.Second, 2*time.Minute, time.Second)
	res.Counts = val.Counts(res.Publish.Sent)
	res.Restarts = summarize(restarts)
	if st, err := d.RuleStatus(spec.Rule); err == nil {
		res.CacheMetrics = map[string]any{}
		for k, val := range st {
			if strings.HasPrefix(k, "sink_") && strings.Contains(k, "_cache_") {
				res.CacheMetrics[k] = val
			}
		}
	}
	res.Seconds = time.Since(start).Seconds()
	d.Stop()
	return res, nil
}
