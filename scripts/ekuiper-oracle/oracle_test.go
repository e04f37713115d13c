//go:build ekuiper_oracle

// This file is rekuiper's replay driver for eKuiper's rule test harness.
// scripts/ekuiper-oracle.sh copies it into eKuiper's
// internal/topo/topotest package (dropping the build line above, which
// keeps it out of rekuiper's own build) and compiles the package's test
// binary. TestOracle replays conformance cases (the format of
// docs/kuiper-test.md) through eKuiper's planner, mock sources, mock clock
// and memory sink, the way the harness runs its own tests, and writes each
// case back with "expected" replaced by what eKuiper emitted.
//
// Environment: ORACLE_CASES, comma-separated case files or folders;
// ORACLE_OUT, the folder written to (one file per case, same base name;
// the input's folder structure is not kept, so names must be unique).
// A case eKuiper cannot run gets "oracle_error" instead of "expected".
package topotest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lf-edge/ekuiper/v2/internal/io/memory/pubsub"
	"github.com/lf-edge/ekuiper/v2/internal/pkg/def"
	"github.com/lf-edge/ekuiper/v2/internal/processor"
	"github.com/lf-edge/ekuiper/v2/internal/topo/planner"
	"github.com/lf-edge/ekuiper/v2/internal/topo/topotest/mocknode"
	"github.com/lf-edge/ekuiper/v2/internal/xsql"
	"github.com/lf-edge/ekuiper/v2/pkg/ast"
	"github.com/lf-edge/ekuiper/v2/pkg/timex"
)

type oracleCase struct {
	Name     string                   `json:"name"`
	Streams  []string                 `json:"streams"`
	Inputs   map[string][]oracleEvent `json:"inputs"`
	Tables   map[string][]any         `json:"tables"`
	Start    int64                    `json:"start_time"`
	Timeline []struct {
		At     int64  `json:"at"`
		Stream string `json:"stream"`
		Index  int    `json:"index"`
	} `json:"timeline"`
	Rule struct {
		ID      string         `json:"id"`
		SQL     string         `json:"sql"`
		Options map[string]any `json:"options"`
	} `json:"rule"`
	Skip any `json:"skip"`
}

type oracleEvent struct {
	TS   int64          `json:"ts"`
	Data map[string]any `json:"data"`
}

var (
	createRe     = regexp.MustCompile("(?is)^\\s*CREATE\\s+(STREAM|TABLE)\\s+(`[^`]+`|\\w+)")
	datasourceRe = regexp.MustCompile(`(?i)DATASOURCE\s*=\s*"([^"]*)"`)
)

func TestOracle(t *testing.T) {
	out := os.Getenv("ORACLE_OUT")
	if out == "" || os.Getenv("ORACLE_CASES") == "" {
		t.Skip("ORACLE_CASES and ORACLE_OUT not set")
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, p := range strings.Split(os.Getenv("ORACLE_CASES"), ",") {
		_ = filepath.Walk(p, func(path string, info os.FileInfo, err error) error {
			if err == nil && !info.IsDir() && strings.HasSuffix(path, ".json") && filepath.Base(path) != "INDEX.json" {
				files = append(files, path)
			}
			return nil
		})
	}
	sort.Strings(files)
	for n, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]json.RawMessage
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var c oracleCase
		if err := dec.Decode(&c); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if c.Skip != nil {
			continue
		}
		id := c.Rule.ID
		if id == "" {
			id = fmt.Sprintf("oracle_%d", n)
		}
		emissions, err := runOracleCase(&c, id)
		delete(doc, "expected")
		delete(doc, "oracle_error")
		if err != nil {
			doc["oracle_error"], _ = json.Marshal(err.Error())
		} else {
			var b bytes.Buffer
			writeEmissions(&b, emissions)
			doc["expected"] = b.Bytes()
		}
		res, err := json.Marshal(doc)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		var pretty bytes.Buffer
		_ = json.Indent(&pretty, res, "", " ")
		pretty.WriteByte('\n')
		if err := os.WriteFile(filepath.Join(out, filepath.Base(f)), pretty.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// runOracleCase creates the case's streams, feeds their mock sources with
// the case's inputs and steps the mock clock along the case's timeline, as
// the harness's sendData does, then collects the memory sink's deliveries
// until every source has sent EOF.
func runOracleCase(c *oracleCase, id string) (result [][]map[string]any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	if len(c.Tables) > 0 {
		return nil, fmt.Errorf("file-backed tables are not replayed by the oracle")
	}
	p := processor.NewStreamProcessor()
	for _, s := range c.Streams {
		m := createRe.FindStringSubmatch(s)
		if m == nil {
			return nil, fmt.Errorf("not a CREATE STREAM or TABLE: %s", s)
		}
		name := strings.Trim(m[2], "`")
		kind := ast.TypeStream
		if strings.EqualFold(m[1], "TABLE") {
			kind = ast.TypeTable
		}
		_, _ = p.DropStream(name, kind)
		if _, err := p.ExecStmt(s); err != nil {
			return nil, fmt.Errorf("create %s: %w", name, err)
		}
		ds := name
		if d := datasourceRe.FindStringSubmatch(s); d != nil {
			ds = d[1]
		}
		tuples := make([]*xsql.Tuple, 0, len(c.Inputs[name]))
		for _, ev := range c.Inputs[name] {
			tuples = append(tuples, &xsql.Tuple{Emitter: name, Message: oracleValue(ev.Data).(map[string]any), Timestamp: time.UnixMilli(ev.TS)})
		}
		mocknode.TestData[ds] = tuples
	}
	opts := &def.RuleOption{}
	if len(c.Rule.Options) > 0 {
		b, _ := json.Marshal(c.Rule.Options)
		if err := json.Unmarshal(b, opts); err != nil {
			return nil, fmt.Errorf("rule options: %w", err)
		}
	}
	for timex.GetNowInMilli() != c.Start {
		timex.Set(c.Start)
	}
	rule := &def.Rule{Id: id, Sql: c.Rule.SQL, Options: opts,
		Actions: []map[string]any{{"memory": map[string]any{"topic": id, "sendSingle": false}}}}
	tp, err := planner.Plan(rule)
	if err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	errCh := tp.Open()
	defer tp.Cancel()
	consumer := pubsub.CreateSub(id, nil, id, 10000)
	defer pubsub.CloseSourceConsumerChannel(id, id)
	go func() {
		// The pauses are pacing, not waits: eKuiper's mock sources and
		// windows react to the mock clock on their own goroutines, and
		// nothing they expose says they have taken a step, so the clock
		// moves on after a pause.
		for _, step := range c.Timeline {
			time.Sleep(5 * time.Millisecond)
			target := time.UnixMilli(step.At)
			for n := timex.GetNow().Add(100 * time.Millisecond); target.Add(100 * time.Millisecond).After(n); n = n.Add(100 * time.Millisecond) {
				if target.Before(n) {
					n = target
				}
				timex.Set(n.UnixMilli())
				time.Sleep(time.Millisecond)
			}
		}
	}()
	var got []any
	timeout := time.After(20 * time.Second)
wait:
	for {
		select {
		case <-errCh:
			_ = tp.GracefulStop(0)
			break wait
		case v := <-consumer:
			got = append(got, v)
		case <-timeout:
			_ = tp.GracefulStop(0)
			return nil, fmt.Errorf("timeout: the rule did not finish")
		}
	}
drain:
	for {
		select {
		case v := <-consumer:
			got = append(got, v)
		default:
			break drain
		}
	}
	select {
	case v := <-consumer:
		got = append(got, v)
	case <-time.After(50 * time.Millisecond):
	}
	return CommonResultFunc(got), nil
}

// oracleValue turns decoded case JSON into the values the harness's mock
// data holds: integers as Go int, decimals as float64, {"$bytes": b64} as
// []byte.
func oracleValue(v any) any {
	switch x := v.(type) {
	case json.Number:
		s := x.String()
		if !strings.ContainsAny(s, ".eE") {
			if i, err := strconv.ParseInt(s, 10, 64); err == nil {
				return int(i)
			}
		}
		f, _ := x.Float64()
		return f
	case []any:
		for i := range x {
			x[i] = oracleValue(x[i])
		}
		return x
	case map[string]any:
		if b, ok := x["$bytes"].(string); ok && len(x) == 1 {
			if raw, err := base64.StdEncoding.DecodeString(b); err == nil {
				return raw
			}
		}
		for k := range x {
			x[k] = oracleValue(x[k])
		}
		return x
	}
	return v
}

// writeEmissions writes values in the corpus encoding: floats always with a
// fraction or exponent, byte slices as {"$bytes"}, datetimes as a JSON sink
// writes them (UTC), nil slices and maps as null.
func writeEmissions(b *bytes.Buffer, ems [][]map[string]any) {
	b.WriteByte('[')
	for i, em := range ems {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('[')
		for j, r := range em {
			if j > 0 {
				b.WriteByte(',')
			}
			writeValue(b, r)
		}
		b.WriteByte(']')
	}
	b.WriteByte(']')
}

func writeValue(b *bytes.Buffer, v any) {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
		return
	case []byte:
		fmt.Fprintf(b, `{"$bytes":%q}`, base64.StdEncoding.EncodeToString(x))
		return
	case time.Time:
		fmt.Fprintf(b, "%q", x.UTC().Format("2006-01-02 15:04:05.999999999"))
		return
	case error:
		s, _ := json.Marshal(x.Error())
		b.Write(s)
		return
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		b.WriteString(strconv.FormatInt(rv.Int(), 10))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		b.WriteString(strconv.FormatUint(rv.Uint(), 10))
	case reflect.Float32, reflect.Float64:
		f := rv.Float()
		if rv.Kind() == reflect.Float32 {
			f, _ = strconv.ParseFloat(strconv.FormatFloat(f, 'g', -1, 32), 64)
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			fmt.Fprintf(b, "%q", strconv.FormatFloat(f, 'g', -1, 64))
			return
		}
		s := strconv.FormatFloat(f, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eE") {
			s += ".0"
		}
		b.WriteString(s)
	case reflect.Bool:
		b.WriteString(strconv.FormatBool(rv.Bool()))
	case reflect.String:
		s, _ := json.Marshal(rv.String())
		b.Write(s)
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			b.WriteString("null")
			return
		}
		b.WriteByte('[')
		for i := 0; i < rv.Len(); i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			writeValue(b, rv.Index(i).Interface())
		}
		b.WriteByte(']')
	case reflect.Map:
		if rv.IsNil() {
			b.WriteString("null")
			return
		}
		keys := make([]string, 0, rv.Len())
		vals := map[string]any{}
		for _, k := range rv.MapKeys() {
			ks := fmt.Sprint(k.Interface())
			keys = append(keys, ks)
			vals[ks] = rv.MapIndex(k).Interface()
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			ks, _ := json.Marshal(k)
			b.Write(ks)
			b.WriteByte(':')
			writeValue(b, vals[k])
		}
		b.WriteByte('}')
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			b.WriteString("null")
			return
		}
		writeValue(b, rv.Elem().Interface())
	default:
		s, err := json.Marshal(v)
		if err != nil {
			fmt.Fprintf(b, "%q", fmt.Sprint(v))
			return
		}
		b.Write(s)
	}
}
