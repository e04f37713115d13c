package tracing

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/rekuiper/rekuiper/internal/config"
	"github.com/rekuiper/rekuiper/internal/row"
)

func newService(t *testing.T, cfg config.OpenTelemetry) *Service {
	t.Helper()
	s, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(context.Background()) }) //nolint:errcheck // test end
	return s
}

func localConfig(capacity int) config.OpenTelemetry {
	c := config.Default().OpenTelemetry
	c.LocalTraceCapacity = capacity
	return c
}

// traceRecord traces one record of stream s through ops, as the runtime
// does, and returns its trace id.
func traceRecord(t *testing.T, r *Rule, msg map[string]any, ops ...string) string {
	t.Helper()
	ctx := r.Sample(&row.Tuple{Emitter: "s", Message: msg})
	if ctx == nil {
		t.Fatal("record not sampled")
	}
	for _, op := range ops {
		sp := r.Start(ctx, op)
		sp.SetData(TuplesData([]*row.Tuple{{Emitter: "s", Message: msg}}))
		ctx = sp.Ctx()
		sp.End()
	}
	return ctx.TraceID()
}

func TestSampleStrategies(t *testing.T) {
	s := newService(t, localConfig(16))
	r := s.Rule("r1")
	if r.Sample(&row.Tuple{Emitter: "s", Message: map[string]any{"a": 1}}) != nil || r.On() {
		t.Fatal("a rule not enabled sampled a record")
	}
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	r.Enable(Head)
	if r.Sample(&row.Tuple{Emitter: "s", Message: map[string]any{"a": 1}}) != nil {
		t.Error("head sampled a record without traceparent")
	}
	for _, meta := range []map[string]any{
		{"traceparent": parent},
		{"userProperties": map[string]string{"traceparent": parent}},
		{"userProperties": map[string]any{"traceparent": parent}},
	} {
		ctx := r.Sample(&row.Tuple{Emitter: "s", Message: map[string]any{"a": 1}, Metadata: meta})
		if ctx == nil || ctx.TraceID() != "4bf92f3577b34da6a3ce929d0e0e4736" {
			t.Errorf("head with %v: %v, want the upstream trace", meta, ctx)
		}
	}
	r.Enable(Always)
	a := r.Sample(&row.Tuple{Emitter: "s", Message: map[string]any{"a": 1}})
	b := r.Sample(&row.Tuple{Emitter: "s", Message: map[string]any{"a": 2}})
	if a == nil || b == nil || a.TraceID() == b.TraceID() {
		t.Errorf("always: %v %v, want two traces", a, b)
	}
	r.Disable()
	if r.On() || s.Enabled("r1") {
		t.Error("disabled rule reads as traced")
	}
}

func TestStoreTreeAndIDs(t *testing.T) {
	s := newService(t, localConfig(16))
	r := s.Rule("r1")
	r.Enable(Always)
	id := traceRecord(t, r, map[string]any{"a": 1, "password": "hunter2"}, "1_filter", "2_project", "log_0")
	s.Rule("r2").Enable(Always)
	traceRecord(t, s.Rule("r2"), map[string]any{"b": 1})
	if ids := s.Store().TraceIDs("r1", 0); len(ids) != 1 || ids[0] != id {
		t.Fatalf("trace ids of r1: %v, want [%s]", ids, id)
	}
	root, ok := s.Store().Trace(id)
	if !ok {
		t.Fatal("trace not stored")
	}
	var names []string
	for sp := root; sp != nil; {
		names = append(names, sp.Name)
		if sp.RuleID != "r1" || sp.Attribute[RuleKey] != "r1" || sp.TraceID != id {
			t.Errorf("span %s: rule %q %v trace %s", sp.Name, sp.RuleID, sp.Attribute, sp.TraceID)
		}
		data, _ := sp.Attribute[DataKey].(string)
		if strings.Contains(data, "hunter2") || !strings.Contains(data, `"password":"******"`) {
			t.Errorf("span %s data %s: the secret column is not masked", sp.Name, data)
		}
		if len(sp.ChildSpan) > 1 {
			t.Fatalf("span %s has %d children", sp.Name, len(sp.ChildSpan))
		}
		if len(sp.ChildSpan) == 0 {
			break
		}
		if sp.ChildSpan[0].ParentSpanID != sp.SpanID {
			t.Errorf("child of %s has parent %s", sp.SpanID, sp.ChildSpan[0].ParentSpanID)
		}
		sp = sp.ChildSpan[0]
	}
	if got := strings.Join(names, ">"); got != "s>1_filter>2_project>log_0" {
		t.Errorf("span tree %s", got)
	}
	if root.ParentSpanID != "0000000000000000" {
		t.Errorf("root parent %q, want eKuiper's zero id", root.ParentSpanID)
	}
	b, _ := json.Marshal(root)
	for _, key := range []string{`"name":"s"`, `"traceID":`, `"spanID":`, `"parentSpanID":`, `"attribute":`, `"startTime":`, `"endTime":`, `"ruleID":"r1"`, `"ChildSpan":[`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("span JSON lacks %s: %s", key, b)
		}
	}
	if _, ok := s.Store().Trace("00000000000000000000000000000001"); ok {
		t.Error("unknown trace found")
	}
}

// TestStoreEvictsOldestTraces: the store keeps the last capacity traces.
func TestStoreEvictsOldestTraces(t *testing.T) {
	const capacity = 4
	s := newService(t, localConfig(capacity))
	r := s.Rule("r1")
	r.Enable(Always)
	var ids []string
	for i := range 10 {
		ids = append(ids, traceRecord(t, r, map[string]any{"i": i}, "1_project"))
	}
	got := s.Store().TraceIDs("r1", 0)
	want := []string{ids[9], ids[8], ids[7], ids[6]}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("kept %v, want the newest %v", got, want)
	}
	if got := s.Store().TraceIDs("r1", 2); fmt.Sprint(got) != fmt.Sprint(want[:2]) {
		t.Errorf("limit 2: %v", got)
	}
	if _, ok := s.Store().Trace(ids[0]); ok {
		t.Error("evicted trace still served")
	}
	if root, ok := s.Store().Trace(ids[9]); !ok || len(root.ChildSpan) != 1 {
		t.Errorf("newest trace: %+v %v", root, ok)
	}
}

func TestDataBounded(t *testing.T) {
	long := strings.Repeat("é", MaxData)
	d := TuplesData([]*row.Tuple{{Message: map[string]any{"x": long}}})
	if len(d) > MaxData+64 || !strings.HasSuffix(d, "bytes, cut)") {
		t.Errorf("data of %d bytes not bounded: %d bytes, ends %q", len(long), len(d), d[len(d)-20:])
	}
	if d := ResultsData([]map[string]any{{"token": "abc", "url": "tcp://u:secret@h:1"}}); strings.Contains(d, "abc") || strings.Contains(d, "secret") {
		t.Errorf("results data not masked: %s", d)
	}
}

// collector is an in-process OTLP/HTTP receiver.
type collector struct {
	mu    sync.Mutex
	spans []*tracepb.Span
	attrs map[string]string // resource attributes
	paths []string
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	var req collectorpb.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	c.paths = append(c.paths, r.URL.Path)
	for _, rs := range req.ResourceSpans {
		for _, a := range rs.GetResource().GetAttributes() {
			c.attrs[a.Key] = a.GetValue().GetStringValue()
		}
		for _, ss := range rs.ScopeSpans {
			c.spans = append(c.spans, ss.Spans...)
		}
	}
	c.mu.Unlock()
	b, _ := proto.Marshal(&collectorpb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(b) //nolint:errcheck // test receiver
}

// TestOTLPExport: with a collector configured, spans arrive over
// OTLP/HTTP with their names, trace, parents and attributes, and the
// service name as a resource attribute.
func TestOTLPExport(t *testing.T) {
	c := &collector{attrs: map[string]string{}}
	srv := httptest.NewServer(c)
	defer srv.Close()
	for _, endpoint := range []string{strings.TrimPrefix(srv.URL, "http://"), srv.URL + "/otlp/v1/traces"} {
		t.Run(endpoint, func(t *testing.T) {
			c.mu.Lock()
			c.spans, c.paths = nil, nil
			c.mu.Unlock()
			cfg := localConfig(8)
			cfg.EnableRemoteCollector, cfg.RemoteEndpoint, cfg.ServiceName = true, endpoint, "edge-test"
			s := newService(t, cfg)
			r := s.Rule("r1")
			r.Enable(Always)
			id := traceRecord(t, r, map[string]any{"temperature": 31.5}, "1_filter", "2_project")
			if err := s.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.attrs["service.name"] != "edge-test" {
				t.Errorf("resource attributes %v", c.attrs)
			}
			wantPath := "/v1/traces"
			if strings.Contains(endpoint, "/otlp/") {
				wantPath = "/otlp/v1/traces"
			}
			if len(c.paths) == 0 || c.paths[0] != wantPath {
				t.Errorf("posted to %v, want %s", c.paths, wantPath)
			}
			byName := map[string]*tracepb.Span{}
			for _, sp := range c.spans {
				byName[sp.Name] = sp
				if got := fmt.Sprintf("%x", sp.TraceId); got != id {
					t.Errorf("span %s in trace %s, want %s", sp.Name, got, id)
				}
				attrs := map[string]string{}
				for _, a := range sp.Attributes {
					attrs[a.Key] = a.GetValue().GetStringValue()
				}
				if attrs[RuleKey] != "r1" || attrs[DataKey] != `{"temperature":31.5}` {
					t.Errorf("span %s attributes %v", sp.Name, attrs)
				}
			}
			if len(c.spans) != 3 || byName["s"] == nil || byName["1_filter"] == nil || byName["2_project"] == nil {
				t.Fatalf("received %d spans %v, want s, 1_filter, 2_project", len(c.spans), byName)
			}
			if string(byName["2_project"].ParentSpanId) != string(byName["1_filter"].SpanId) ||
				string(byName["1_filter"].ParentSpanId) != string(byName["s"].SpanId) || len(byName["s"].ParentSpanId) != 0 {
				t.Error("parent links do not follow the operator chain")
			}
		})
	}
}
