package qualify

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"
)

// CrashParams configure the MQTT crash scenario.
type CrashParams struct {
	Qos      []int         // rule qos levels to run (default 0, 1, 2)
	Kills    int           // SIGKILLs per qos level (default 10)
	Rate     float64       // records per second (default 100)
	Duration time.Duration // publishing time per qos level (default 10 s)
	Seed     uint64
	// DefaultSession runs the source with no session settings (no
	// clientid, no enableClientSession): what a user gets without asking.
	DefaultSession bool
}

func (p CrashParams) withDefaults() CrashParams {
	if len(p.Qos) == 0 {
		p.Qos = []int{0, 1, 2}
	}
	if p.Kills == 0 {
		p.Kills = 10
	}
	if p.Rate == 0 {
		p.Rate = 100
	}
	if p.Duration == 0 {
		p.Duration = 10 * time.Second
	}
	return p
}

// CrashResult is the account of one qos level of the crash scenario.
type CrashResult struct {
	Qos int `json:"qos"`
	// DefaultSession: the source had no session settings.
	DefaultSession bool          `json:"default_session,omitempty"`
	Kills          int           `json:"kills"`
	Restarts       DurationStats `json:"restart_times"`
	Publish        PublishStats  `json:"publisher"`
	Counts         SeqCounts     `json:"counts"`
	Seconds        float64       `json:"seconds"`
}

// Violations lists what the design promises and this run broke: at qos >= 1
// no published record may be missing from the output. qos 0 loss is a
// figure, not a violation.
func (r CrashResult) Violations() []string {
	var v []string
	name := fmt.Sprintf("crash qos %d", r.Qos)
	if r.DefaultSession {
		name += " (default session settings)"
	}
	if r.Qos >= 1 && r.Counts.Lost > 0 {
		v = append(v, fmt.Sprintf("%s: %d of %d records lost after %d kills (first %v)", name, r.Counts.Lost, r.Counts.Sent, r.Kills, r.Counts.FirstLost))
	}
	if r.Counts.Unexpected > 0 || r.Counts.Unreadable > 0 {
		v = append(v, fmt.Sprintf("%s: %d unexpected and %d unreadable outputs", name, r.Counts.Unexpected, r.Counts.Unreadable))
	}
	return v
}

// RunCrash runs, for each qos level, an MQTT-to-MQTT rule (SELECT * over a
// QoS 1 subscription, with a persistent session set by hand or, with
// DefaultSession, none of the session settings) under paced load, kills kuiperd
// with SIGKILL Kills times at random moments spread over the run,
// restarts it at once each time, and counts with an independent validator
// what was lost and duplicated.
func RunCrash(ctx context.Context, env Env, p CrashParams) ([]CrashResult, error) {
	p = p.withDefaults()
	bdir, err := env.sub("crash-broker")
	if err != nil {
		return nil, err
	}
	br, err := StartBroker(bdir)
	if err != nil {
		return nil, err
	}
	defer br.Stop()
	var out []CrashResult
	for _, q := range p.Qos {
		r, err := runCrashQos(ctx, env, br, p, q)
		if err != nil {
			return out, fmt.Errorf("crash qos %d: %w", q, err)
		}
		env.logf("crash qos %d: sent %d lost %d duplicated %d reordered %d after %d kills",
			q, r.Counts.Sent, r.Counts.Lost, r.Counts.Duplicated, r.Counts.Reordered, r.Kills)
		out = append(out, r)
	}
	return out, nil
}

func runCrashQos(ctx context.Context, env Env, br *Broker, p CrashParams, q int) (CrashResult, error) {
	start := time.Now()
	res := CrashResult{Qos: q, DefaultSession: p.DefaultSession}
	tag, folder := fmt.Sprintf("crash%d", q), "crash-qos"+strconv.Itoa(q)
	if p.DefaultSession {
		tag, folder = fmt.Sprintf("crashdefault%d", q), folder+"-default-session"
	}
	dir, err := env.sub(folder)
	if err != nil {
		return res, err
	}
	d, err := env.startDaemon(ctx, dir)
	if err != nil {
		return res, err
	}
	defer d.Kill()
	spec := PipelineSpec{Stream: "s", Rule: tag, SourceServer: br.URL(), InTopic: "in/" + tag,
		SinkServer: br.URL(), OutTopic: "out/" + tag, RuleQos: q, DefaultSession: p.DefaultSession}
	val, err := createValidated(ctx, d, spec, "validator-"+tag, "")
	if err != nil {
		return res, err
	}
	defer val.Close()
	pub := StartPublisher(ctx, PublisherConfig{Server: br.URL(), ClientID: "publisher-" + tag,
		Topic: spec.InTopic, Rate: p.Rate, Duration: p.Duration})
	rng := rand.New(rand.NewPCG(p.Seed+uint64(q), 11))
	// Kill moments are uniform over the publishing time, sorted.
	moments := make([]time.Duration, p.Kills)
	for i := range moments {
		moments[i] = time.Duration(rng.Int64N(int64(p.Duration)))
	}
	slices.Sort(moments)
	var restarts []float64
	for _, m := range moments {
		if wait := time.Until(start.Add(m)); wait > 0 {
			time.Sleep(wait)
		}
		d.Kill()
		res.Kills++
		secs, err := restart(ctx, d)
		if err != nil {
			return res, fmt.Errorf("restart after kill %d: %w", res.Kills, err)
		}
		restarts = append(restarts, secs)
	}
	res.Publish = pub.Wait()
	val.Drain(ctx, res.Publish.Sent, 10*time.Second, 2*time.Minute, time.Second)
	res.Counts = val.Counts(res.Publish.Sent)
	res.Restarts = summarize(restarts)
	res.Seconds = time.Since(start).Seconds()
	d.Stop()
	return res, nil
}
