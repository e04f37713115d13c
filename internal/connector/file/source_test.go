package file

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/connector/connectortest"
)

func registry(t *testing.T) *connector.Registry {
	t.Helper()
	r := connectortest.Registry(t, Register)
	return r
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// record renders a message as its payload string or its data row.
func record(m *api.Message) any {
	if m.Data != nil {
		return m.Data
	}
	return string(m.Payload)
}

// readAll reads until io.EOF with a virtual clock that jumps ahead whenever
// the source waits.
func readAll(t *testing.T, s api.Source, v *clock.Virtual) []any {
	t.Helper()
	var out []any
	for range 1000 {
		r := readAdvancing(s, v, time.Millisecond, 100)
		if errors.Is(r.err, io.EOF) {
			return out
		}
		if r.err != nil {
			t.Fatalf("read: %v", r.err)
		}
		out = append(out, record(r.m))
	}
	t.Fatal("no EOF")
	return nil
}

type result struct {
	m   *api.Message
	err error
}

// readAdvancing reads one message from s, moving the virtual clock v
// stepMs ahead every poll of wall time until Read returns, so that a
// source waiting on v gets there.
func readAdvancing(s api.Source, v *clock.Virtual, poll time.Duration, stepMs int64) result {
	ch := make(chan result, 1)
	go func() {
		m, err := s.Read(context.Background())
		ch <- result{m, err}
	}()
	for {
		select {
		case r := <-ch:
			return r
		case <-time.After(poll):
			v.AdvanceTo(v.Now().UnixMilli()+stepMs, nil)
		}
	}
}

func TestSourceFormats(t *testing.T) {
	tests := []struct {
		name    string
		content string
		props   map[string]any
		want    []any
	}{
		{"json array", `[{"a":1}, {"a": 2.5}]`, nil, []any{`{"a":1}`, `{"a":2.5}`}},
		{"ndjson", "{\"a\":1}\n{\"a\":\n 2}\n", nil, []any{`{"a":1}`, `{"a":2}`}},
		{"empty json", "  \n", nil, nil},
		{"lines", "l1\r\nl2\n\nl3\n", map[string]any{"fileType": "lines"}, []any{"l1", "l2", "l3"}},
		{"lines ignore", "head\nl1\nl2\ntail1\ntail2\n", map[string]any{"fileType": "lines", "ignoreStartLines": 1, "ignoreEndLines": 2}, []any{"l1", "l2"}},
		{"lines ignore all", "a\nb\n", map[string]any{"fileType": "lines", "ignoreStartLines": 1, "ignoreEndLines": 1}, nil},
		{"csv header", "id,name\n1,\"a,b\"\n2,c\n", map[string]any{"fileType": "csv", "hasHeader": true},
			[]any{map[string]any{"id": "1", "name": "a,b"}, map[string]any{"id": "2", "name": "c"}}},
		{"csv columns", "1;x;extra\n", map[string]any{"fileType": "csv", "delimiter": ";", "columns": []any{"id", "name"}},
			[]any{map[string]any{"id": "1", "name": "x", "cols2": "extra"}}},
		{"csv default names", "# comment\n1,2\n", map[string]any{"fileType": "csv", "ignoreStartLines": 1},
			[]any{map[string]any{"cols0": "1", "cols1": "2"}}},
		{"gzip lines", gzipped(t, "l1\nl2\n"), map[string]any{"fileType": "lines", "decompression": "gzip"}, []any{"l1", "l2"}},
		{"parallel false", "l1\n", map[string]any{"fileType": "lines", "parallel": false}, []any{"l1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, map[string]string{"in.txt": tc.content})
			props := map[string]any{"path": dir, "datasource": "in.txt"}
			for k, v := range tc.props {
				props[k] = v
			}
			v := clock.NewVirtual(0)
			s, err := registry(t).NewSource(Type, props, connector.Deps{Clock: v})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Connect(context.Background()); err != nil {
				t.Fatal(err)
			}
			defer s.Close(context.Background())
			if got := readAll(t, s, v); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got  %#v\nwant %#v", got, tc.want)
			}
		})
	}
}

func TestSourceParseErrors(t *testing.T) {
	tests := []struct{ name, content string }{
		{"broken json", `[{"a":1}`},
		{"array of numbers", `[1,2]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, map[string]string{"in.json": tc.content})
			s, err := registry(t).NewSource(Type, map[string]any{"path": dir, "datasource": "in.json"}, connector.Deps{Clock: clock.NewVirtual(0)})
			if err != nil {
				t.Fatal(err)
			}
			s.Connect(context.Background())
			if _, err := s.Read(context.Background()); err == nil || errors.Is(err, io.EOF) {
				t.Fatalf("err = %v, want a parse error", err)
			}
		})
	}
}

func TestSourceFolderAndActions(t *testing.T) {
	tests := []struct {
		name      string
		action    int
		wantLeft  []string
		wantMoved []string
	}{
		{"keep", 0, []string{"a.json", "b.json"}, nil},
		{"delete", 1, nil, nil},
		{"move", 2, nil, []string{"a.json", "b.json"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dataDir := t.TempDir()
			dir := filepath.Join(dataDir, "in")
			os.Mkdir(dir, 0o755)
			writeFiles(t, dir, map[string]string{"b.json": `{"f":"b"}`, "a.json": `[{"f":"a1"},{"f":"a2"}]`})
			props := map[string]any{"path": "data/in", "actionAfterRead": tc.action, "moveTo": "done"}
			v := clock.NewVirtual(0)
			s, err := registry(t).NewSource(Type, props, connector.Deps{Clock: v, DataDir: dataDir})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Connect(context.Background()); err != nil {
				t.Fatal(err)
			}
			got := readAll(t, s, v)
			if want := []any{`{"f":"a1"}`, `{"f":"a2"}`, `{"f":"b"}`}; !reflect.DeepEqual(got, want) {
				t.Fatalf("got %v, want %v", got, want)
			}
			if left := names(t, dir); !reflect.DeepEqual(left, tc.wantLeft) {
				t.Errorf("left in folder: %v, want %v", left, tc.wantLeft)
			}
			if moved := names(t, filepath.Join(dataDir, "done")); !reflect.DeepEqual(moved, tc.wantMoved) {
				t.Errorf("moved: %v, want %v", moved, tc.wantMoved)
			}
		})
	}
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

func TestSourceIntervals(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"in": "x\ny\n"})
	v := clock.NewVirtual(0)
	s, err := registry(t).NewSource(Type, map[string]any{
		"path": dir, "datasource": "in", "fileType": "lines", "interval": "10s", "sendInterval": "1s",
	}, connector.Deps{Clock: v})
	if err != nil {
		t.Fatal(err)
	}
	s.Connect(context.Background())
	// Expected emission times: pass 1 at 0 and 1s, pass 2 at 10s and 11s.
	want := []struct {
		line string
		ms   int64
	}{{"x", 0}, {"y", 1000}, {"x", 10000}, {"y", 11000}}
	for i, w := range want {
		r := readAdvancing(s, v, 2*time.Millisecond, 500)
		if r.err != nil {
			t.Fatal(r.err)
		}
		if string(r.m.Payload) != w.line || r.m.Meta["file"] != "in" {
			t.Fatalf("record %d = %q %v", i, r.m.Payload, r.m.Meta)
		}
		// The virtual clock moves in 500 ms steps, so the record arrives
		// within one step of its due time.
		if got := v.Now().UnixMilli(); got < w.ms || got > w.ms+500 {
			t.Fatalf("record %d at %d ms, want about %d", i, got, w.ms)
		}
	}
}

func TestSourceRewind(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"a": "a1\na2\n", "b": "b1\nb2\nb3\n", "c": "c1\n"})
	tests := []struct {
		name   string
		offset string
		want   []any
	}{
		{"mid file", `{"v":1,"file":"b","i":1}`, []any{"b2", "b3", "c1"}},
		{"end of file", `{"v":1,"file":"b","i":3}`, []any{"c1"}},
		{"missing file resumes after it", `{"v":1,"file":"bb","i":0}`, []any{"c1"}},
		{"start", `{"v":1,"file":"","i":0}`, []any{"a1", "a2", "b1", "b2", "b3", "c1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := clock.NewVirtual(0)
			s, err := registry(t).NewSource(Type, map[string]any{"path": dir, "fileType": "lines"}, connector.Deps{Clock: v})
			if err != nil {
				t.Fatal(err)
			}
			rw := s.(api.Rewindable)
			for range 2 {
				if err := rw.Rewind([]byte(tc.offset)); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Connect(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := readAll(t, s, v); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("offset round trip", func(t *testing.T) {
		v := clock.NewVirtual(0)
		s, _ := registry(t).NewSource(Type, map[string]any{"path": dir, "fileType": "lines"}, connector.Deps{Clock: v})
		s.Connect(context.Background())
		for range 3 {
			if _, err := s.Read(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		off, _ := s.(api.Rewindable).Offset()
		if string(off) != `{"v":1,"file":"b","i":1}` {
			t.Fatalf("offset = %s", off)
		}
	})
	t.Run("bad offsets", func(t *testing.T) {
		s, _ := registry(t).NewSource(Type, map[string]any{"path": dir}, connector.Deps{Clock: clock.NewVirtual(0)})
		for _, o := range []string{`{"v":9}`, `{"v":1,"i":-1}`, `x`} {
			if err := s.(api.Rewindable).Rewind([]byte(o)); err == nil {
				t.Errorf("accepted %s", o)
			}
		}
	})
}

func TestSourceConfigErrors(t *testing.T) {
	dir := t.TempDir()
	deps := connector.Deps{Clock: clock.NewVirtual(0)}
	tests := []struct {
		name       string
		props      map[string]any
		connectErr bool
	}{
		{"move without moveTo", map[string]any{"path": dir, "actionAfterRead": 2}, false},
		{"bad action", map[string]any{"path": dir, "actionAfterRead": 3}, false},
		{"bad fileType", map[string]any{"path": dir, "fileType": "xml"}, false},
		{"long delimiter", map[string]any{"path": dir, "delimiter": "::"}, false},
		{"datasource with slash", map[string]any{"path": dir, "datasource": "../x"}, false},
		{"missing file", map[string]any{"path": dir, "datasource": "nope"}, true},
		{"missing folder", map[string]any{"path": filepath.Join(dir, "nope")}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := registry(t).NewSource(Type, tc.props, deps)
			if !tc.connectErr {
				if err == nil {
					t.Fatal("built")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Connect(context.Background()); err == nil {
				t.Fatal("connected")
			}
		})
	}
}

func TestResolve(t *testing.T) {
	tests := []struct{ in, want string }{
		{"data", "/d"},
		{"data/x", "/d/x"},
		{"x/y", "/d/x/y"},
		{"/abs/p", "/abs/p"},
		{"database", "/d/database"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			if got := resolve("/d", tc.in); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func gzipped(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestSourceRefusesParallelAndBadFiles(t *testing.T) {
	_, err := registry(t).NewSource(Type, map[string]any{"path": t.TempDir(), "parallel": true}, connector.Deps{Clock: clock.NewVirtual(0)})
	if err == nil || !strings.Contains(err.Error(), "parallel") {
		t.Fatalf("parallel true: %v", err)
	}
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"in.txt": "not gzip"})
	s, err := registry(t).NewSource(Type, map[string]any{"path": dir, "datasource": "in.txt", "decompression": "gzip"}, connector.Deps{Clock: clock.NewVirtual(0)})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := s.Read(ctx); err == nil || !strings.Contains(err.Error(), "decompress in.txt") {
		t.Fatalf("read of a file that is not gzip: %v", err)
	}
}
