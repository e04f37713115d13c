package docker

import (
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestImage builds the image from prebuilt binaries with podman
// (scripts/image.sh) and checks it without running a container: its
// configuration, the files of its root, and the kuiperd taken out of it,
// run on the host. Where a container can run, it also runs image.sh's
// smoke check on the image. Without podman the test is skipped, or fails
// when CI=true.
func TestImage(t *testing.T) {
	p := newPodman(t)
	b := make([]byte, 4)
	rand.Read(b)
	id := hex.EncodeToString(b)
	tag, version := "localhost/rekuiper-test:"+id, "v0.0.0-imagetest."+id
	start := time.Now()
	out := imageScript(t, p, "RUNTIME=podman", "TAG="+tag, "SMOKE=0", "VERSION="+version)
	t.Logf("%s (binaries and image: %s)", strings.TrimSpace(out), time.Since(start).Round(time.Millisecond))
	wantVersion := regexp.MustCompile(`^kuiperd ` + regexp.QuoteMeta(version) + ` \(commit ` + regexp.QuoteMeta(headCommit()) + `(-dirty)?, `)

	t.Run("config", func(t *testing.T) {
		var images []imageInfo
		if err := json.Unmarshal([]byte(p.must(t, "image", "inspect", tag)), &images); err != nil || len(images) != 1 {
			t.Fatalf("podman image inspect %s: %d images, %v", tag, len(images), err)
		}
		checkImageConfig(t, images[0])
	})
	root := p.mount(t, tag)
	t.Run("files", func(t *testing.T) { checkImageFiles(t, root) })
	t.Run("kuiperd on the host", func(t *testing.T) { checkKuiperdOnHost(t, root, wantVersion) })
	t.Run("container", func(t *testing.T) {
		start := time.Now()
		// No network: the probe needs none, and so sets up no bridge or
		// firewall rules on the machine.
		out, err := p.run("run", "--rm", "--network", "none", tag, "-version")
		if err != nil {
			if strings.Contains(out, "setrlimit") && strings.Contains(out, "Operation not permitted") {
				t.Skipf("a container cannot run here, so image.sh's smoke check does not run (the image was checked without running it): podman run: %v: %s", err, lastLine(out))
			}
			t.Fatalf("podman run %s -version: %v\n%s", tag, err, out)
		}
		// podman's own complaints (no systemd for health check timers) may
		// come after the version on the combined output.
		if !slices.ContainsFunc(strings.Split(out, "\n"), wantVersion.MatchString) {
			t.Fatalf("kuiperd -version in a container printed %q, want a line matching %s", out, wantVersion)
		}
		out = imageScript(t, p, "RUNTIME=podman", "TAG="+tag, "BUILD=0")
		for _, want := range []string{"runs as: 65532", "start to healthy:", "kept the stream and the rule", "smoke check passed"} {
			if !strings.Contains(out, want) {
				t.Errorf("image.sh output lacks %q:\n%s", want, out)
			}
		}
		t.Logf("%s(container checks: %s)", out, time.Since(start).Round(time.Millisecond))
	})
}

// imageScript runs scripts/image.sh with p's storage and env, and fails
// the test unless it succeeds.
func imageScript(t *testing.T, p *podman, env ...string) string {
	t.Helper()
	cmd := exec.Command("../../scripts/image.sh")
	cmd.Env = append(slices.Clone(p.env), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/image.sh %v: %v\n%s", env, err, out)
	}
	return string(out)
}

// headCommit is the commit image.sh stamps: git's HEAD, or "unknown"
// outside a git checkout.
func headCommit() string {
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// imageInfo is the part of `podman image inspect` the tests read.
type imageInfo struct {
	Os, Architecture string
	Config           struct {
		User         string
		Entrypoint   []string
		Cmd          []string
		Env          []string
		WorkingDir   string
		ExposedPorts map[string]struct{}
		Volumes      map[string]struct{}
	}
	Healthcheck *struct {
		Test                           []string
		Interval, Timeout, StartPeriod time.Duration
		Retries                        int
	}
}

func checkImageConfig(t *testing.T, img imageInfo) {
	c := img.Config
	if img.Os != "linux" || img.Architecture != runtime.GOARCH {
		t.Errorf("platform %s/%s, want linux/%s", img.Os, img.Architecture, runtime.GOARCH)
	}
	if c.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532", c.User)
	}
	if !slices.Equal(c.Entrypoint, []string{"/usr/local/bin/kuiperd"}) || len(c.Cmd) != 0 {
		t.Errorf("entrypoint %q and cmd %q, want [/usr/local/bin/kuiperd] and none", c.Entrypoint, c.Cmd)
	}
	if c.WorkingDir != "/kuiper" {
		t.Errorf("working directory %q, want /kuiper", c.WorkingDir)
	}
	for _, kv := range []string{"KuiperBaseKey=/kuiper", "KUIPER__BASIC__RESTIP=0.0.0.0"} {
		if !slices.Contains(c.Env, kv) {
			t.Errorf("env %q lacks %s", c.Env, kv)
		}
	}
	if ports := slices.Sorted(maps.Keys(c.ExposedPorts)); !slices.Equal(ports, []string{"9081/tcp"}) {
		t.Errorf("exposed ports %q, want 9081/tcp", ports)
	}
	if vols := slices.Sorted(maps.Keys(c.Volumes)); !slices.Equal(vols, []string{"/kuiper/data", "/kuiper/etc"}) {
		t.Errorf("volumes %q, want /kuiper/data and /kuiper/etc", vols)
	}
	hc := img.Healthcheck
	if hc == nil {
		t.Fatal("no health check (an OCI-format build drops it: image.sh builds --format docker)")
	}
	if !slices.Equal(hc.Test, []string{"CMD", "/usr/local/bin/kuiperd", "-healthcheck"}) {
		t.Errorf("health check command %q, want exec form of kuiperd -healthcheck", hc.Test)
	}
	if hc.Interval != 15*time.Second || hc.Timeout != 6*time.Second || hc.StartPeriod != 10*time.Second || hc.Retries != 3 {
		t.Errorf("health check every %s, timeout %s, start period %s, %d retries; want 15s, 6s, 10s, 3",
			hc.Interval, hc.Timeout, hc.StartPeriod, hc.Retries)
	}
}

// checkImageFiles checks the image's root: nothing but the two static
// binaries, the CA bundle, the time zone database and /kuiper, which holds
// the repository's etc/ and is owned, all of it, by 65532.
func checkImageFiles(t *testing.T, root string) {
	top, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range top {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"etc", "kuiper", "usr"}) {
		t.Errorf("the root holds %q, want etc, kuiper and usr (a scratch image)", names)
	}
	for _, bin := range []string{"kuiperd", "kuiper"} {
		path := filepath.Join(root, "usr/local/bin", bin)
		if fi, err := os.Stat(path); err != nil || fi.Mode()&0o111 == 0 {
			t.Errorf("/usr/local/bin/%s: not an executable file (%v)", bin, err)
			continue
		}
		checkStatic(t, path)
	}
	pem, err := os.ReadFile(filepath.Join(root, "etc/ssl/certs/ca-certificates.crt"))
	if err != nil || !x509.NewCertPool().AppendCertsFromPEM(pem) {
		t.Errorf("/etc/ssl/certs/ca-certificates.crt holds no certificate (%v)", err)
	}
	for _, zone := range []string{"UTC", "Europe/Paris", "Asia/Shanghai"} {
		tz, err := os.ReadFile(filepath.Join(root, "usr/share/zoneinfo", zone))
		if err == nil {
			_, err = time.LoadLocationFromTZData(zone, tz)
		}
		if err != nil {
			t.Errorf("time zone %s: %v", zone, err)
		}
	}
	checkSameFiles(t, "../../etc", filepath.Join(root, "kuiper/etc"))
	for _, dir := range []string{"kuiper/data", "kuiper/log"} {
		if fi, err := os.Stat(filepath.Join(root, dir)); err != nil || !fi.IsDir() {
			t.Errorf("/%s: not a folder (%v)", dir, err)
		}
	}
	var wrong []string
	err = filepath.WalkDir(filepath.Join(root, "kuiper"), func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(path)
		if err != nil {
			return err
		}
		if st := fi.Sys().(*syscall.Stat_t); st.Uid != 65532 || st.Gid != 65532 {
			wrong = append(wrong, fmt.Sprintf("/%s (%d:%d)", strings.TrimPrefix(path, root+"/"), st.Uid, st.Gid))
		}
		return nil
	})
	if err != nil {
		t.Errorf("walk /kuiper: %v", err)
	}
	if len(wrong) > 0 {
		t.Errorf("%d files under /kuiper are not owned by 65532:65532, the first %s", len(wrong), wrong[0])
	}
}

// checkSameFiles fails the test unless the folder got holds the files of
// want with the same contents.
func checkSameFiles(t *testing.T, want, got string) {
	t.Helper()
	err := filepath.WalkDir(want, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(want, path)
		a, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if b, err := os.ReadFile(filepath.Join(got, rel)); err != nil || string(a) != string(b) {
			t.Errorf("%s in the image differs from the repository's (%v)", rel, err)
		}
		return nil
	})
	if err != nil {
		t.Errorf("compare %s with %s: %v", want, got, err)
	}
}
