package trial

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/format"
	"github.com/rekuiper/rekuiper/internal/function"
	"github.com/rekuiper/rekuiper/internal/row"
	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/sql/parser"
)

// panicCodec decodes nothing: it panics (a decoder bug).
type panicCodec struct{ format.Codec }

func (panicCodec) DecodeTuples([]*row.Tuple, []byte) ([]*row.Tuple, error) {
	panic("decoder bug")
}

func newPanicManager(t *testing.T, clk clock.Clock) *Manager {
	t.Helper()
	funcs := function.Builtins()
	funcs.MustAdd(&function.Def{Name: "boom", Kind: function.Scalar, MinArgs: 1, MaxArgs: 1,
		Scalar: func(function.Env, []any) (any, error) { panic("function bug") }})
	m := New(Options{
		Clock: clk, Funcs: funcs,
		Streams: func(name string) (*ast.CreateStreamStmt, error) {
			st, err := parser.ParseStatement(`CREATE STREAM ` + name + ` () WITH (DATASOURCE="t", FORMAT="json")`)
			if err != nil {
				return nil, err
			}
			return st.(*ast.CreateStreamStmt), nil
		},
	})
	t.Cleanup(m.Close)
	return m
}

// startListened creates run d, listens to it and starts it.
func startListened(t *testing.T, m *Manager, d Def) <-chan []byte {
	t.Helper()
	ch := createAndListen(t, m, d)
	if err := m.Start(d.ID); err != nil {
		t.Fatal(err)
	}
	return ch
}

// drain reads the run's results until the run ends and returns them.
func drain(t *testing.T, ch <-chan []byte) []string {
	t.Helper()
	var got []string
	for {
		select {
		case p, ok := <-ch:
			if !ok {
				return got
			}
			got = append(got, string(p))
		case <-time.After(10 * time.Second):
			t.Fatalf("the run did not end; results so far %v", got)
		}
	}
}

// TestRulePanicEndsTheRun: a panic in the rule test's operators, or in
// the timer goroutine that feeds its mock records, ends that run with the
// panic as its last result; the process and the manager go on.
func TestRulePanicEndsTheRun(t *testing.T) {
	mock := map[string]Mock{"s": {Data: []json.RawMessage{json.RawMessage(`{"a":1}`)}, Interval: "1ms"}}
	t.Run("operator", func(t *testing.T) {
		m := newPanicManager(t, clock.Wall{})
		got := drain(t, startListened(t, m, Def{ID: "op", SQL: "SELECT boom(a) AS b FROM s", Mock: mock}))
		if len(got) == 0 || !strings.Contains(got[len(got)-1], "panic: operator project: function bug") {
			t.Fatalf("results %v; want the operator's panic last", got)
		}
	})
	t.Run("mock feed", func(t *testing.T) {
		v := clock.NewVirtual(0)
		m := newPanicManager(t, v)
		ch := startListened(t, m, Def{ID: "feed", SQL: "SELECT a FROM s", Mock: mock})
		r, err := m.get("feed")
		if err != nil {
			t.Fatal(err)
		}
		// The first record waits for the virtual clock; its decoder
		// panics on the timer's goroutine.
		f := r.feeds[0]
		f.codec = panicCodec{f.codec}
		v.AdvanceTo(1, nil)
		got := drain(t, ch)
		if len(got) != 1 || !strings.Contains(got[0], "panic: rule test feed mockSource s: decoder bug") {
			t.Fatalf("results %v; want only the feed's panic", got)
		}
		if err := m.Create(Def{ID: "after", SQL: "SELECT a FROM s", Mock: mock}); err != nil {
			t.Fatalf("the manager after a run panicked: %v", err)
		}
	})
}
