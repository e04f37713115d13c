package file

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/connector/conformancetest"
)

func TestSink(t *testing.T) {
	msgs := []*api.SinkMessage{
		{Payload: []byte(`{"a":1,"b":"x"}`), Rows: []map[string]any{{"b": "x", "a": int64(1)}}},
		{Payload: []byte(`{"a":2,"b":"y"}`), Rows: []map[string]any{{"b": "y", "a": int64(2)}}},
	}
	csvMsgs := []*api.SinkMessage{
		{Payload: []byte("1;x"), Rows: []map[string]any{{"b": "x", "a": int64(1)}}},
		{Payload: []byte("2;y"), Rows: []map[string]any{{"b": "y", "a": int64(2)}}},
	}
	tests := []struct {
		name  string
		props map[string]any
		msgs  []*api.SinkMessage
		want  string
	}{
		{"lines", map[string]any{}, msgs, "{\"a\":1,\"b\":\"x\"}\n{\"a\":2,\"b\":\"y\"}\n"},
		{"json", map[string]any{"fileType": "json"}, msgs, `[{"a":1,"b":"x"},{"a":2,"b":"y"}]`},
		{"json empty", map[string]any{"fileType": "json"}, nil, ""},
		{"csv header", map[string]any{"fileType": "csv", "hasHeader": true, "delimiter": ";", "format": "delimited"}, csvMsgs, "a;b\n1;x\n2;y\n"},
		{"csv no header", map[string]any{"fileType": "csv"}, csvMsgs, "1;x\n2;y\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dataDir := t.TempDir()
			props := map[string]any{"path": "out/result.txt"}
			for k, v := range tc.props {
				props[k] = v
			}
			writeSink(t, props, dataDir, tc.msgs...)
			got, err := os.ReadFile(filepath.Join(dataDir, "out", "result.txt"))
			if tc.want == "" {
				if !os.IsNotExist(err) {
					t.Fatalf("file written without messages: %q, %v", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			if tc.props["fileType"] == "json" && !json.Valid(got) {
				t.Fatalf("invalid JSON %q", got)
			}
		})
	}
}

func TestSinkRolling(t *testing.T) {
	tests := []struct {
		name      string
		props     map[string]any
		advanceMS int64 // clock step before each write
		want      map[string]string
	}{
		{
			name:  "count suffix",
			props: map[string]any{"rollingCount": 2, "rollingNamePattern": "suffix"},
			want: map[string]string{
				"r-1000.txt": "m0\nm1\n",
				"r-3000.txt": "m2\nm3\n",
				"r-5000.txt": "m4\n",
			},
			advanceMS: 1000,
		},
		{
			name:      "interval prefix",
			props:     map[string]any{"rollingInterval": "2500ms", "rollingNamePattern": "prefix", "rollingCount": 0},
			advanceMS: 1000,
			want: map[string]string{
				"1000-r.txt": "m0\nm1\nm2\n",
				"4000-r.txt": "m3\nm4\n",
			},
		},
		{
			name:      "none never rolls",
			props:     map[string]any{"rollingCount": 1},
			advanceMS: 1000,
			want:      map[string]string{"r.txt": "m0\nm1\nm2\nm3\nm4\n"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			props := map[string]any{"path": filepath.Join(dir, "r.txt")}
			for k, v := range tc.props {
				props[k] = v
			}
			v := clock.NewVirtual(0)
			s, err := registry(t).NewSink(Type, props, connector.Deps{Clock: v})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			s.Connect(ctx)
			for i := range 5 {
				v.AdvanceTo(v.Now().UnixMilli()+tc.advanceMS, nil)
				if err := s.Write(ctx, &api.SinkMessage{Payload: []byte("m" + string(rune('0'+i)))}); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Close(ctx); err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, n := range names(t, dir) {
				b, _ := os.ReadFile(filepath.Join(dir, n))
				got[n] = string(b)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// writeSink writes msgs through a new sink of props over dataDir, from
// Connect to Close: one run of a rule.
func writeSink(t *testing.T, props map[string]any, dataDir string, msgs ...*api.SinkMessage) {
	t.Helper()
	s, err := registry(t).NewSink(Type, props, connector.Deps{Clock: clock.NewVirtual(0), DataDir: dataDir})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if err := s.Write(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestSinkConfigErrors(t *testing.T) {
	tests := []struct {
		name  string
		props map[string]any
	}{
		{"bad fileType", map[string]any{"fileType": "xml"}},
		{"bad pattern", map[string]any{"rollingNamePattern": "middle"}},
		{"unknown prop", map[string]any{"compressionLevel": 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := registry(t).NewSink(Type, tc.props, connector.Deps{Clock: clock.NewVirtual(0)}); err == nil {
				t.Fatal("built")
			}
		})
	}
}

// TestSinkStatus checks the status the file sink reports: the error of a
// folder that cannot be created, connected after a write.
func TestSinkStatus(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	bad, err := registry(t).NewSink(Type, map[string]any{"path": filepath.Join(blocker, "out.txt")}, connector.Deps{Clock: clock.NewVirtual(0)})
	if err != nil {
		t.Fatal(err)
	}
	conformancetest.CheckStatus(t, bad, "connecting", "")
	if err := bad.Connect(context.Background()); err == nil {
		t.Fatal("created a folder under a file")
	}
	conformancetest.CheckStatus(t, bad, "disconnected", "not a directory")

	good, err := registry(t).NewSink(Type, map[string]any{"path": filepath.Join(dir, "out.txt")}, connector.Deps{Clock: clock.NewVirtual(0)})
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close(context.Background())
	if err := good.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := good.Write(context.Background(), conformancetest.Message(1)); err != nil {
		t.Fatal(err)
	}
	conformancetest.CheckStatus(t, good, "connected", "")
}

// A sink that opens an existing file appends to it: the first new row
// starts on a new line whether or not the file ended with one, and a CSV
// header is written only into an empty file.
func TestSinkAppendsToExistingFile(t *testing.T) {
	row := func(p string) *api.SinkMessage {
		return &api.SinkMessage{Payload: []byte(p), Rows: []map[string]any{{"b": "x", "a": int64(1)}}}
	}
	for _, tc := range []struct{ name, before, want string }{
		{"no file", "", "a;b\n1;x\n2;y\n"},
		{"ended without line end", "a;b\n0;w", "a;b\n0;w\n1;x\n2;y\n"},
		{"ended with a line end", "a;b\n0;w\n", "a;b\n0;w\n1;x\n2;y\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dataDir := t.TempDir()
			path := filepath.Join(dataDir, "out.csv")
			if tc.before != "" {
				if err := os.WriteFile(path, []byte(tc.before), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			props := map[string]any{"path": "out.csv", "fileType": "csv", "hasHeader": true, "delimiter": ";"}
			// Two sinks one after the other: a rule stopped and started again.
			for _, p := range []string{"1;x", "2;y"} {
				writeSink(t, props, dataDir, row(p))
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}
