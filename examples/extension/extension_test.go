package extension

import (
	"context"
	"testing"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/userstate"
)

func TestTickerRewindIsIdempotent(t *testing.T) {
	ctx := context.Background()
	tk := &Ticker{}
	tk.Connect(ctx)
	for i := 0; i < 3; i++ {
		tk.Read(ctx)
	}
	off, _ := tk.Offset()
	tk.Read(ctx)
	tk.Read(ctx)
	for i := 0; i < 2; i++ { // twice: same result
		if err := tk.Rewind(off); err != nil {
			t.Fatal(err)
		}
	}
	m, _ := tk.Read(ctx)
	if m.Data["n"] != int64(4) {
		t.Fatalf("after rewind got %v, want 4", m.Data["n"])
	}
}

func TestTallySurvivesRestore(t *testing.T) {
	st := userstate.New()
	s := &Tally{State: st}
	s.Write(context.Background(), &api.SinkMessage{Rows: []map[string]any{{"a": 1}, {"a": 2}}})
	snap, _ := st.Snapshot()
	restored := userstate.New()
	restored.Restore(snap)
	var last int64
	s2 := &Tally{State: restored, Deliver: func(_ *api.SinkMessage, n int64) { last = n }}
	s2.Write(context.Background(), &api.SinkMessage{Rows: []map[string]any{{"a": 3}}})
	if last != 3 {
		t.Fatalf("tally after restore = %d, want 3", last)
	}
}
