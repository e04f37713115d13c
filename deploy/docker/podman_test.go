package docker

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// podman runs the podman command line on storage of its own: images,
// containers and volumes live in one test's temporary folder (vfs driver,
// which needs no overlay mount), events go to a file and cgroups are
// managed without systemd, so tests share no state with each other or
// with the machine's podman, and nothing is left behind.
type podman struct {
	dir string
	env []string // os.Environ() plus the configuration files
}

// newPodman returns a podman on private storage that the test's cleanup
// empties. Where podman is not installed it skips the test, or fails it
// when CI=true: CI installs podman (.ci/run), so there a missing podman is
// a broken setup, not a reason to check less.
func newPodman(t *testing.T) *podman {
	t.Helper()
	if _, err := exec.LookPath("podman"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("podman is missing (%v), and CI=true: .ci/run installs it", err)
		}
		t.Skipf("podman is missing (%v): the image is not built or checked", err)
	}
	dir := t.TempDir()
	p := &podman{dir: dir}
	for _, sub := range []string{"networks", "tmp"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	storage := fmt.Sprintf("[storage]\ndriver = \"vfs\"\ngraphroot = %q\nrunroot = %q\n",
		filepath.Join(dir, "root"), filepath.Join(dir, "run"))
	engine := fmt.Sprintf("[engine]\nevents_logger = \"file\"\nevents_logfile_path = %q\ncgroup_manager = \"cgroupfs\"\ntmp_dir = %q\nimage_copy_tmp_dir = %q\n"+
		"[network]\nnetwork_config_dir = %q\n",
		filepath.Join(dir, "events.log"), filepath.Join(dir, "libpod"), filepath.Join(dir, "tmp"), filepath.Join(dir, "networks"))
	files := map[string]string{"storage.conf": storage, "containers.conf": engine}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p.env = append(os.Environ(),
		"CONTAINERS_STORAGE_CONF="+filepath.Join(dir, "storage.conf"),
		"CONTAINERS_CONF="+filepath.Join(dir, "containers.conf"),
		"TMPDIR="+filepath.Join(dir, "tmp"))
	t.Cleanup(func() { p.clean(t) })
	return p
}

// run runs podman with args and returns its combined output.
func (p *podman) run(args ...string) (string, error) {
	cmd := exec.Command("podman", args...)
	cmd.Env = p.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// must runs podman with args and fails the test unless it succeeds; it
// returns standard output alone, for a caller that parses it.
func (p *podman) must(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("podman", args...)
	cmd.Env = p.env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("podman %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// mount mounts image's root file system read-only for the test and
// returns its path; the test's cleanup unmounts it.
func (p *podman) mount(t *testing.T, image string) string {
	t.Helper()
	root := strings.TrimSpace(p.must(t, "image", "mount", image))
	t.Cleanup(func() {
		if out, err := p.run("image", "unmount", image); err != nil {
			t.Errorf("podman image unmount %s: %v\n%s", image, err, out)
		}
	})
	return root
}

// clean removes every container, volume and image of p's storage, then
// the storage itself, which a rootless podman's subordinate ids keep the
// test's own cleanup from removing.
func (p *podman) clean(t *testing.T) {
	for _, args := range [][]string{{"rm", "-af", "-v"}, {"volume", "rm", "-af"}, {"rmi", "-af"}} {
		if out, err := p.run(args...); err != nil {
			t.Errorf("podman %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	if os.Geteuid() != 0 {
		if out, err := p.run("unshare", "rm", "-rf", filepath.Join(p.dir, "root"), filepath.Join(p.dir, "run")); err != nil {
			t.Errorf("remove podman storage: %v\n%s", err, out)
		}
	}
}
