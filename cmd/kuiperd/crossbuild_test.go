package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestReleaseTargetsCompile builds kuiperd and kuiper as scripts/release.sh
// does (CGO off) for the release targets unlike the machine the tests run
// on: linux/arm/7, the one 32-bit target (an untyped constant above 2^31
// or an int64 value narrowed to int compiles on amd64 and not there), and
// windows/amd64, the one without Unix system calls. darwin shares the
// Unix code paths of linux and is left to the release build.
func TestReleaseTargetsCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-compiles the daemon twice; -short skips it")
	}
	for _, target := range []struct{ goos, goarch, goarm string }{
		{"linux", "arm", "7"},
		{"windows", "amd64", ""},
	} {
		t.Run(target.goos+"/"+target.goarch+target.goarm, func(t *testing.T) {
			// Two main packages: -o names a folder.
			cmd := exec.Command("go", "build", "-o", t.TempDir()+string(filepath.Separator), ".", "../kuiper")
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+target.goos, "GOARCH="+target.goarch, "GOARM="+target.goarm)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("go build for %s/%s: %v\n%s", target.goos, target.goarch, err, out)
			}
		})
	}
}
