package qualify

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// Env is what every scenario needs: the kuiperd binary, a scratch folder
// the scenario owns (it creates its daemons and brokers below it) and a
// progress logger.
type Env struct {
	Bin  string
	Dir  string
	Logf func(format string, args ...any)
}

func (e Env) logf(format string, args ...any) {
	if e.Logf != nil {
		e.Logf(format, args...)
	}
}

// sub returns a fresh folder below the scenario's scratch folder.
func (e Env) sub(name string) (string, error) {
	dir := filepath.Join(e.Dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", dir, err)
	}
	return dir, nil
}

// stage makes the scenario's folder name, starts an MQTT broker in its
// broker/ folder and prepares (does not start) a daemon of bin in its
// kuiperd/ folder. The caller stops the broker; on an error none runs.
func (e Env) stage(name, bin string) (dir string, br *Broker, d *Daemon, err error) {
	if dir, err = e.sub(name); err != nil {
		return "", nil, nil, err
	}
	if br, err = StartBroker(filepath.Join(dir, "broker")); err != nil {
		return "", nil, nil, err
	}
	if d, err = NewDaemon(bin, filepath.Join(dir, "kuiperd"), ""); err != nil {
		br.Stop()
		return "", nil, nil, err
	}
	return dir, br, d, nil
}

// startDaemon prepares a daemon of e.Bin in dir's kuiperd/ folder and
// starts it. The caller kills it once it started.
func (e Env) startDaemon(ctx context.Context, dir string) (*Daemon, error) {
	d, err := NewDaemon(e.Bin, filepath.Join(dir, "kuiperd"), "")
	if err != nil {
		return nil, err
	}
	if err := d.Start(ctx); err != nil {
		return nil, err
	}
	return d, nil
}

// PipelineSpec describes one MQTT-to-MQTT rule: a stream over an mqtt
// source with a persistent session (QoS 1 subscription,
// enableClientSession, fixed client id, unless DefaultSession) and a rule SELECT * publishing one
// row per message at QoS 1.
type PipelineSpec struct {
	Stream, Rule     string
	SourceServer     string
	InTopic          string
	SinkServer       string
	OutTopic         string
	RuleQos          int
	SinkProps        map[string]any // merged into the mqtt action (cache options)
	CheckpointPeriod string         // default "1s"
	// DefaultSession leaves clientid and enableClientSession unset on the
	// source, so the session is whatever the daemon chooses by default.
	DefaultSession bool
}

// CreatePipeline defines the stream and the rule on d and waits until the
// rule runs with its source connected (so the broker holds the
// subscription before any record is published).
func CreatePipeline(ctx context.Context, d *Daemon, p PipelineSpec) error {
	confKey := p.Stream + "_conf"
	src := map[string]any{"server": p.SourceServer, "qos": 1}
	if !p.DefaultSession {
		src["clientid"], src["enableClientSession"] = "rekuiper-src-"+p.Rule, true
	}
	if _, err := d.Do(http.MethodPut, "/metadata/sources/mqtt/confKeys/"+confKey, src, nil); err != nil {
		return fmt.Errorf("define source confKey: %w", err)
	}
	sql := fmt.Sprintf(`CREATE STREAM %s (seq BIGINT, attempt BIGINT, ts BIGINT) WITH (DATASOURCE=%q, TYPE="mqtt", FORMAT="json", CONF_KEY=%q)`,
		p.Stream, p.InTopic, confKey)
	if _, err := d.Do(http.MethodPost, "/streams", map[string]any{"sql": sql}, nil); err != nil {
		return fmt.Errorf("create stream: %w", err)
	}
	sink := map[string]any{"server": p.SinkServer, "topic": p.OutTopic, "qos": 1, "sendSingle": true,
		"clientid": "rekuiper-sink-" + p.Rule}
	for k, v := range p.SinkProps {
		sink[k] = v
	}
	period := p.CheckpointPeriod
	if period == "" {
		period = "1s"
	}
	if _, err := d.Do(http.MethodPost, "/rules", map[string]any{
		"id": p.Rule, "sql": "SELECT * FROM " + p.Stream,
		"actions": []any{map[string]any{"mqtt": sink}},
		"options": map[string]any{"qos": p.RuleQos, "checkpointInterval": period},
	}, nil); err != nil {
		return fmt.Errorf("create rule: %w", err)
	}
	return WaitRuleConnected(ctx, d, p.Rule, p.Stream, 30*time.Second)
}

// createValidated subscribes a Validator (clientID, resentField as in
// StartValidator) to p's output topic, then creates the pipeline on d
// (CreatePipeline): the validator holds its subscription before the rule
// publishes anything. On an error the validator is closed.
func createValidated(ctx context.Context, d *Daemon, p PipelineSpec, clientID, resentField string) (*Validator, error) {
	val, err := StartValidator(p.SinkServer, clientID, p.OutTopic, resentField)
	if err != nil {
		return nil, err
	}
	if err := CreatePipeline(ctx, d, p); err != nil {
		val.Close()
		return nil, err
	}
	return val, nil
}

// WaitRuleConnected waits until the rule reports running and its source
// stream connected.
func WaitRuleConnected(ctx context.Context, d *Daemon, rule, stream string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	var st map[string]any
	for time.Now().Before(deadline) && ctx.Err() == nil {
		var err error
		st, err = d.RuleStatus(rule)
		if err == nil && st["status"] == "running" && asFloat(st["source_"+stream+"_0_connection_status"]) == 1 {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("rule %s not running with a connected source after %s: %v", rule, limit, st)
}

func asFloat(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case int64:
		return float64(x)
	case int:
		return float64(x)
	}
	return 0
}

// restart starts d and reports how long it took until /ping answered.
func restart(ctx context.Context, d *Daemon) (float64, error) {
	t0 := time.Now()
	if err := d.Start(ctx); err != nil {
		return 0, err
	}
	return time.Since(t0).Seconds(), nil
}

// DurationStats summarises a set of durations (restart times).
type DurationStats struct {
	Count int     `json:"count"`
	Min   float64 `json:"min_seconds"`
	Mean  float64 `json:"mean_seconds"`
	Max   float64 `json:"max_seconds"`
}

func summarize(xs []float64) DurationStats {
	s := DurationStats{Count: len(xs)}
	if len(xs) == 0 {
		return s
	}
	s.Min = xs[0]
	for _, x := range xs {
		s.Mean += x
		s.Min = min(s.Min, x)
		s.Max = max(s.Max, x)
	}
	s.Mean /= float64(len(xs))
	return s
}
