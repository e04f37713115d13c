package version

import (
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	setting := func(kv ...string) []debug.BuildSetting {
		var out []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			out = append(out, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return out
	}
	for _, tc := range []struct {
		name         string
		bi           *debug.BuildInfo
		ver, commit  string
		wantV, wantC string
	}{
		{name: "no build info", wantV: "dev"},
		{
			name:  "work tree build",
			bi:    &debug.BuildInfo{GoVersion: "go1.26", Main: debug.Module{Path: Module, Version: "(devel)"}, Settings: setting("vcs.revision", "abc123", "vcs.time", "2026-12-01T00:00:00Z", "vcs.modified", "false")},
			wantV: "dev", wantC: "abc123",
		},
		{
			name:  "dirty work tree",
			bi:    &debug.BuildInfo{Main: debug.Module{Path: Module, Version: "(devel)"}, Settings: setting("vcs.revision", "abc123", "vcs.modified", "true")},
			wantV: "dev", wantC: "abc123-dirty",
		},
		{
			name: "stamped release wins",
			bi:   &debug.BuildInfo{Main: debug.Module{Path: Module, Version: "(devel)"}, Settings: setting("vcs.revision", "abc123", "vcs.modified", "true")},
			ver:  "v2.1.0", commit: "fff000",
			wantV: "v2.1.0", wantC: "fff000",
		},
		{
			name:  "dependency of a custom build",
			bi:    &debug.BuildInfo{Main: debug.Module{Path: "example.com/mykuiperd"}, Deps: []*debug.Module{{Path: "other/mod", Version: "v1.0.0"}, {Path: Module, Version: "v0.0.0-20261201120000-0123456789ab"}}},
			wantV: "v0.0.0-20261201120000-0123456789ab", wantC: "0123456789ab",
		},
		{
			name:  "replaced dependency",
			bi:    &debug.BuildInfo{Main: debug.Module{Path: "example.com/mykuiperd"}, Deps: []*debug.Module{{Path: Module, Version: "v2.0.0", Replace: &debug.Module{Path: "../rekuiper"}}}},
			wantV: "v2.0.0",
		},
		{
			name:  "tagged dependency",
			bi:    &debug.BuildInfo{Main: debug.Module{Path: "example.com/mykuiperd"}, Deps: []*debug.Module{{Path: Module, Version: "v2.1.0"}}},
			wantV: "v2.1.0",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := fromBuildInfo(tc.bi, tc.ver, tc.commit)
			if got.Version != tc.wantV || got.Commit != tc.wantC {
				t.Fatalf("got version %q commit %q, want %q %q", got.Version, got.Commit, tc.wantV, tc.wantC)
			}
		})
	}
}

// TestLinkerStamp builds a binary with -ldflags -X, as scripts/release.sh
// does, and checks that it reports the stamps.
func TestLinkerStamp(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "stamped")
	ld := "-X " + Module + "/internal/version.stamped=v9.8.7 -X " + Module + "/internal/version.stampedCommit=cafe42"
	if out, err := exec.Command("go", "build", "-ldflags", ld, "-o", bin, "./testdata/printversion").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); !strings.HasPrefix(got, "v9.8.7 (commit cafe42, go") {
		t.Fatalf("stamped binary printed %q", got)
	}
}
