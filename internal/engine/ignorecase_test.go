package engine

import (
	"context"
	"testing"

	"github.com/rekuiper/rekuiper/internal/connector/membus"
)

// TestIgnoreCaseRule runs the same rule over a schemaless stream with
// Runner.IgnoreCase (kuiper.yaml basic.ignoreCase) off and on: the payload
// spells the field "Temp", the query "temp".
func TestIgnoreCaseRule(t *testing.T) {
	for _, c := range []struct {
		on   bool
		want string
	}{{false, `[{}]`}, {true, `[{"temp":21}]`}} {
		e := newTestEnv(t)
		e.runner.cfg.IgnoreCase = c.on
		ctx := context.Background()
		e.putStream(t, "free", `CREATE STREAM free () WITH (DATASOURCE="free", TYPE="memory")`)
		run := startRule(t, e, `{"id":"ic","sql":"SELECT temp FROM free WHERE TEMP > 20","actions":[{"counting":{}}]}`)
		for _, v := range []int64{19, 21} {
			if err := e.bus.Publish(ctx, membus.Message{Topic: "free", Data: map[string]any{"Temp": v, "temp_x": v}}); err != nil {
				t.Fatal(err)
			}
		}
		if !c.on {
			// Off, the WHERE reads nil for TEMP and drops both rows;
			// a third row that spells the field as the query does passes.
			if err := e.bus.Publish(ctx, membus.Message{Topic: "free", Data: map[string]any{"TEMP": int64(30)}}); err != nil {
				t.Fatal(err)
			}
		}
		msgs, _ := e.out.wait(t, 1)
		if msgs[0] != c.want {
			t.Errorf("ignoreCase %v: emitted %v, want %s first", c.on, msgs, c.want)
		}
		if err := run.Stop(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
