package trial

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/sql/parser"
)

const start = int64(1_700_000_000_000)

// newManager returns a manager on a virtual clock whose rules read the
// stream demo (a INT).
func newManager(t *testing.T, opts Options) (*Manager, *clock.Virtual) {
	t.Helper()
	vc := clock.NewVirtual(start)
	opts.Clock = vc
	opts.Streams = func(name string) (*ast.CreateStreamStmt, error) {
		if name != "demo" {
			return nil, fmt.Errorf("stream %s not found", name)
		}
		st, err := parser.ParseStatement(`CREATE STREAM demo (a BIGINT) WITH (TYPE="memory", DATASOURCE="demo")`)
		if err != nil {
			return nil, err
		}
		return st.(*ast.CreateStreamStmt), nil
	}
	m := New(opts)
	t.Cleanup(m.Close)
	return m, vc
}

func demoDef(id string, records int, loop bool) Def {
	data := make([]json.RawMessage, records)
	for i := range data {
		data[i] = json.RawMessage(fmt.Sprintf(`{"a":%d}`, i))
	}
	return Def{ID: id, SQL: "SELECT a FROM demo", Mock: map[string]Mock{"demo": {Data: data, Interval: float64(10), Loop: loop}}}
}

// createAndListen creates the run of d and listens to it until the test
// ends.
func createAndListen(t *testing.T, m *Manager, d Def) <-chan []byte {
	t.Helper()
	if err := m.Create(d); err != nil {
		t.Fatal(err)
	}
	ch, leave, err := m.Listen(d.ID)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(leave)
	return ch
}

// receive reads n payloads from ch, failing if ch closes first.
func receive(t *testing.T, ch <-chan []byte, n int) []string {
	t.Helper()
	var got []string
	for len(got) < n {
		select {
		case p, ok := <-ch:
			if !ok {
				t.Fatalf("payloads closed after %d of %d: %q", len(got), n, got)
			}
			got = append(got, string(p))
		case <-time.After(10 * time.Second):
			t.Fatalf("got %d of %d payloads: %q", len(got), n, got)
		}
	}
	return got
}

// TestLifetime: a run is deleted when its lifetime ends on the manager's
// clock, started or not, and its listeners' channels are closed.
func TestLifetime(t *testing.T) {
	m, vc := newManager(t, Options{Lifetime: time.Minute})
	ch := createAndListen(t, m, demoDef("t1", 1, false))
	vc.AdvanceTo(start+time.Minute.Milliseconds()-1, nil)
	if _, _, err := m.Listen("t1"); err != nil {
		t.Fatalf("run gone before its lifetime: %v", err)
	}
	vc.AdvanceTo(start+time.Minute.Milliseconds(), nil)
	if err := m.Start("t1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("start after the lifetime: err = %v, want ErrNotFound", err)
	}
	if _, ok := <-ch; ok {
		t.Fatal("listener channel still open after the lifetime")
	}
	if n := vc.Pending(); n != 0 {
		t.Fatalf("%d timers left after the run ended", n)
	}
}

// TestLifetimeOfStartedRun: a started, looping run is ended by its
// lifetime too, and its feed stops.
func TestLifetimeOfStartedRun(t *testing.T) {
	m, vc := newManager(t, Options{Lifetime: time.Second})
	ch := createAndListen(t, m, demoDef("t1", 2, true))
	if err := m.Start("t1"); err != nil {
		t.Fatal(err)
	}
	// Drain the results as the virtual second passes (100 records at 10 ms).
	done := make(chan int)
	go func() {
		n := 0
		for range ch {
			n++
		}
		done <- n
	}()
	vc.AdvanceTo(start+time.Second.Milliseconds(), nil)
	if n := <-done; n == 0 {
		t.Fatal("no result before the lifetime ended")
	}
	if err := m.Delete("t1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("delete after the lifetime: err = %v, want ErrNotFound", err)
	}
	if n := vc.Pending(); n != 0 {
		t.Fatalf("%d timers left after the run ended: the feed goes on", n)
	}
}

// TestMaxRecords: a looping mock feeds at most MaxRecords records; then
// its feed stops and only the lifetime timer is left.
func TestMaxRecords(t *testing.T) {
	m, vc := newManager(t, Options{MaxRecords: 5})
	ch := createAndListen(t, m, demoDef("t1", 3, true))
	if err := m.Start("t1"); err != nil {
		t.Fatal(err)
	}
	vc.AdvanceTo(start+time.Second.Milliseconds(), nil)
	got := receive(t, ch, 5)
	want := []string{`[{"a":0}]`, `[{"a":1}]`, `[{"a":2}]`, `[{"a":0}]`, `[{"a":1}]`}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("payloads %q, want %q", got, want)
		}
	}
	r, err := m.get("t1")
	if err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	fed := r.fed
	r.mu.Unlock()
	if fed != 5 {
		t.Fatalf("fed %d records, want the cap 5", fed)
	}
	if n := vc.Pending(); n != 1 {
		t.Fatalf("%d timers pending, want only the lifetime's: the feed goes on", n)
	}
}

// TestMaxRuns: at most MaxRuns runs exist at once; replacing a run of the
// same id is allowed, and deleting one makes room.
func TestMaxRuns(t *testing.T) {
	m, _ := newManager(t, Options{MaxRuns: 2})
	for _, id := range []string{"a", "b"} {
		if err := m.Create(demoDef(id, 1, false)); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Create(demoDef("c", 1, false)); !errors.Is(err, ErrState) {
		t.Fatalf("third run: err = %v, want ErrState", err)
	}
	if err := m.Create(demoDef("a", 2, false)); err != nil {
		t.Fatalf("replacing a: %v", err)
	}
	if err := m.Delete("b"); err != nil {
		t.Fatal(err)
	}
	if err := m.Create(demoDef("c", 1, false)); err != nil {
		t.Fatalf("third run after a delete: %v", err)
	}
}

// TestLastListenerLeaves: a started run is deleted when its last listener
// leaves.
func TestLastListenerLeaves(t *testing.T) {
	m, _ := newManager(t, Options{})
	if err := m.Create(demoDef("t1", 1, false)); err != nil {
		t.Fatal(err)
	}
	_, leave1, err := m.Listen("t1")
	if err != nil {
		t.Fatal(err)
	}
	_, leave2, err := m.Listen("t1")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start("t1"); err != nil {
		t.Fatal(err)
	}
	leave1()
	if _, err := m.get("t1"); err != nil {
		t.Fatalf("run deleted while a listener remains: %v", err)
	}
	leave2()
	if _, err := m.get("t1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after the last listener left: err = %v, want ErrNotFound", err)
	}
}
