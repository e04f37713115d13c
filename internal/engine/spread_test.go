package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/rekuiper/rekuiper/internal/rule"
)

// TestSplitSpread: which rules over MQTT streams run as one copy on every
// node of a cluster, and why the others run whole.
func TestSplitSpread(t *testing.T) {
	e := newTestEnv(t)
	ctx := context.Background()
	for key, props := range map[string]map[string]any{
		"m":     {"server": "tcp://127.0.0.1:1"},
		"fixed": {"server": "tcp://127.0.0.1:1", "clientid": "me"},
	} {
		e.confKey(t, "mqtt", key, props)
	}
	for name, sql := range map[string]string{
		"sh":    `CREATE STREAM sh (dev STRING, v BIGINT) WITH (TYPE="mqtt", DATASOURCE="$share/g/in", CONF_KEY="m")`,
		"sh2":   `CREATE STREAM sh2 (dev STRING, v BIGINT) WITH (TYPE="mqtt", DATASOURCE="$share/g/a,$share/g/b", CONF_KEY="m")`,
		"mixed": `CREATE STREAM mixed (dev STRING, v BIGINT) WITH (TYPE="mqtt", DATASOURCE="$share/g/a,b", CONF_KEY="m")`,
		"plain": `CREATE STREAM plain (dev STRING, v BIGINT) WITH (TYPE="mqtt", DATASOURCE="in", CONF_KEY="m")`,
		"fx":    `CREATE STREAM fx (dev STRING, v BIGINT) WITH (TYPE="mqtt", DATASOURCE="$share/g/in", CONF_KEY="fixed")`,
		"ses":   `CREATE STREAM ses (dev STRING, v BIGINT) WITH (TYPE="mqtt", DATASOURCE="$share/g/in", CONF_KEY="m", EXTRA="{\"enableClientSession\":true,\"clientid\":\"c\"}")`,
	} {
		e.putStream(t, name, sql)
	}
	mqttOut := func(props map[string]any) []rule.Action { return []rule.Action{{Type: "mqtt", Props: props}} }
	for _, tc := range []struct {
		name, sql string
		opts      rule.Options
		actions   []rule.Action
		reason    string // a part of the reason, when not spread
	}{
		{name: "select where", sql: "SELECT * FROM sh WHERE v > 1"},
		{name: "scalar functions, order and limit per message", sql: "SELECT upper(dev) AS d, meta(topic) AS t FROM sh2 ORDER BY v LIMIT 3"},
		{name: "qos 2", sql: "SELECT * FROM sh", opts: rule.Options{Qos: 2}},
		{name: "sink without clientid", sql: "SELECT * FROM sh", actions: mqttOut(map[string]any{"topic": "o"})},
		{name: "window", sql: "SELECT count(*) FROM sh GROUP BY TUMBLINGWINDOW(ss, 1)", reason: "window"},
		{name: "group by", sql: "SELECT dev FROM sh GROUP BY dev", reason: "GROUP BY"},
		{name: "aggregate", sql: "SELECT count(*) FROM sh", reason: "aggregate function count"},
		{name: "analytic", sql: "SELECT lag(v) AS l FROM sh", reason: "analytic function lag"},
		{name: "changed", sql: "SELECT changed_col(true, v) AS c FROM sh", reason: "changed_col"},
		{name: "analytic in where", sql: "SELECT * FROM sh WHERE had_changed(true, v)", reason: "had_changed"},
		{name: "last hit", sql: "SELECT last_hit_count() AS n FROM sh WHERE v > 1", reason: "last_hit_count"},
		{name: "over", sql: "SELECT lag(v) OVER (PARTITION BY dev) AS l FROM sh", reason: "lag"},
		{name: "event time", sql: "SELECT * FROM sh", opts: rule.Options{IsEventTime: true}, reason: "event time"},
		{name: "plain topic", sql: "SELECT * FROM plain", reason: `topic "in" is not a shared subscription`},
		{name: "one plain topic among shared", sql: "SELECT * FROM mixed", reason: `topic "b" is not a shared`},
		{name: "fixed source clientid", sql: "SELECT * FROM fx", reason: "fixed clientid"},
		{name: "persistent session", sql: "SELECT * FROM ses", reason: "fixed clientid"},
		{name: "fixed sink clientid", sql: "SELECT * FROM sh", actions: mqttOut(map[string]any{"topic": "o", "clientid": "out"}), reason: "mqtt action has a fixed clientid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			def := &rule.Def{ID: "r", SQL: tc.sql, Options: tc.opts, Actions: tc.actions}
			sp, err := e.runner.Split(ctx, def)
			if err != nil {
				t.Fatal(err)
			}
			if sp.Spread != (tc.reason == "") || sp.Partitions != 0 {
				t.Fatalf("split %+v, want spread %v", sp, tc.reason == "")
			}
			if !strings.Contains(sp.SpreadReason, tc.reason) || (tc.reason == "") != (sp.SpreadReason == "") {
				t.Errorf("reason %q does not say %q", sp.SpreadReason, tc.reason)
			}
		})
	}
	// A stream whose properties do not resolve runs whole (and fails
	// there, visibly), rather than never being placed.
	e.putStream(t, "nokey", `CREATE STREAM nokey (v BIGINT) WITH (TYPE="mqtt", DATASOURCE="$share/g/in", CONF_KEY="missing")`)
	if sp, err := e.runner.Split(ctx, &rule.Def{ID: "r", SQL: "SELECT * FROM nokey"}); err != nil || sp.Spread || !strings.Contains(sp.Reason, "missing") {
		t.Fatalf("unknown confKey: split %+v, err %v; want whole, with the reason", sp, err)
	}
	// A join of two shared MQTT streams keeps state (the window), and is
	// not considered at all.
	sp, err := e.runner.Split(ctx, &rule.Def{ID: "j", SQL: "SELECT * FROM sh INNER JOIN sh2 ON sh.dev = sh2.dev GROUP BY TUMBLINGWINDOW(ss, 1)"})
	if err != nil || sp.Spread {
		t.Fatalf("join: split %+v, err %v", sp, err)
	}
}
