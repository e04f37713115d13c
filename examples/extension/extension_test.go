package extension

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/sdk"
)

func TestTickerRewindIsIdempotent(t *testing.T) {
	ctx := context.Background()
	tk := &Ticker{}
	tk.Connect(ctx)
	for i := 0; i < 3; i++ {
		tk.Read(ctx)
	}
	off, err := tk.Offset()
	if err != nil {
		t.Fatal(err)
	}
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

// memState is a minimal api.State for the sink's unit test.
type memState map[string]any

func (m memState) Put(k string, v any) error { m[k] = v; return nil }
func (m memState) Get(k string) (any, bool, error) {
	v, ok := m[k]
	return v, ok, nil
}
func (m memState) Delete(k string) error { delete(m, k); return nil }
func (m memState) Increment(k string, d int64) (int64, error) {
	n, _ := m[k].(int64)
	m[k] = n + d
	return n + d, nil
}

func TestRegisterAndSpecs(t *testing.T) {
	r := sdk.NewRegistry()
	if err := Register(r); err != nil {
		t.Fatal(err)
	}
	if _, err := r.NewSource("ticker", map[string]any{"limit": "ten"}, sdk.Deps{}); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Fatalf("a non-integer limit gave %v", err)
	}
	if _, err := r.NewSink("tally", map[string]any{}, sdk.Deps{State: memState{}}); err == nil || !strings.Contains(err.Error(), "path") {
		t.Fatalf("a tally without path gave %v", err)
	}
	path := filepath.Join(t.TempDir(), "out.jsonl")
	s, err := r.NewSink("tally", map[string]any{"path": path}, sdk.Deps{State: memState{"tally.rows": int64(2)}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, &api.SinkMessage{Rows: []map[string]any{{"a": 1}}}); err != nil {
		t.Fatal(err)
	}
	s.Close(ctx)
	b, err := os.ReadFile(path)
	if err != nil || strings.TrimSpace(string(b)) != `{"row":{"a":1},"tally":3}` {
		t.Fatalf("tally file %q (%v): the count continues from the state", b, err)
	}
}
