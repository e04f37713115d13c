package server_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/connector/membus"
	"github.com/rekuiper/rekuiper/internal/testwait"
	"github.com/rekuiper/rekuiper/internal/tracing"
)

// traceChain reads GET /trace/{id} and follows the first child from the
// root: the span names and the last span.
func (e *engineServer) traceChain(id string) ([]string, *tracing.LocalSpan) {
	e.t.Helper()
	code, body := e.do("GET", "/trace/"+id, "")
	if code != 200 {
		e.t.Fatalf("GET /trace/%s: %d %s", id, code, body)
	}
	var root tracing.LocalSpan
	if err := json.Unmarshal([]byte(body), &root); err != nil {
		e.t.Fatalf("GET /trace/%s: %v: %s", id, err, body)
	}
	var names []string
	sp := &root
	for {
		names = append(names, sp.Name)
		if len(sp.ChildSpan) == 0 {
			return names, sp
		}
		sp = sp.ChildSpan[0]
	}
}

// traceOf waits for a trace of rule r1 whose record (the root span's data)
// is data, and returns its id.
func (e *engineServer) traceOf(data string) string {
	e.t.Helper()
	var found string
	testwait.Until(e.t, "a trace of record "+data, func() bool {
		for _, id := range e.traceIDs("") {
			var root tracing.LocalSpan
			_, body := e.do("GET", "/trace/"+id, "")
			if json.Unmarshal([]byte(body), &root) == nil && root.Attribute["data"] == data {
				found = id
				return true
			}
		}
		return false
	})
	return found
}

// waitChain waits until the span chain of trace id (traceChain) holds a
// span whose name ok accepts: a span is stored when it ends, so the
// operators' spans come after the source's.
func (e *engineServer) waitChain(id, what string, ok func(name string) bool) ([]string, *tracing.LocalSpan) {
	e.t.Helper()
	var names []string
	var last *tracing.LocalSpan
	testwait.Until(e.t, what, func() bool {
		names, last = e.traceChain(id)
		return slices.ContainsFunc(names, ok)
	})
	return names, last
}

func (e *engineServer) traceIDs(query string) []string {
	e.t.Helper()
	code, body := e.do("GET", "/trace/rule/r1"+query, "")
	var ids []string
	if err := json.Unmarshal([]byte(body), &ids); code != 200 || err != nil {
		e.t.Fatalf("GET /trace/rule/r1%s: %d %v %s", query, code, err, body)
	}
	return ids
}

// TestTraceRoutes runs a real rule over a memory stream: tracing starts
// only on a running rule with a known strategy; each record then gets a
// trace from its stream through the operators to the sink (a record the
// WHERE drops ends at the filter), listed newest first and served as a
// span tree in eKuiper's shape; after stop, records are no longer traced.
func TestTraceRoutes(t *testing.T) {
	e := newEngineEtc(t, nil)
	bus := e.daemon.Memory
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := bus.Subscribe("trace/out", 64)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	e.run([]step{
		{"stream", "POST", "/streams", `{"sql":"CREATE STREAM demo () WITH (TYPE=\"memory\", DATASOURCE=\"trace/in\", FORMAT=\"json\")"}`, 201, ""},
		{"rule", "POST", "/rules", `{"id":"r1","sql":"SELECT a FROM demo WHERE a > 5","actions":[{"memory":{"topic":"trace/out"}}]}`, 201, ""},
		{"unknown rule", "POST", "/rules/nope/trace/start", `{"strategy":"always"}`, 404, "nope"},
		{"bad strategy", "POST", "/rules/r1/trace/start", `{"strategy":"sometimes"}`, 400, `strategy \"sometimes\"`},
		{"bad body", "POST", "/rules/r1/trace/start", `{"strategy":`, 400, ""},
		{"collector over rest", "POST", "/tracer", `{"action":"start","collector_url":"http://127.0.0.1:4318"}`, 501, "kuiper.yaml"},
		{"untraced", "GET", "/rules", "", 200, `"trace":false`},
	})
	e.waitStatus("r1", "running", func(m map[string]any) bool { return m["status"] == "running" })
	e.run([]step{
		{"start", "POST", "/rules/r1/trace/start", `{"strategy":"always"}`, 200, ""},
		{"traced", "GET", "/rules", "", 200, `"trace":true`},
	})
	publish := func(a int) {
		if err := bus.Publish(ctx, membus.Message{Topic: "trace/in", Data: map[string]any{"a": a}}); err != nil {
			t.Fatal(err)
		}
	}
	// Publish until the stream delivers (the first messages may go out
	// before it subscribed), then let the sink's output show it went out.
	testwait.Until(t, "a trace of a published record", func() bool {
		if len(e.traceIDs("")) > 0 {
			return true
		}
		publish(10)
		return false
	})
	if ids := e.traceIDs("?limit=1"); len(ids) != 1 {
		t.Fatalf("limit 1: %v", ids)
	}
	passed := e.traceOf(`{"a":10}`)
	// The sink's span ends after its write.
	names, last := e.waitChain(passed, "the sink's span of the passing record", func(name string) bool {
		return strings.HasPrefix(name, "memory")
	})
	chain := strings.Join(names, ">")
	t.Logf("spans of a passing record: %s", chain)
	if !strings.HasPrefix(chain, "demo>") || !strings.Contains(chain, "_filter>") || !strings.Contains(chain, "_project>") {
		t.Errorf("passing record's spans %s", chain)
	}
	if last.Attribute["data"] != `[{"a":10}]` || last.Attribute["rule"] != "r1" || last.RuleID != "r1" {
		t.Errorf("sink span %+v", last)
	}

	publish(4)
	dropped := e.traceOf(`{"a":4}`)
	// The root span ends before the filter's: wait for the filter's span,
	// then check that nothing follows it.
	names, _ = e.waitChain(dropped, "the filter's span of the dropped record", func(name string) bool {
		return strings.HasSuffix(name, "_filter")
	})
	if !strings.HasSuffix(names[len(names)-1], "_filter") {
		t.Errorf("dropped record's spans %v, want them to end at the filter", names)
	}

	e.run([]step{
		{"stop", "POST", "/rules/r1/trace/stop", "", 200, ""},
		{"untraced again", "GET", "/rules", "", 200, `"trace":false`},
		{"bad limit", "GET", "/trace/rule/r1?limit=x", "", 400, "limit"},
		{"unknown trace", "GET", "/trace/0123456789abcdef0123456789abcdef", "", 404, ""},
		{"other rule", "GET", "/trace/rule/r2", "", 200, "[]"},
		{"stop unknown", "POST", "/rules/nope/trace/stop", "", 404, ""},
	})
	n := len(e.traceIDs(""))
	publish(11)
	for {
		m, err := out.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := json.Marshal(m.Data); strings.Contains(string(b), `"a":11`) {
			break
		}
	}
	// The record went through the rule: had it been traced, its source
	// span would be stored before its output left.
	if got := len(e.traceIDs("")); got != n {
		t.Errorf("%d traces after stop, want %d", got, n)
	}
	e.run([]step{
		{"stop the rule", "POST", "/rules/r1/stop", "", 200, ""},
		{"not running", "POST", "/rules/r1/trace/start", `{"strategy":"head"}`, 400, "running rule"},
	})
}
