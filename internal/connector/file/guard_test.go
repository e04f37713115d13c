package file

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/guard"
)

// guarded is a data folder and a folder outside it, with the guard the
// daemon builds for basic.allowExternalFileAccess false.
func guarded(t *testing.T) (data, outside string, deps connector.Deps) {
	t.Helper()
	base := t.TempDir()
	data, outside = filepath.Join(base, "data"), filepath.Join(base, "outside")
	for _, d := range []string{data, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return data, outside, connector.Deps{Clock: clock.NewVirtual(0), DataDir: data, Guard: guard.New(guard.Policy{Roots: []string{data}})}
}

func wantEmpty(t *testing.T, dir string) {
	t.Helper()
	if left := names(t, dir); len(left) != 0 {
		t.Fatalf("%s holds %v, want nothing", dir, left)
	}
}

// A sink path that becomes a symbolic link to a file outside the data
// folder after the sink was built (a dangling link: the file does not
// exist yet) writes nothing there.
func TestSinkRefusesLinkMadeAfterCheck(t *testing.T) {
	data, outside, deps := guarded(t)
	s, err := registry(t).NewSink(Type, map[string]any{"path": "out.txt"}, deps)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "stolen.txt"), filepath.Join(data, "out.txt")); err != nil {
		t.Fatal(err)
	}
	err = s.Write(ctx, &api.SinkMessage{Payload: []byte(`{"a":1}`)})
	if !errors.Is(err, guard.ErrOutside) {
		t.Fatalf("write through the link: %v, want ErrOutside", err)
	}
	wantEmpty(t, outside)
	// The same link present when the sink is built is refused then.
	if _, err := registry(t).NewSink(Type, map[string]any{"path": "out.txt"}, deps); !errors.Is(err, guard.ErrOutside) {
		t.Fatalf("build with the link: %v, want ErrOutside", err)
	}
}

// moveTo swapped for a link to outside after the source was built moves
// nothing there, and an absolute datasource outside is refused as a path.
func TestSourceRefusesLinksOut(t *testing.T) {
	data, outside, deps := guarded(t)
	in := filepath.Join(data, "in")
	if err := os.Mkdir(in, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, in, map[string]string{"a.json": `{"f":1}`})
	s, err := registry(t).NewSource(Type, map[string]any{"path": "in", "actionAfterRead": 2, "moveTo": "done"}, deps)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(data, "done")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(data, "done")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(ctx); !errors.Is(err, guard.ErrOutside) {
		t.Fatalf("move into the link: %v, want ErrOutside", err)
	}
	wantEmpty(t, outside)
	if names(t, in)[0] != "a.json" {
		t.Fatalf("the file left its folder")
	}

	for ds, want := range map[string]error{filepath.Join(outside, "x.json"): guard.ErrOutside, "/etc/passwd": guard.ErrOutside, filepath.Join(in, "a.json"): ErrProps, "sub/a.json": ErrProps, ".": ErrProps} {
		if _, err := registry(t).NewSource(Type, map[string]any{"path": "in", "datasource": ds}, deps); !errors.Is(err, want) {
			t.Errorf("datasource %s: %v, want %v", ds, err, want)
		}
	}
}
