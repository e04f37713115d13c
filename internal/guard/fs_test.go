package guard

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fsTree is a data folder with a file, a subfolder, links to inside it
// (absolute and relative) and links to outside it (a folder, a file and a
// dangling name), and a folder outside with a file.
type fsTree struct{ base, data, outside string }

func newFSTree(t *testing.T) fsTree {
	t.Helper()
	base := t.TempDir()
	tr := fsTree{base: base, data: filepath.Join(base, "data"), outside: filepath.Join(base, "outside")}
	for _, d := range []string{filepath.Join(tr.data, "sub"), tr.outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, content := range map[string]string{
		filepath.Join(tr.data, "sub", "in.txt"): "inside",
		filepath.Join(tr.outside, "secret"):     "secret",
	} {
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"out":       tr.outside,                           // folder outside
		"outfile":   filepath.Join(tr.outside, "secret"),  // file outside
		"dangling":  filepath.Join(tr.outside, "new.txt"), // file outside, not there yet
		"rel-out":   "../outside",                         // relative, outside
		"insub":     filepath.Join(tr.data, "sub"),        // absolute, inside
		"rel-sub":   "sub",                                // relative, inside
		"sub/up":    "..",                                 // the data folder itself
		"loop":      "loop2",
		"loop2":     "loop",
		"sub/upout": "../../outside",
	} {
		if err := os.Symlink(target, filepath.Join(tr.data, link)); err != nil {
			t.Fatal(err)
		}
	}
	return tr
}

func (tr fsTree) j(elem ...string) string {
	return filepath.Join(append([]string{tr.data}, elem...)...)
}

func wantOutside(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, ErrOutside) || !strings.Contains(err.Error(), "outside the allowed folders") {
		t.Errorf("%s: err = %v, want ErrOutside", what, err)
	}
}

func TestPathResolvesEveryLink(t *testing.T) {
	tr := newFSTree(t)
	g := New(Policy{Roots: []string{tr.data}})
	for _, p := range []string{
		tr.j("insub", "in.txt"), tr.j("rel-sub", "new.txt"), tr.j("sub", "up", "sub", "in.txt"),
		tr.j("sub", "up"), tr.data + "/sub/../sub/in.txt", tr.data + "/nothere/../sub",
	} {
		if err := g.Path("path", p); err != nil {
			t.Errorf("Path(%s) = %v, want nil", p, err)
		}
	}
	for _, p := range []string{
		tr.j("out"), tr.j("out", "secret"), tr.j("out", "new", "deep.txt"), tr.j("outfile"), tr.j("dangling"),
		tr.j("rel-out", "secret"), tr.j("sub", "upout"), tr.data + "/sub/up/../outside",
		// ".." after a link goes up from the link's target, as the system does.
		tr.data + "/insub/../../outside/secret", tr.data + "/out/../outside/secret",
		tr.outside, "/etc/passwd", tr.data + "/../outside/secret",
	} {
		wantOutside(t, "Path("+p+")", g.Path("path", p))
	}
	if err := g.Path("path", tr.j("loop", "x")); err == nil || !strings.Contains(err.Error(), "symbolic links") {
		t.Errorf("link loop: %v", err)
	}
}

func TestOpenFileRefusesLinksOut(t *testing.T) {
	tr := newFSTree(t)
	g := New(Policy{Roots: []string{tr.data}})
	create := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	for _, p := range []string{tr.j("out", "new.txt"), tr.j("dangling"), tr.j("outfile"), tr.j("rel-out", "x"), tr.j("sub", "upout", "x")} {
		f, err := g.OpenFile("path", p, create, 0o644)
		if err == nil {
			f.Close()
		}
		wantOutside(t, "OpenFile("+p+")", err)
	}
	if _, err := g.ReadFile("file", tr.j("outfile")); !errors.Is(err, ErrOutside) || !strings.Contains(err.Error(), `file "`) {
		t.Errorf("ReadFile through a link out: %v, want ErrOutside naming the property", err)
	}
	wantOutside(t, "MkdirAll through a link out", g.MkdirAll("path", tr.j("out", "a", "b"), 0o755))
	wantOutside(t, "Remove through a link out", g.Remove("path", tr.j("out", "secret")))
	wantOutside(t, "Rename out", g.Rename("path", tr.j("sub", "in.txt"), "moveTo", tr.j("out", "in.txt")))
	wantOutside(t, "Rename in", g.Rename("path", tr.j("out", "secret"), "moveTo", tr.j("sub", "s")))
	if _, err := g.CreateTemp("upload", tr.j("out"), ".tmp-*"); !errors.Is(err, ErrOutside) {
		t.Errorf("CreateTemp through a link out: %v", err)
	}
	ents, err := os.ReadDir(tr.outside)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 {
		t.Fatalf("the outside folder holds %d entries, want only its secret", len(ents))
	}
	if b, _ := os.ReadFile(filepath.Join(tr.outside, "secret")); string(b) != "secret" {
		t.Fatalf("outside file changed: %q", b)
	}
}

func TestOpenFileInside(t *testing.T) {
	tr := newFSTree(t)
	g := New(Policy{Roots: []string{tr.data}})
	b, err := g.ReadFile("path", tr.j("insub", "in.txt"))
	if err != nil || string(b) != "inside" {
		t.Fatalf("read through an absolute link inside: %q, %v", b, err)
	}
	if err := g.MkdirAll("path", tr.j("rel-sub", "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := g.OpenFile("path", tr.j("rel-sub", "a", "b", "f.txt"), os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("x"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if b, err := os.ReadFile(tr.j("sub", "a", "b", "f.txt")); err != nil || string(b) != "x" {
		t.Fatalf("written file: %q, %v", b, err)
	}
	if err := g.Rename("path", tr.j("sub", "a", "b", "f.txt"), "moveTo", tr.j("insub", "g.txt")); err != nil {
		t.Fatal(err)
	}
	if fi, err := g.Stat("path", tr.j("sub", "g.txt")); err != nil || fi.Size() != 1 {
		t.Fatalf("moved file: %v, %v", fi, err)
	}
	ents, err := g.ReadDir("path", tr.j("insub"))
	if err != nil || len(ents) < 3 || ents[0].Name() > ents[1].Name() {
		t.Fatalf("ReadDir: %v, %v", ents, err)
	}
	tmp, err := g.CreateTemp("upload", tr.j("sub"), ".upload-*")
	if err != nil {
		t.Fatal(err)
	}
	tmp.Close()
	if filepath.Dir(tmp.Name()) != tr.j("sub") || !strings.HasPrefix(filepath.Base(tmp.Name()), ".upload-") {
		t.Fatalf("temporary file %s", tmp.Name())
	}
	// A link that points out is removed itself; its target stays.
	if err := g.Remove("path", tr.j("outfile")); err != nil {
		t.Fatalf("remove the link itself: %v", err)
	}
	if _, err := os.Lstat(tr.j("outfile")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("link still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(tr.outside, "secret")); err != nil {
		t.Fatalf("the link's target went: %v", err)
	}
	if _, err := g.ReadFile("path", tr.j("sub", "missing")); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), tr.j("sub", "missing")) {
		t.Fatalf("missing file: %v, want ErrNotExist naming the path given", err)
	}
}

func TestUnrestrictedFS(t *testing.T) {
	tr := newFSTree(t)
	for name, g := range map[string]*Guard{"allowExternalFileAccess": New(Policy{AllowExternalFiles: true, Roots: []string{tr.data}}), "nil": nil} {
		if b, err := g.ReadFile("path", tr.j("out", "secret")); err != nil || string(b) != "secret" {
			t.Errorf("%s: read outside: %q, %v", name, b, err)
		}
	}
	in := In(tr.data)
	if _, err := in.ReadFile("path", tr.j("outfile")); !errors.Is(err, ErrOutside) || strings.Contains(err.Error(), "allowExternalFileAccess") {
		t.Errorf("In: %v, want ErrOutside without the setting's hint", err)
	}
}
