package docker

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// containerRuntime returns the first of podman and docker whose `info`
// answers, or why there is none.
func containerRuntime() (string, string) {
	var why []string
	for _, rt := range []string{"podman", "docker"} {
		if _, err := exec.LookPath(rt); err != nil {
			why = append(why, rt+": not installed")
			continue
		}
		out, err := exec.Command(rt, "info").CombinedOutput()
		if err == nil {
			return rt, ""
		}
		line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
		why = append(why, rt+" info: "+line)
	}
	return "", strings.Join(why, "; ")
}

// TestImageSmoke builds the image from prebuilt binaries with a real
// container runtime and runs scripts/image.sh's smoke check: version,
// non-root user, health check, /ping, a stream and a rule over REST, and
// both kept by the volumes across a new container. It is skipped only where
// no container runtime answers.
func TestImageSmoke(t *testing.T) {
	rt, why := containerRuntime()
	if rt == "" {
		t.Skip("no container runtime: " + why)
	}
	b := make([]byte, 4)
	rand.Read(b)
	tag := "rekuiper-test:" + hex.EncodeToString(b)
	cmd := exec.Command("../../scripts/image.sh")
	cmd.Env = append(os.Environ(), "RUNTIME="+rt, "TAG="+tag)
	out, err := cmd.CombinedOutput()
	t.Cleanup(func() { exec.Command(rt, "rmi", "-f", tag).Run() })
	if err != nil {
		t.Fatalf("scripts/image.sh with %s: %v\n%s", rt, err, out)
	}
	for _, want := range []string{"runs as: 65532", "start to healthy:", "kept the stream and the rule", "smoke check passed"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("image.sh output lacks %q:\n%s", want, out)
		}
	}
	t.Logf("%s", out)
}
