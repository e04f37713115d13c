package differential

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/rekuiper/rekuiper/internal/conformance"
	"github.com/rekuiper/rekuiper/internal/function"
)

// Generator makes random valid rules with random inputs. The same seed gives
// the same cases, so a run can be repeated and its recorded eKuiper outputs
// replayed later without eKuiper. Every case has the suite "rand_<category>"
// (func, expr, analytic, window, join) that reports group by.
type Generator struct {
	rng     *rand.Rand
	seed    uint64
	n       int
	scalars []*function.Def
	aggs    []*function.Def
}

const genStart = 1_700_000_000_000

// Functions the generator leaves out: their results depend on chance or on
// the host (rand, uuids, the environment), or they have no fixed result.
var genExcluded = map[string]bool{
	"rand": true, "newuuid": true, "uuid": true, "delay": true, "get_keyed_state": true,
	"tstamp": true, "now": true, "local_time": true, "localtime": true, "current_date": true,
	"current_time": true, "cur_date": true, "cur_time": true, "utc_timestamp": true,
	"array_shuffle": true, "props": true, "unnest": true, "extract": true,
}

// NewGenerator returns a generator for seed, drawing functions from the
// built-in registry.
func NewGenerator(seed uint64) *Generator {
	g := &Generator{rng: rand.New(rand.NewPCG(seed, 0x6b75697065720a)), seed: seed}
	reg := function.Builtins()
	seen := map[*function.Def]bool{}
	for _, name := range reg.Names() {
		d, _ := reg.Lookup(name)
		if seen[d] || genExcluded[d.Name] || d.ReadsClock {
			continue
		}
		seen[d] = true
		switch d.Kind {
		case function.Scalar:
			g.scalars = append(g.scalars, d)
		case function.Aggregate:
			g.aggs = append(g.aggs, d)
		}
	}
	return g
}

// Case makes the next case.
func (g *Generator) Case() *conformance.Case {
	g.n++
	switch k := g.rng.IntN(10); {
	case k < 3:
		return g.funcCase()
	case k < 5:
		return g.exprCase()
	case k < 6:
		return g.analyticCase()
	case k < 9:
		return g.windowCase()
	default:
		return g.joinCase()
	}
}

// stream is one generated input stream.
type stream struct {
	name      string
	ddl       string
	typed     bool
	eventTime bool
	table     bool
}

func (g *Generator) newStream(name string, eventTime bool) stream {
	s := stream{name: name, eventTime: eventTime, typed: g.rng.IntN(3) == 0}
	cols := "()"
	if s.typed {
		cols = "(k STRING, v BIGINT, w FLOAT, s STRING, b BOOLEAN, arr ARRAY(BIGINT), o STRUCT(a BIGINT, b STRING), ts BIGINT)"
	}
	opts := fmt.Sprintf(`DATASOURCE="%s", TYPE="mock", FORMAT="json"`, name)
	if eventTime {
		opts += `, TIMESTAMP="ts"`
	}
	if s.typed && g.rng.IntN(4) == 0 {
		opts += `, STRICT_VALIDATION="true"`
	}
	s.ddl = fmt.Sprintf("CREATE STREAM %s %s WITH (%s);", name, cols, opts)
	return s
}

func (g *Generator) pick(xs ...string) string { return xs[g.rng.IntN(len(xs))] }

// value draws a field value: mostly of the field's usual type, now and then
// nil, absent (ok false), of another type or an edge value.
func (g *Generator) value(field string) (any, bool) {
	r := g.rng.IntN(20)
	if r == 0 {
		return nil, false
	}
	if r == 1 {
		return nil, true
	}
	if r == 2 {
		return g.edge(), true
	}
	switch field {
	case "k":
		return g.pick("a", "b", "c", "a"), true
	case "v":
		if g.rng.IntN(4) == 0 {
			return float64(g.rng.IntN(40)-10) / 4, true
		}
		return int64(g.rng.IntN(30) - 5), true
	case "w":
		return float64(g.rng.IntN(400)-100) / 8, true
	case "s":
		return g.pick("abc", "", "Hello, World", "ü字 x", "a,b,c", "2023-11-14 22:13:20", "42", "3.5", "true", "null", `{"a":1}`), true
	case "b":
		return g.rng.IntN(2) == 0, true
	case "arr":
		n := g.rng.IntN(5)
		arr := make([]any, n)
		for i := range arr {
			arr[i] = int64(g.rng.IntN(10) - 2)
		}
		if n > 0 && g.rng.IntN(5) == 0 {
			arr[g.rng.IntN(n)] = g.edge()
		}
		return arr, true
	case "o":
		o := map[string]any{"a": int64(g.rng.IntN(10)), "b": g.pick("x", "y", "")}
		if g.rng.IntN(4) == 0 {
			delete(o, "b")
		}
		if g.rng.IntN(5) == 0 {
			o["c"] = []any{int64(1), map[string]any{"d": 2.5}}
		}
		return o, true
	}
	return nil, true
}

func (g *Generator) edge() any {
	switch g.rng.IntN(12) {
	case 0:
		return int64(0)
	case 1:
		return int64(-1)
	case 2:
		return int64(9007199254740993)
	case 3:
		return 1e300
	case 4:
		return -0.5
	case 5:
		return ""
	case 6:
		return "ü字"
	case 7:
		return []any{}
	case 8:
		return map[string]any{}
	case 9:
		return true
	case 10:
		return "12"
	default:
		return 2.0
	}
}

var genFields = []string{"k", "v", "w", "s", "b", "arr", "o"}

// inputs makes n records for s, with ts and timeline entries. Processing
// time: 100 ms to 1.5 s apart. Event time: arrivals 100 ms to 1 s apart,
// timestamps up to 1.5 s out of order.
func (g *Generator) inputs(c *conformance.Case, s stream, n int, at *int64) {
	for range n {
		*at += int64(100 + g.rng.IntN(1400))
		data := map[string]any{}
		for _, f := range genFields {
			if v, ok := g.value(f); ok {
				data[f] = v
			}
		}
		ts := *at
		if s.eventTime {
			ts = *at - int64(g.rng.IntN(1500))
			data["ts"] = ts
		}
		c.Inputs[s.name] = append(c.Inputs[s.name], conformance.Event{TS: *at, Arrival: *at, Data: data})
		c.Timeline = append(c.Timeline, conformance.Step{At: *at, Stream: s.name, Index: len(c.Inputs[s.name]) - 1})
	}
}

func (g *Generator) base(category string, eventTime bool, streams ...stream) *conformance.Case {
	c := &conformance.Case{
		Name: fmt.Sprintf("s%d_%d", g.seed, g.n), Suite: "rand_" + category, StartTime: genStart,
		Inputs: map[string][]conformance.Event{}, InputMetadata: map[string]any{"topic": "mock"},
		Clock: "processing",
	}
	for _, s := range streams {
		c.Streams = append(c.Streams, s.ddl)
		c.StreamNames = append(c.StreamNames, s.name)
	}
	opts := map[string]any{"isEventTime": eventTime, "sendError": g.rng.IntN(4) != 0, "bufferLength": int64(100), "qos": int64(0)}
	if eventTime {
		c.Clock = "event"
		opts["lateTolerance"] = g.pick("0s", "500ms", "1s", "2s")
	}
	c.Rule = conformance.RuleSpec{Options: opts}
	c.OptionVariants = []map[string]any{opts}
	return c
}

func finish(c *conformance.Case) *conformance.Case {
	if n := len(c.Timeline); n > 0 {
		c.EndTime = c.Timeline[n-1].At
	}
	return c
}

// operand is a random argument: a field, a nested field, or a literal.
func (g *Generator) operand() string {
	switch g.rng.IntN(10) {
	case 0, 1, 2, 3, 4:
		return genFields[g.rng.IntN(len(genFields))]
	case 5:
		return g.pick("o.a", "o->b", "arr[0]", "arr[1:3]", "o->c", "arr[-1]")
	default:
		return g.pick("0", "1", "(-2)", "2.5", "10000000000.0", `"abc"`, `""`, `"ü字"`, "true", `"a,b"`, "3", `"2023-11-14 22:13"`, "(-0.5)", `","`)
	}
}

func (g *Generator) call(d *function.Def) string {
	n := d.MinArgs
	if d.MaxArgs != d.MinArgs {
		hi := d.MaxArgs
		if hi < 0 {
			hi = d.MinArgs + 2
		}
		n += g.rng.IntN(hi - d.MinArgs + 1)
	}
	args := make([]string, n)
	for i := range args {
		args[i] = g.operand()
	}
	return d.Name + "(" + strings.Join(args, ", ") + ")"
}

func (g *Generator) cond() string {
	return g.pick("v > 2", "w < 5", `k = "a"`, "isnull(v) = false", "b = true", "v % 2 = 0", "w > v", `s != ""`)
}

func (g *Generator) funcCase() *conformance.Case {
	return g.selectCase("func", func() []string {
		var sel []string
		for i := range 1 + g.rng.IntN(3) {
			sel = append(sel, fmt.Sprintf("%s AS f%d", g.call(g.scalars[g.rng.IntN(len(g.scalars))]), i))
		}
		if g.rng.IntN(3) == 0 {
			sel = append(sel, g.pick("v", "k", "s"))
		}
		return sel
	}, 4, 2, 4)
}

// selectCase is a case of kind over a new stream fx without event time:
// SELECT sel() FROM fx, with a WHERE one time in where, over fewest to
// fewest+spread-1 records.
func (g *Generator) selectCase(kind string, sel func() []string, where, fewest, spread int) *conformance.Case {
	s := g.newStream("fx", false)
	c := g.base(kind, false, s)
	c.Rule.SQL = "SELECT " + strings.Join(sel(), ", ") + " FROM fx"
	if g.rng.IntN(where) == 0 {
		c.Rule.SQL += " WHERE " + g.cond()
	}
	at := int64(genStart)
	g.inputs(c, s, fewest+g.rng.IntN(spread), &at)
	return finish(c)
}

func (g *Generator) expr() string {
	a, b := g.operand(), g.operand()
	switch g.rng.IntN(9) {
	case 0:
		return a + " " + g.pick("+", "-", "*", "/", "%") + " " + b
	case 1:
		return a + " " + g.pick("=", "!=", "<", "<=", ">", ">=") + " " + b
	case 2:
		return "CASE WHEN " + g.cond() + " THEN " + a + " ELSE " + b + " END"
	case 3:
		return "CASE " + a + " WHEN 1 THEN \"one\" WHEN \"a\" THEN \"A\" ELSE " + b + " END"
	case 4:
		return a + " IN (1, 2, \"a\")"
	case 5:
		return a + " BETWEEN 0 AND 5"
	case 6:
		return g.pick("s", "k") + " LIKE " + g.pick(`"a%"`, `"%b_"`, `"__"`, `"a.c"`)
	case 7:
		return g.cond() + " " + g.pick("AND", "OR") + " " + g.cond()
	default:
		return g.pick("-v", "-w", "v + w * 2", "(v + 1) / 2", "w / 0", "v / 0", "o.a + v", "arr[0] * 2")
	}
}

func (g *Generator) exprCase() *conformance.Case {
	return g.selectCase("expr", func() []string {
		var sel []string
		for i := range 1 + g.rng.IntN(3) {
			e := g.expr()
			if g.rng.IntN(3) > 0 {
				e += fmt.Sprintf(" AS e%d", i)
			}
			sel = append(sel, e)
		}
		if g.rng.IntN(4) == 0 {
			sel = append(sel, "*")
		}
		return sel
	}, 3, 2, 4)
}

func (g *Generator) analyticCall() string {
	arg := g.pick("v", "w", "k", "v * 2", "v + w", "s")
	f := g.pick("lag("+arg+")", "lag("+arg+", 2)", "lag("+arg+", 1, 0)", "lag("+arg+", 1, -1, true)", "latest("+arg+")",
		"latest("+arg+", 0)", "changed_col(true, "+arg+")", "had_changed(true, "+arg+")", "had_changed(false, v, w)",
		"acc_sum(v)", "acc_count(v)", "acc_avg(v)", "acc_max(v)", "acc_min(v)")
	switch g.rng.IntN(4) {
	case 0:
		f += " OVER (PARTITION BY k)"
	case 1:
		f += " OVER (WHEN " + g.cond() + ")"
	case 2:
		f += " OVER (PARTITION BY k WHEN " + g.cond() + ")"
	}
	return f
}

func (g *Generator) analyticCase() *conformance.Case {
	return g.selectCase("analytic", func() []string {
		sel := []string{g.pick("v", "k, v", "v, w")}
		for i := range 1 + g.rng.IntN(3) {
			sel = append(sel, fmt.Sprintf("%s AS a%d", g.analyticCall(), i))
		}
		switch g.rng.IntN(5) {
		case 0:
			sel = append(sel, "a0 + 1 AS r")
		case 1:
			sel = append(sel, "last_hit_count() AS lc", "last_hit_time() AS lt")
		case 2:
			sel = append(sel, "changed_cols(\"c_\", "+g.pick("true", "false")+", "+g.pick("*", "v, w", "k")+")")
		}
		return sel
	}, 3, 3, 6)
}

func (g *Generator) window(eventTime bool) string {
	kinds := []string{"TUMBLINGWINDOW(ss, %d)", "HOPPINGWINDOW(ss, %d, 1)", "SLIDINGWINDOW(ss, %d)", "SESSIONWINDOW(ss, %d, 1)"}
	if !eventTime {
		kinds = append(kinds, "COUNTWINDOW(%d)", "COUNTWINDOW(%d, 2)")
	}
	k := kinds[g.rng.IntN(len(kinds))]
	n := 1 + g.rng.IntN(3)
	if strings.HasPrefix(k, "HOPPING") || strings.HasPrefix(k, "SESSION") || strings.HasPrefix(k, "COUNTWINDOW(%d, 2)") {
		n++
	}
	if strings.HasPrefix(k, "COUNT") {
		n++
	}
	return fmt.Sprintf(k, n)
}

func (g *Generator) aggCall() string {
	d := g.aggs[g.rng.IntN(len(g.aggs))]
	arg := g.pick("v", "w", "v", "k", "s", "v * 2", "lag(v)")
	if d.Name == "count" && g.rng.IntN(2) == 0 {
		arg = "*"
	}
	args := []string{arg}
	for len(args) < d.MinArgs {
		args = append(args, g.pick("0.5", "1", "\",\"", "v"))
	}
	return d.Name + "(" + strings.Join(args, ", ") + ")"
}

func (g *Generator) windowCase() *conformance.Case {
	eventTime := g.rng.IntN(2) == 0
	s := g.newStream("fx", eventTime)
	c := g.base("window", eventTime, s)
	var sel []string
	group := g.rng.IntN(3) == 0
	if group {
		sel = append(sel, "k")
	}
	for i := range 1 + g.rng.IntN(3) {
		sel = append(sel, fmt.Sprintf("%s AS g%d", g.aggCall(), i))
	}
	if g.rng.IntN(2) == 0 {
		sel = append(sel, g.pick("window_start() AS ws", "window_end() AS we", "count(*)", "collect(v) AS cv"))
	}
	c.Rule.SQL = "SELECT " + strings.Join(sel, ", ") + " FROM fx"
	if g.rng.IntN(4) == 0 {
		c.Rule.SQL += " WHERE " + g.cond()
	}
	c.Rule.SQL += " GROUP BY "
	if group {
		c.Rule.SQL += "k, "
	}
	c.Rule.SQL += g.window(eventTime)
	if g.rng.IntN(4) == 0 {
		c.Rule.SQL += " HAVING count(*) > 1"
	}
	if group && g.rng.IntN(2) == 0 {
		c.Rule.SQL += " ORDER BY k " + g.pick("ASC", "DESC")
	}
	at := int64(genStart)
	g.inputs(c, s, 4+g.rng.IntN(8), &at)
	return finish(c)
}

func (g *Generator) joinCase() *conformance.Case {
	left := g.newStream("fx", false)
	if g.rng.IntN(2) == 0 {
		right := stream{name: "tb", table: true,
			ddl: `CREATE TABLE tb (k STRING, v BIGINT, name STRING) WITH (DATASOURCE="tb", TYPE="mock", RETAIN_SIZE="` + g.pick("1", "3", "10") + `");`}
		c := g.base("join", false, left, right)
		c.Rule.SQL = fmt.Sprintf("SELECT fx.k, fx.v, tb.name%s FROM fx %s JOIN tb ON fx.k = tb.k", g.pick("", ", tb.v AS tv"), g.pick("INNER", "LEFT"))
		if g.rng.IntN(3) == 0 {
			c.Rule.SQL += " WHERE " + g.pick("fx.v > 1", "isnull(tb.v) = false", `tb.name != "x"`)
		}
		at := int64(genStart)
		// Table rows first, then stream records interleaved with updates.
		for i := range 1 + g.rng.IntN(3) {
			at += int64(100 + g.rng.IntN(500))
			row := map[string]any{"k": g.pick("a", "b", "c"), "v": int64(i), "name": g.pick("x", "y", "z")}
			c.Inputs["tb"] = append(c.Inputs["tb"], conformance.Event{TS: at, Arrival: at, Data: row})
			c.Timeline = append(c.Timeline, conformance.Step{At: at, Stream: "tb", Index: len(c.Inputs["tb"]) - 1})
		}
		for range 2 + g.rng.IntN(5) {
			if g.rng.IntN(4) == 0 {
				at += int64(100 + g.rng.IntN(500))
				row := map[string]any{"k": g.pick("a", "b", "c"), "v": int64(g.rng.IntN(9)), "name": g.pick("x", "y", "z")}
				c.Inputs["tb"] = append(c.Inputs["tb"], conformance.Event{TS: at, Arrival: at, Data: row})
				c.Timeline = append(c.Timeline, conformance.Step{At: at, Stream: "tb", Index: len(c.Inputs["tb"]) - 1})
			}
			g.inputs(c, left, 1, &at)
		}
		return finish(c)
	}
	eventTime := g.rng.IntN(3) == 0
	left = g.newStream("fx", eventTime)
	right := g.newStream("fy", eventTime)
	c := g.base("join", eventTime, left, right)
	kind := g.pick("INNER", "LEFT", "RIGHT", "FULL", "CROSS")
	on := " ON fx.k = fy.k"
	if kind == "CROSS" {
		on = ""
	}
	c.Rule.SQL = fmt.Sprintf("SELECT fx.k AS lk, fy.k AS rk, fx.v AS lv, fy.w AS rw FROM fx %s JOIN fy%s GROUP BY %s", kind, on,
		g.pick("TUMBLINGWINDOW(ss, 2)", "TUMBLINGWINDOW(ss, 3)", "HOPPINGWINDOW(ss, 2, 1)"))
	at := int64(genStart)
	for range 3 + g.rng.IntN(6) {
		if g.rng.IntN(2) == 0 {
			g.inputs(c, left, 1, &at)
		} else {
			g.inputs(c, right, 1, &at)
		}
	}
	return finish(c)
}
