package main

import (
	"context"
	"encoding/json"
	"fmt"
	"go/parser"
	"go/token"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/client"
	"github.com/rekuiper/rekuiper/internal/procs"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

func TestParseWith(t *testing.T) {
	abs, _ := filepath.Abs("ext")
	for _, tc := range []struct {
		in   string
		want extension
		err  bool
	}{
		{in: "example.com/a@v1.2.0", want: extension{module: "example.com/a", version: "v1.2.0"}},
		{in: "example.com/a", want: extension{module: "example.com/a"}},
		{in: "example.com/a=ext", want: extension{module: "example.com/a", replace: abs}},
		{in: "example.com/a@v1.0.0=ext", want: extension{module: "example.com/a", version: "v1.0.0", replace: abs}},
		{in: "=ext", err: true},
		{in: "example.com/a=", err: true},
	} {
		got, err := parseWith(tc.in)
		if (err != nil) != tc.err || (!tc.err && got != tc.want) {
			t.Errorf("parseWith(%q) = %+v, %v; want %+v (error %v)", tc.in, got, err, tc.want, tc.err)
		}
	}
}

// TestMainGo checks the main that kuiper build writes: valid Go that
// passes every extension's Register, in order, to kuiperd.Main.
func TestMainGo(t *testing.T) {
	src := mainGo([]extension{{module: "example.com/a"}, {module: "example.com/b", version: "v1.0.0"}})
	f, err := parser.ParseFile(token.NewFileSet(), "main.go", src, 0)
	if err != nil {
		t.Fatalf("generated main does not parse: %v\n%s", err, src)
	}
	var imports []string
	for _, im := range f.Imports {
		imports = append(imports, im.Path.Value)
	}
	if want := []string{`"github.com/rekuiper/rekuiper/sdk/kuiperd"`, `"example.com/a"`, `"example.com/b"`}; !slices.Equal(imports, want) {
		t.Errorf("imports %v, want %v", imports, want)
	}
	if !strings.Contains(src, "func main() { kuiperd.Main(ext0.Register, ext1.Register) }") {
		t.Errorf("generated main does not call kuiperd.Main with both Register functions:\n%s", src)
	}
}

// TestBuildExtension builds examples/extension, an out-of-tree module, into
// a custom kuiperd with `kuiper build` against this checkout, and runs a
// rule that uses its source, sink and function in the built binary.
func TestBuildExtension(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	extDir := filepath.Join(root, "examples", "extension")
	test := exec.Command("go", "test", "./...")
	test.Dir = extDir
	// The module requires this checkout through a replace directive; a
	// dependency added here since its go.sum was written is filled in.
	test.Env = append(os.Environ(), "GOFLAGS=-mod=mod -buildvcs=false")
	if out, err := test.CombinedOutput(); err != nil {
		t.Fatalf("the extension module's own tests: %v\n%s", err, out)
	}

	bin := filepath.Join(t.TempDir(), "kuiperd-ext")
	var stdout, stderr strings.Builder
	code := run([]string{"build", "-rekuiper", root, "-with", "example.com/rekuiper-extension=" + extDir, "-o", bin}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("kuiper build exited %d:\n%s", code, stderr.String())
	}
	c := startBuilt(t, bin)
	ctx := context.Background()

	if _, err := c.Text(ctx, "PUT", "/metadata/sources/ticker/confKeys/three", json.RawMessage(`{"limit":3}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateStream(ctx, client.Stream, `CREATE STREAM ticks () WITH (TYPE="ticker", CONF_KEY="three")`); err != nil {
		t.Fatal(err)
	}
	_, err = c.CreateRule(ctx, []byte(`{"id":"bad","sql":"SELECT label(n, 5) FROM ticks","actions":[{"log":{}}]}`))
	if err == nil || !strings.Contains(err.Error(), "label: prefix must be a string literal, got 5") {
		t.Fatalf("rule with a bad label argument: %v", err)
	}
	outFile := filepath.Join(t.TempDir(), "tally.jsonl")
	rule, _ := json.Marshal(map[string]any{
		"id": "r", "sql": `SELECT n, label(n, "item-") AS l FROM ticks`,
		"actions": []any{map[string]any{"tally": map[string]any{"path": outFile}}},
	})
	if _, err := c.CreateRule(ctx, rule); err != nil {
		t.Fatal(err)
	}
	var want []string
	for n := 1; n <= 3; n++ {
		want = append(want, fmt.Sprintf(`{"row":{"l":"item-%d","n":%d},"tally":%d}`, n, n, n))
	}
	var got []string
	testwait.Poll(60*time.Second, func() bool {
		b, _ := os.ReadFile(outFile)
		got = strings.Split(strings.TrimSpace(string(b)), "\n")
		return len(got) >= len(want)
	})
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		st, _ := c.RuleStatus(ctx, "r")
		t.Fatalf("tally file:\n%s\nwant:\n%s\nrule status: %s", strings.Join(got, "\n"), strings.Join(want, "\n"), st)
	}
}

// startBuilt runs a built kuiperd on ephemeral ports with its own folders
// and returns a client once its banner names the REST address.
func startBuilt(t *testing.T, bin string) *client.Client {
	t.Helper()
	base := t.TempDir()
	cmd := exec.Command(bin, "-etc", filepath.Join(base, "etc"), "-data", filepath.Join(base, "data"), "-log", filepath.Join(base, "log"))
	cmd.Env = append(os.Environ(), "KUIPER__BASIC__RESTPORT=0", "KUIPER__BASIC__RESTIP=127.0.0.1",
		"KUIPER__SOURCE__HTTPSERVERPORT=0", "KUIPER__BASIC__CONSOLELOG=false")
	cmd.Stderr = os.Stderr
	t.Cleanup(func() {
		if cmd.Process != nil {
			cmd.Process.Kill() //nolint:errcheck // may have exited
			cmd.Wait()         //nolint:errcheck // reaped
		}
	})
	url, err := procs.StartServing(cmd, nil, testwait.Limit)
	if err != nil {
		t.Fatal(err)
	}
	return client.New(url, http.DefaultClient)
}
