package stream

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/eval"
	"github.com/rekuiper/rekuiper/internal/format"
	"github.com/rekuiper/rekuiper/internal/function"
	"github.com/rekuiper/rekuiper/internal/operator"
	"github.com/rekuiper/rekuiper/internal/planner"
	"github.com/rekuiper/rekuiper/internal/row"
	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/sql/parser"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// tap records what one consumer is given: tuples in order, the number
// of deliveries, and barriers and errors among them.
type tap struct {
	mu         sync.Mutex
	tuples     []*row.Tuple
	events     []string
	deliveries int
	ended      chan error
}

func newTap() *tap { return &tap{ended: make(chan error, 1)} }

func (tp *tap) consumer(m *Match) *Consumer {
	return &Consumer{
		Match: m,
		Deliver: func(ts []*row.Tuple) bool {
			tp.mu.Lock()
			defer tp.mu.Unlock()
			tp.deliveries++
			for _, t := range ts {
				tp.tuples = append(tp.tuples, t)
				seq, _ := t.Value("", "seq")
				tp.events = append(tp.events, fmt.Sprint(seq))
			}
			return true
		},
		Barrier: func(id uint64, off []byte) {
			tp.mu.Lock()
			defer tp.mu.Unlock()
			tp.events = append(tp.events, fmt.Sprintf("b%d@%s", id, off))
		},
		Error: func(err error) {
			tp.mu.Lock()
			defer tp.mu.Unlock()
			tp.events = append(tp.events, "err")
		},
		End: func(err error) { tp.ended <- err },
	}
}

func (tp *tap) snapshot() ([]*row.Tuple, []string, int) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return append([]*row.Tuple(nil), tp.tuples...), append([]string(nil), tp.events...), tp.deliveries
}

func waitEnd(t *testing.T, taps ...*tap) {
	t.Helper()
	for _, tp := range taps {
		select {
		case <-tp.ended:
		case <-time.After(10 * time.Second):
			t.Fatal("source never ended")
		}
	}
}

func TestIndexDeliversMatchingTuples(t *testing.T) {
	src := &fakeSource{bounded: true, payloads: []string{
		`{"seq":0,"d":1}`, `{"seq":1,"d":2}`, `[{"seq":2,"d":1.0},{"seq":3,"d":"1"}]`, `{"seq":4}`,
		`bad`, `{"seq":5,"d":3}`, `{"seq":6,"d":null}`, `{"seq":7,"d":2}`,
	}}
	sub := NewSubscription("s", src, jsonDecoder(t), clock.Wall{}, nil)
	all, one, two, strs, in := newTap(), newTap(), newTap(), newTap(), newTap()
	sub.Attach(all.consumer(nil))
	idOne := sub.Attach(one.consumer(&Match{Column: "d", Values: []any{int64(1)}}))
	sub.Attach(two.consumer(&Match{Column: "d", Values: []any{float64(2)}}))
	sub.Attach(strs.consumer(&Match{Column: "d", Values: []any{"1"}}))
	sub.Attach(in.consumer(&Match{Column: "d", Values: []any{int64(3), 2.0, int64(2)}}))
	if !sub.Indexed(idOne) {
		t.Fatal("a consumer with a usable Match is not indexed")
	}
	sub.Start()
	defer sub.Stop(context.Background())
	waitEnd(t, all, one, two, strs, in)
	for _, tc := range []struct {
		name string
		tp   *tap
		want string
	}{
		// seq 3's "1" cannot compare with a number: the rule must see it
		// to report the error, as every number-keyed rule must.
		{"all", all, "[0 1 2 3 4 err 5 6 7]"},
		{"d = 1", one, "[0 2 3 err]"},
		{"d = 2.0", two, "[1 3 err 7]"},
		{`d = "1"`, strs, "[0 1 2 3 err 5 7]"},
		{"d IN (3, 2.0, 2)", in, "[1 3 err 5 7]"},
	} {
		_, events, _ := tc.tp.snapshot()
		if got := fmt.Sprint(events); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, got, tc.want)
		}
	}
	_, _, n := all.snapshot()
	_, _, got := one.snapshot()
	if skipped := sub.Skipped(idOne); skipped+int64(got) != int64(n) || skipped == 0 {
		t.Errorf("d = 1: %d deliveries + %d skipped, want %d in all", got, skipped, n)
	}
}

func TestUnusableMatchDeliversEverything(t *testing.T) {
	sub := NewSubscription("s", &fakeSource{}, jsonDecoder(t), clock.Wall{}, nil)
	for _, m := range []*Match{
		{Column: "d", Values: []any{int64(1), "1"}},
		{Column: "d", Values: []any{math.NaN()}},
		{Column: "d", Values: []any{nil}},
		{Column: "d"},
		{Values: []any{int64(1)}},
		{Column: "d", Values: []any{[]any{int64(1)}}},
	} {
		if id := sub.Attach(newTap().consumer(m)); sub.Indexed(id) {
			t.Errorf("%+v is indexed", m)
		}
	}
}

func TestNaNAndOtherKindsReachEveryIndexedConsumer(t *testing.T) {
	c := newFanout(map[int]*member{
		1: newMember(1, &Consumer{Match: &Match{Column: "d", Values: []any{int64(1)}}}),
		2: newMember(2, &Consumer{Match: &Match{Column: "d", Values: []any{"x"}}}),
		3: newMember(3, &Consumer{Match: &Match{Column: "d", Values: []any{true}}}),
	}).cols[0]
	for _, tc := range []struct {
		v    any
		want string
	}{
		{math.NaN(), "[1 2 3]"},
		{time.UnixMilli(1), "[1 2 3]"},
		{[]any{int64(1)}, "[1 2 3]"},
		{nil, "[]"},
		{int64(1), "[1 2 3]"},
		{int64(2), "[2 3]"},
		{math.Copysign(0, -1), "[2 3]"},
		{"x", "[2 1 3]"},
		{"y", "[1 3]"},
		{false, "[1 2]"},
		{true, "[3 1 2]"},
	} {
		var ids []int
		for _, m := range c.appendMatches(nil, tc.v) {
			ids = append(ids, m.id)
		}
		if fmt.Sprint(ids) != tc.want {
			t.Errorf("%v: %v, want %s", tc.v, ids, tc.want)
		}
	}
}

// TestIndexedDeliveryEqualsWhere runs random rules over random records
// through one subscription and checks, with the rules' own compiled
// WHERE, that every record a rule keeps or fails on was delivered to it,
// so that its results are those of an unindexed delivery: same kept
// records, same errors, in the same order.
func TestIndexedDeliveryEqualsWhere(t *testing.T) {
	for _, typed := range []bool{false, true} {
		t.Run(fmt.Sprintf("typed=%v", typed), func(t *testing.T) {
			seed := uint64(time.Now().UnixNano())
			t.Logf("seed %d", seed)
			checkRandomRules(t, rand.New(rand.NewPCG(seed, 7)), typed)
		})
	}
}

var (
	randValues = []string{`1`, `1.0`, `2`, `-1`, `0`, `-0.0`, `1.5`, `9007199254740993`, `9007199254740992`,
		`"1"`, `"a"`, `""`, `true`, `false`, `null`, `[1]`, `{"a":1}`}
	randLiterals = []string{`1`, `1.0`, `2`, `-1`, `0`, `1.5`, `9007199254740992`, `"1"`, `"a"`, `""`, `true`, `false`}
)

func checkRandomRules(t *testing.T, rnd *rand.Rand, typed bool) {
	lit := func() string { return randLiterals[rnd.IntN(len(randLiterals))] }
	var payloads []string
	for seq := 0; seq < 400; seq++ {
		var b strings.Builder
		fmt.Fprintf(&b, `{"seq":%d`, seq)
		for _, col := range []string{"x", "y"} {
			if rnd.IntN(8) > 0 {
				fmt.Fprintf(&b, `,"%s":%s`, col, randValues[rnd.IntN(len(randValues))])
			}
		}
		b.WriteString("}")
		if rnd.IntN(10) == 0 {
			payloads = append(payloads, "["+b.String()+`,{"seq":-1,"x":1}]`)
		} else {
			payloads = append(payloads, b.String())
		}
	}
	def := `CREATE STREAM s () WITH (TYPE="memory", DATASOURCE="t")`
	var opts format.Options
	if typed {
		def = `CREATE STREAM s (seq BIGINT, x BIGINT, y BIGINT) WITH (TYPE="memory", DATASOURCE="t")`
		opts.Fields = []string{"seq", "x", "y"}
	}
	st, err := parser.ParseStatement(def)
	if err != nil {
		t.Fatal(err)
	}
	defs := map[string]*ast.CreateStreamStmt{"s": st.(*ast.CreateStreamStmt)}
	dec, err := format.New("json", opts)
	if err != nil {
		t.Fatal(err)
	}
	sub := NewSubscription("s", &fakeSource{bounded: true, payloads: payloads}, dec, clock.Wall{}, nil)
	all := newTap()
	sub.Attach(all.consumer(nil))
	type rule struct {
		where string
		cond  eval.Expr
		tap   *tap
	}
	var rules []rule
	indexed := 0
	for range 60 {
		var where string
		switch rnd.IntN(6) {
		case 0:
			where = "x = " + lit()
		case 1:
			where = lit() + " = x"
		case 2:
			where = fmt.Sprintf("x IN (%s, %s)", lit(), lit())
		case 3:
			where = fmt.Sprintf("(x = %s) AND y > 0", lit())
		case 4:
			where = fmt.Sprintf("y = %s AND x = %s", lit(), lit())
		default:
			where = fmt.Sprintf("x IN (%s)", lit())
		}
		stmt, err := parser.ParseSelect("SELECT * FROM s WHERE " + where)
		if err != nil {
			t.Fatal(err)
		}
		p, err := planner.Build(stmt, defs, planner.Options{}, function.Builtins(), time.UTC)
		if err != nil {
			t.Fatal(err)
		}
		var m *Match
		if p.Index != nil {
			m = &Match{Column: p.Index.Column, Values: p.Index.Values}
			indexed++
		}
		r := rule{where: where, cond: p.Ops[1].(*operator.Filter).Cond, tap: newTap()}
		sub.Attach(r.tap.consumer(m))
		rules = append(rules, r)
	}
	if indexed < 20 {
		t.Fatalf("only %d of %d random rules indexed", indexed, len(rules))
	}
	sub.Start()
	defer sub.Stop(context.Background())
	waitEnd(t, all)
	for _, r := range rules {
		waitEnd(t, r.tap)
	}
	every, _, _ := all.snapshot()
	if len(every) < len(payloads) {
		t.Fatalf("%d tuples for %d messages", len(every), len(payloads))
	}
	outcomes := func(cond eval.Expr, ts []*row.Tuple) []string {
		var out []string
		for _, tu := range ts {
			v, err := cond(&eval.Ctx{Row: tu})
			seq, _ := tu.Value("", "seq")
			switch {
			case err != nil:
				out = append(out, fmt.Sprintf("%v:error %v", seq, err))
			case v == true:
				out = append(out, fmt.Sprint(seq))
			}
		}
		return out
	}
	spared := 0
	for _, r := range rules {
		got, _, _ := r.tap.snapshot()
		spared += len(every) - len(got)
		want := outcomes(r.cond, every)
		if have := outcomes(r.cond, got); fmt.Sprint(have) != fmt.Sprint(want) {
			i := 0
			for i < len(have) && i < len(want) && have[i] == want[i] {
				i++
			}
			t.Errorf("WHERE %s: indexed delivery gives %d results, all records %d; first difference at %d: %q vs %q",
				r.where, len(have), len(want), i, at(have, i), at(want, i))
		}
		if !subsequence(got, every) {
			t.Errorf("WHERE %s: delivered tuples are not in stream order", r.where)
		}
	}
	if spared == 0 {
		t.Fatal("the index spared no rule a record")
	}
}

func at(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return "(end)"
}

func subsequence(sub, all []*row.Tuple) bool {
	i := 0
	for _, t := range all {
		if i < len(sub) && sub[i] == t {
			i++
		}
	}
	return i == len(sub)
}

// TestIndexBarriersInOrder: pushed records and barriers reach indexed
// consumers in order; the offset of a barrier is the position after the
// last record, whether or not the consumer was given it.
func TestIndexBarriersInOrder(t *testing.T) {
	src := &fakeSource{gate: make(chan struct{}, 16)}
	for i := range 6 {
		src.payloads = append(src.payloads, fmt.Sprintf(`{"seq":%d,"d":%d}`, i, i%2))
	}
	sub := NewSubscription("s", src, jsonDecoder(t), clock.Wall{}, nil)
	even, odd := newTap(), newTap()
	idEven := sub.Attach(even.consumer(&Match{Column: "d", Values: []any{int64(0)}}))
	idOdd := sub.Attach(odd.consumer(&Match{Column: "d", Values: []any{int64(1)}}))
	sub.Start()
	defer sub.Stop(context.Background())
	step := func(records int, barrier uint64) {
		for range records {
			src.gate <- struct{}{}
		}
		testwait.Until(t, "the records to be read", func() bool { return sub.Status().RecordsIn == int64(barrier) })
		sub.InjectBarrier(idEven, barrier)
		sub.InjectBarrier(idOdd, barrier)
		// The next records are let in once both barriers are through:
		// a barrier is taken at the position the read loop has reached
		// when it handles the request, not where the test asked for it.
		mark := fmt.Sprintf("b%d@", barrier)
		testwait.Until(t, "both barriers through", func() bool {
			_, e, _ := even.snapshot()
			_, o, _ := odd.snapshot()
			return slices.ContainsFunc(e, func(s string) bool { return strings.HasPrefix(s, mark) }) &&
				slices.ContainsFunc(o, func(s string) bool { return strings.HasPrefix(s, mark) })
		})
	}
	step(1, 1)
	step(2, 3)
	step(3, 6)
	testwait.Until(t, "six events at each consumer", func() bool {
		_, e, _ := even.snapshot()
		_, o, _ := odd.snapshot()
		return len(e) == 6 && len(o) == 6
	})
	_, e, _ := even.snapshot()
	_, o, _ := odd.snapshot()
	if fmt.Sprint(e) != "[0 b1@1 2 b3@3 4 b6@6]" || fmt.Sprint(o) != "[b1@1 1 b3@3 3 5 b6@6]" {
		t.Fatalf("even %v, odd %v", e, o)
	}
}

// TestIndexAttachDetachUnderLoad attaches and detaches indexed consumers,
// with keys that change as a rule update changes them, while records flow
// (run with -race); each consumer gets only records of its key, in order.
func TestIndexAttachDetachUnderLoad(t *testing.T) {
	src := &pushFake{}
	sub := NewSubscription("s", src, jsonDecoder(t), clock.Wall{}, nil)
	keep := newTap()
	sub.Attach(keep.consumer(&Match{Column: "d", Values: []any{int64(0)}}))
	sub.Start()
	defer sub.Stop(context.Background())
	testwait.Until(t, "the subscription to connect", func() bool { return sub.Status().State == "connected" })
	const keys = 4
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 3000; i += 3 {
			var msgs []*api.Message
			for j := i; j < i+3; j++ {
				msgs = append(msgs, &api.Message{Payload: fmt.Appendf(nil, `{"seq":%d,"d":%d}`, j, j%keys)})
			}
			src.push(msgs)
		}
	}()
	var taps []*tap
	var keysOf []int64
	for i := 0; ; i++ {
		select {
		case <-done:
		default:
			k := int64(i % keys)
			tp := newTap()
			id := sub.Attach(tp.consumer(&Match{Column: "d", Values: []any{k}}))
			time.Sleep(50 * time.Microsecond) // not a wait: keeps the consumer attached while records flow
			sub.Skipped(id)
			sub.Detach(id)
			taps, keysOf = append(taps, tp), append(keysOf, k)
			continue
		}
		break
	}
	check := func(tp *tap, k int64) {
		ts, _, _ := tp.snapshot()
		last := int64(-1)
		for _, tu := range ts {
			seq, _ := tu.Value("", "seq")
			if s := seq.(int64); s%keys != k || s <= last {
				t.Fatalf("consumer of key %d got seq %d after %d", k, s, last)
			}
			last = seq.(int64)
		}
	}
	for i, tp := range taps {
		check(tp, keysOf[i])
	}
	check(keep, 0)
	if ts, _, _ := keep.snapshot(); len(ts) != 3000/keys {
		t.Fatalf("the steady consumer got %d records, want %d", len(ts), 3000/keys)
	}
}

// TestDeliveredAfterEveryDeliver: Delivered reaches each consumer that a
// delivery reached, plain or indexed, once, after the delivery was handed
// to every consumer; consumers the delivery left out get no Delivered.
func TestDeliveredAfterEveryDeliver(t *testing.T) {
	src := &fakeSource{bounded: true, payloads: []string{
		`{"seq":0,"d":1}`, `{"seq":1,"d":2}`, `[{"seq":2,"d":1},{"seq":3,"d":2}]`, `bad`, `{"seq":4,"d":3}`, `{"seq":5,"d":1}`,
	}}
	sub := NewSubscription("s", src, jsonDecoder(t), clock.Wall{}, nil)
	var mu sync.Mutex
	var log []string
	note := func(s string) {
		mu.Lock()
		log = append(log, s)
		mu.Unlock()
	}
	var taps []*tap
	for i, m := range []*Match{nil, {Column: "d", Values: []any{int64(1)}}, {Column: "d", Values: []any{int64(2)}}} {
		tp := newTap()
		taps = append(taps, tp)
		c := tp.consumer(m)
		deliver := c.Deliver
		c.Deliver = func(ts []*row.Tuple) bool {
			note(fmt.Sprintf("D%d", i))
			return deliver(ts)
		}
		c.Delivered = func() { note(fmt.Sprintf("E%d", i)) }
		sub.Attach(c)
	}
	sub.Start()
	defer sub.Stop(context.Background())
	waitEnd(t, taps...)
	mu.Lock()
	defer mu.Unlock()
	// Consumer 0 (no Match) gets every delivery: its Deliver opens one.
	pending := map[string]bool{}
	closing := false
	ds := 0
	for i, e := range log {
		who := e[1:]
		if e == "D0" {
			closing = false
		}
		switch e[0] {
		case 'D':
			if closing || pending[who] {
				t.Fatalf("event %d %s: a Deliver while the last delivery's Delivered calls are under way (%v)", i, e, log)
			}
			pending[who] = true
			ds++
		case 'E':
			if !pending[who] {
				t.Fatalf("event %d %s: Delivered without a Deliver before it (%v)", i, e, log)
			}
			delete(pending, who)
			closing = true
		}
	}
	if len(pending) > 0 || ds == 0 {
		t.Fatalf("%d Delivers, still waiting for Delivered: %v (%v)", ds, pending, log)
	}
	_, events, _ := taps[1].snapshot()
	if got := fmt.Sprint(events); got != "[0 2 err 5]" {
		t.Fatalf("d = 1 got %s", got)
	}
}
