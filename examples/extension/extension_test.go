package extension

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/sdk"
	"github.com/rekuiper/rekuiper/sdk/sdktest"
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

// memState is a minimal api.State for the sink's tests.
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

// tallyFile reads the sequence numbers of the rows in a tally file, for
// the sink conformance checks. A Write has appended its rows when it
// returns, so there is nothing to wait for.
type tallyFile struct {
	path string
	skip int // lines delivered before the current check
}

func (f *tallyFile) lines(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(f.path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for sc := bufio.NewScanner(strings.NewReader(string(b))); sc.Scan(); {
		out = append(out, sc.Text())
	}
	return out
}

func (f *tallyFile) Seqs(t *testing.T, _ int, _ time.Duration) []int64 {
	t.Helper()
	var seqs []int64
	for _, l := range f.lines(t)[f.skip:] {
		var rec struct{ Row map[string]any }
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("tally line %q: %v", l, err)
		}
		n, ok := rec.Row["seq"].(float64)
		if !ok {
			t.Fatalf("tally line %q has no seq", l)
		}
		seqs = append(seqs, int64(n))
	}
	return seqs
}

func (f *tallyFile) Reset(t *testing.T) { f.skip = len(f.lines(t)) }

// TestTallyConformance runs the checks every built-in sink passes on the
// tally sink, built through Register as the daemon builds it.
func TestTallyConformance(t *testing.T) {
	r := sdk.NewRegistry()
	if err := Register(r); err != nil {
		t.Fatal(err)
	}
	out := &tallyFile{path: filepath.Join(t.TempDir(), "tally.jsonl")}
	deps := sdk.Deps{State: memState{}}
	sdktest.RunSink(t, sdktest.Sink{
		New:   func(p map[string]any) (api.Sink, error) { return r.NewSink("tally", p, deps) },
		Props: func(*testing.T) map[string]any { return map[string]any{"path": out.path} },
		// A folder that does not exist: Connect fails, Close still works.
		UnreachableProps: map[string]any{"path": filepath.Join(t.TempDir(), "missing", "tally.jsonl")},
		Invalid: []sdktest.InvalidCase{
			{Name: "no path", Props: map[string]any{}, WantErr: `"path" is required`},
			{Name: "misspelt property", Props: map[string]any{"pth": "x"}, WantErr: "unknown properties: pth"},
		},
	}, out)
}
