package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"
)

// TestVersionMatchesInfo builds kuiperd stamped the way scripts/release.sh
// stamps releases and checks that `kuiperd -version` and GET / report the
// stamped version and commit.
func TestVersionMatchesInfo(t *testing.T) {
	ver := fmt.Sprintf("v0.0.%d", rand.IntN(1000000))
	commit := fmt.Sprintf("%012x", rand.Uint64()&0xffffffffffff)
	pkg := "github.com/rekuiper/rekuiper/internal/version"
	ld := fmt.Sprintf("-X %s.stamped=%s -X %s.stampedCommit=%s", pkg, ver, pkg, commit)
	bin := buildDaemon(t, "-ldflags", ld)
	out, err := exec.Command(bin, "-version").Output()
	if err != nil {
		t.Fatalf("kuiperd -version: %v", err)
	}
	want := "kuiperd " + ver + " (commit " + commit + ", go"
	if line := strings.TrimSpace(string(out)); !strings.HasPrefix(line, want) {
		t.Fatalf("kuiperd -version printed %q, want prefix %q", line, want)
	}
	d := startDaemon(t, bin, t.TempDir())
	var info struct{ Version, Commit string }
	if err := d.c.JSON(context.Background(), "GET", "/", nil, &info); err != nil {
		t.Fatal(err)
	}
	if info.Version != ver || info.Commit != commit {
		t.Fatalf("GET / reports version %q commit %q, want %q %q", info.Version, info.Commit, ver, commit)
	}
}
