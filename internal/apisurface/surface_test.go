package apisurface

import (
	"bufio"
	"flag"
	"os"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/surface.txt with the current surface")

const recorded = "testdata/surface.txt"

// buildFlags are passed to go list; race_test.go adds -race.
var buildFlags []string

// TestPublicAPI compares the public packages' surface with the one recorded
// in testdata/surface.txt. A line that is gone is an incompatible change
// (a removed or changed name, field or method): users' extensions stop
// compiling. A new line is compatible but must be recorded, so that a later
// removal of it is seen. After a deliberate change, record the new surface
// with `go test ./internal/apisurface -run TestPublicAPI -update` and say
// so in the release notes; scripts/apicheck.sh checks the same against the
// last release tag with apidiff.
func TestPublicAPI(t *testing.T) {
	got, err := Surface(".", buildFlags, Packages...)
	if err != nil {
		t.Fatal(err)
	}
	// The public API owns its types: no name, field or signature reaches
	// an internal package (an alias, a field's type, a parameter), so the
	// internal packages can change without breaking extensions.
	for _, l := range got {
		if strings.Contains(l, "github.com/rekuiper/rekuiper/internal/") {
			t.Errorf("public API uses an internal package: %s", l)
		}
	}
	if *update {
		if err := os.WriteFile(recorded, []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want := readLines(t, recorded)
	var removed, added []string
	for _, l := range want {
		if _, ok := slices.BinarySearch(got, l); !ok {
			removed = append(removed, l)
		}
	}
	for _, l := range got {
		if _, ok := slices.BinarySearch(want, l); !ok {
			added = append(added, l)
		}
	}
	if len(removed) > 0 {
		t.Errorf("incompatible API change: %d recorded lines are gone or changed:\n  %s", len(removed), strings.Join(removed, "\n  "))
	}
	if len(added) > 0 {
		t.Errorf("new API not recorded in %s (record it with -update):\n  %s", recorded, strings.Join(added, "\n  "))
	}
}

// TestSurfaceSeesChanges checks the comparison's input on a package whose
// surface is known, so that an empty or partial listing cannot pass.
func TestSurfaceSeesChanges(t *testing.T) {
	lines, err := Surface(".", buildFlags, "github.com/rekuiper/rekuiper/api")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"pkg github.com/rekuiper/rekuiper/api, type Source interface",
		"pkg github.com/rekuiper/rekuiper/api, type Source interface, Read(context.Context) (*Message, error)",
		"pkg github.com/rekuiper/rekuiper/api, func Retryable(error) error",
		"pkg github.com/rekuiper/rekuiper/api, type Message struct, Payload []byte",
		"pkg github.com/rekuiper/rekuiper/api, type LookupSource interface, Close(context.Context) error",
	} {
		if _, ok := slices.BinarySearch(lines, want); !ok {
			t.Errorf("surface lacks %q", want)
		}
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := sc.Text(); l != "" {
			lines = append(lines, l)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(lines)
	return lines
}
