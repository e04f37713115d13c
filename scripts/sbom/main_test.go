package main

import (
	"bytes"
	"debug/buildinfo"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSBOMOfKuiper builds the kuiper CLI and checks its SBOM against the
// build info the toolchain embedded (what `go version -m` prints).
func TestSBOMOfKuiper(t *testing.T) {
	exe := filepath.Join(t.TempDir(), "kuiper")
	if out, err := exec.Command("go", "build", "-o", exe, "../../cmd/kuiper").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	bi, err := buildinfo.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	bom, err := build("rekuiper", "v1.2.3", []string{exe}, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := write(&buf, bom); err != nil {
		t.Fatal(err)
	}
	var back BOM
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.BOMFormat != "CycloneDX" || back.SpecVersion != "1.5" || back.Metadata.Component.Version != "v1.2.3" ||
		!strings.HasPrefix(back.SerialNumber, "urn:uuid:") || len(back.SerialNumber) != len("urn:uuid:")+36 {
		t.Fatalf("header: %+v", back)
	}
	byRef := map[string]Component{}
	for _, c := range back.Components {
		byRef[c.BOMRef] = c
	}
	if len(bi.Deps) == 0 {
		t.Fatal("test binary has no dependencies to check")
	}
	for _, d := range bi.Deps {
		want := module(d)
		got, ok := byRef[want.BOMRef]
		if !ok {
			t.Fatalf("dependency %s missing", want.BOMRef)
		}
		if d.Sum != "" && (len(got.Hashes) != 1 || len(got.Hashes[0].Content) != 64) {
			t.Fatalf("dependency %s: hashes %v for sum %s", want.BOMRef, got.Hashes, d.Sum)
		}
	}
	if len(back.Components) != len(byRef) {
		t.Fatal("duplicate components")
	}
}

func TestNotABinary(t *testing.T) {
	f := t.TempDir() + "/x"
	os.WriteFile(f, []byte("not a binary"), 0o644)
	if _, err := build("r", "v1", []string{f}, time.Now()); err == nil || !strings.Contains(err.Error(), "read build info of "+f) {
		t.Fatalf("got %v", err)
	}
}
