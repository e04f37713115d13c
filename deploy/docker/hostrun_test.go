package docker

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/testwait"
)

// checkKuiperdOnHost runs the kuiperd of the image root on the host, on a
// copy of the image's /kuiper as its base folder and a free port: -version
// prints the stamped version, the daemon answers GET /ping, and
// -healthcheck, with the image's REST address, exits 0 while the daemon
// runs and 1 once it has stopped.
func checkKuiperdOnHost(t *testing.T, root string, wantVersion *regexp.Regexp) {
	bin := filepath.Join(t.TempDir(), "kuiperd")
	exe, err := os.ReadFile(filepath.Join(root, "usr/local/bin/kuiperd"))
	if err == nil {
		err = os.WriteFile(bin, exe, 0o755)
	}
	if err != nil {
		t.Fatalf("take kuiperd out of the image: %v", err)
	}
	base := t.TempDir()
	if err := os.CopyFS(base, os.DirFS(filepath.Join(root, "kuiper"))); err != nil {
		t.Fatalf("copy the image's /kuiper: %v", err)
	}
	env := baseEnv(base)

	out, err := command(bin, env, "-version").Output()
	if line := strings.TrimSpace(string(out)); err != nil || !wantVersion.MatchString(line) {
		t.Errorf("kuiperd -version printed %q (%v), want %s", line, err, wantVersion)
	}

	stop, api := startKuiperd(t, bin, append(env, "KUIPER__BASIC__RESTIP=127.0.0.1", "KUIPER__BASIC__RESTPORT=0"))
	resp, err := http.Get(api.String() + "/ping")
	if err != nil {
		t.Fatalf("GET /ping: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /ping: %s", resp.Status)
	}
	// The image's own address, 0.0.0.0, which the check asks on loopback.
	probe := append(env, "KUIPER__BASIC__RESTIP=0.0.0.0", "KUIPER__BASIC__RESTPORT="+api.Port())
	if out, err := command(bin, probe, "-healthcheck").CombinedOutput(); err != nil {
		t.Errorf("kuiperd -healthcheck against the running daemon: %v\n%s", err, out)
	}
	stop()
	err = command(bin, probe, "-healthcheck").Run()
	if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Errorf("kuiperd -healthcheck with no daemon: %v, want exit status 1", err)
	}
}

// baseEnv is the host's environment without its kuiperd settings, with
// base as the base folder.
func baseEnv(base string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KUIPER__") && !strings.HasPrefix(kv, "KuiperBaseKey=") {
			env = append(env, kv)
		}
	}
	return append(env, "KuiperBaseKey="+base)
}

func command(bin string, env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	return cmd
}

// startKuiperd starts the daemon bin and returns, once its banner names
// the REST address, that address and a stop function that ends the daemon
// with SIGTERM and waits for it; the test's cleanup kills it if stop was
// not called.
func startKuiperd(t *testing.T, bin string, env []string) (stop func(), api *url.URL) {
	t.Helper()
	cmd := command(bin, env)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start kuiperd: %v", err)
	}
	exited := make(chan error, 1)
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if _, a, ok := strings.Cut(sc.Text(), "restful api on "); ok {
				addr <- a
				break
			}
		}
		io.Copy(io.Discard, stdout) //nolint:errcheck // drain until the daemon exits
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if cmd.Process.Kill() == nil {
			<-exited
		}
	})
	select {
	case a := <-addr:
		if api, err = url.Parse(a); err != nil {
			t.Fatalf("kuiperd's banner names %q: %v", a, err)
		}
	case err := <-exited:
		t.Fatalf("kuiperd exited before serving: %v", err)
	case <-time.After(testwait.Limit):
		t.Fatalf("kuiperd printed no REST address in %s", testwait.Limit)
	}
	return func() {
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatalf("stop kuiperd: %v", err)
		}
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("kuiperd after SIGTERM: %v", err)
			}
		case <-time.After(testwait.Limit):
			t.Fatalf("kuiperd still runs %s after SIGTERM", testwait.Limit)
		}
	}, api
}
