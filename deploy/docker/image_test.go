// Package docker holds the container image (Dockerfile, and
// Dockerfile.prebuilt for binaries built outside) and a compose file with
// Mosquitto. Its tests lint them and build the static binary the image
// contains, which needs no container runtime; where podman is installed,
// TestImage also builds the image, checks its configuration and files and
// runs its kuiperd on the host, and, where a container can run, runs it.
package docker

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	line int
	cmd  string // upper case
	args string
}

func parseDockerfile(t *testing.T, path string) [][]instruction {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var stages [][]instruction
	var cur strings.Builder
	start := 0
	for i, l := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(l)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if cur.Len() == 0 {
			start = i + 1
		}
		if s, ok := strings.CutSuffix(trimmed, "\\"); ok {
			cur.WriteString(s + " ")
			continue
		}
		cur.WriteString(trimmed)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		cur.Reset()
		in := instruction{line: start, cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)}
		if in.cmd == "FROM" {
			stages = append(stages, nil)
		}
		if len(stages) == 0 {
			t.Fatalf("%s:%d: %s before FROM", path, in.line, in.cmd)
		}
		stages[len(stages)-1] = append(stages[len(stages)-1], in)
	}
	return stages
}

func find(stage []instruction, cmd string) []instruction {
	var out []instruction
	for _, in := range stage {
		if in.cmd == cmd {
			out = append(out, in)
		}
	}
	return out
}

// TestDockerfileLint checks both Dockerfiles: the multi-stage one that
// builds the binaries and the prebuilt one (scripts/image.sh), whose final
// stages must not drift apart.
func TestDockerfileLint(t *testing.T) {
	multi := parseDockerfile(t, "Dockerfile")
	prebuilt := parseDockerfile(t, "Dockerfile.prebuilt")
	t.Run("Dockerfile", func(t *testing.T) {
		if len(multi) < 2 {
			t.Fatalf("want a build stage and a final stage, got %d stages", len(multi))
		}
		lintStages(t, multi)
		var env []string
		for _, in := range find(multi[0], "ENV") {
			env = append(env, in.args)
		}
		if !slices.Contains(env, "CGO_ENABLED=0") {
			t.Errorf("build stage ENV %v: want CGO_ENABLED=0 (scratch has no libc)", env)
		}
		for _, p := range []string{"../../go.mod", "../../etc", "../../cmd/kuiperd", "../../cmd/kuiper"} {
			if _, err := os.Stat(p); err != nil {
				t.Errorf("the build copies %s: %v", p, err)
			}
		}
	})
	t.Run("Dockerfile.prebuilt", func(t *testing.T) {
		if len(prebuilt) != 1 {
			t.Fatalf("want one stage (nothing to pull), got %d", len(prebuilt))
		}
		lintStages(t, prebuilt)
		for _, in := range find(prebuilt[0], "COPY") {
			if strings.Contains(in.args, "--from") {
				t.Errorf("line %d: COPY --from in the prebuilt image", in.line)
			}
		}
	})
	t.Run("same final stage", func(t *testing.T) {
		a, b := withoutCopy(multi[len(multi)-1]), withoutCopy(prebuilt[len(prebuilt)-1])
		if len(a) != len(b) {
			t.Fatalf("final stages differ: %v and %v", a, b)
		}
		for i := range a {
			if a[i].cmd != b[i].cmd || a[i].args != b[i].args {
				t.Errorf("final stages differ: Dockerfile:%d %s %s, Dockerfile.prebuilt:%d %s %s",
					a[i].line, a[i].cmd, a[i].args, b[i].line, b[i].cmd, b[i].args)
			}
		}
		dest := func(st []instruction) []string {
			var out []string
			for _, in := range find(st, "COPY") {
				f := strings.Fields(in.args)
				out = append(out, f[len(f)-1])
			}
			return out
		}
		if a, b := dest(multi[len(multi)-1]), dest(prebuilt[0]); !slices.Equal(a, b) {
			t.Errorf("final stages copy to %v and %v", a, b)
		}
	})
}

// withoutCopy is a stage's instructions but COPY, whose sources differ
// between the two Dockerfiles.
func withoutCopy(st []instruction) []instruction {
	return slices.DeleteFunc(slices.Clone(st), func(in instruction) bool { return in.cmd == "COPY" })
}

func lintStages(t *testing.T, stages [][]instruction) {
	t.Helper()
	pinned := regexp.MustCompile(`^[\w./-]+(:[\w.-]+)?(@sha256:[0-9a-f]{64})?$`)
	for _, st := range stages {
		image, _, _ := strings.Cut(st[0].args, " ")
		if image != "scratch" && (!pinned.MatchString(image) || !strings.ContainsAny(image, ":@") || strings.HasSuffix(image, ":latest")) {
			t.Errorf("line %d: base image %q is not pinned to a tag or digest", st[0].line, image)
		}
		for _, in := range find(st, "ADD") {
			if strings.Contains(in.args, "://") {
				t.Errorf("line %d: ADD from a URL", in.line)
			}
		}
	}
	final := stages[len(stages)-1]
	if img := strings.Fields(final[0].args)[0]; img != "scratch" {
		t.Errorf("final stage is based on %q, want scratch (static binary, nothing else)", img)
	}
	users := find(final, "USER")
	if len(users) == 0 {
		t.Fatal("final stage has no USER: it would run as root")
	}
	if u, _, _ := strings.Cut(users[len(users)-1].args, ":"); u == "0" || u == "root" {
		t.Errorf("final stage runs as %q", users[len(users)-1].args)
	}
	hc := find(final, "HEALTHCHECK")
	if len(hc) != 1 || !strings.Contains(hc[0].args, `CMD ["/usr/local/bin/kuiperd", "-healthcheck"]`) {
		t.Errorf("final stage health check %v, want exec form of kuiperd -healthcheck (scratch has no shell)", hc)
	}
	vols := find(final, "VOLUME")
	if len(vols) != 1 || !strings.Contains(vols[0].args, `"/kuiper/etc"`) || !strings.Contains(vols[0].args, `"/kuiper/data"`) {
		t.Errorf("volumes %v, want /kuiper/etc and /kuiper/data", vols)
	}
	var env []string
	for _, in := range find(final, "ENV") {
		env = append(env, strings.Fields(in.args)...)
	}
	// The default restIp is loopback, which a published port cannot reach.
	if !slices.Contains(env, "KUIPER__BASIC__RESTIP=0.0.0.0") {
		t.Errorf("final stage ENV %v: want KUIPER__BASIC__RESTIP=0.0.0.0", env)
	}
	if ep := find(final, "ENTRYPOINT"); len(ep) != 1 || ep[0].args != `["/usr/local/bin/kuiperd"]` {
		t.Errorf("entrypoint %v", ep)
	}
}

func TestComposeFile(t *testing.T) {
	b, err := os.ReadFile("compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Services map[string]struct {
			Image string
			Build struct {
				Context    string
				Dockerfile string
			}
			Environment map[string]string
			DependsOn   []string `yaml:"depends_on"`
		}
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	k, ok := c.Services["kuiper"]
	if !ok {
		t.Fatal("no kuiper service")
	}
	if _, err := os.Stat(filepath.Join(k.Build.Context, k.Build.Dockerfile)); err != nil {
		t.Errorf("kuiper build: %v", err)
	}
	m, ok := c.Services["mosquitto"]
	if !ok || !strings.HasPrefix(m.Image, "eclipse-mosquitto:2") {
		t.Errorf("mosquitto service image %q", m.Image)
	}
	if !slices.Contains(k.DependsOn, "mosquitto") || k.Environment["MQTT_SOURCE__DEFAULT__SERVER"] != "tcp://mosquitto:1883" {
		t.Errorf("kuiper does not reach mosquitto: %+v", k)
	}
}

// TestImageBinaryIsStatic builds kuiperd as the Dockerfile does and checks
// that it needs no dynamic loader or shared library, so it runs on scratch.
func TestImageBinaryIsStatic(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "kuiperd")
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags", "-s -w", "-o", bin, "../../cmd/kuiperd")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	checkStatic(t, bin)
}

// checkStatic fails the test unless the ELF executable bin needs no
// dynamic loader or shared library.
func checkStatic(t *testing.T, bin string) {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("%s has a %v program header: not static", filepath.Base(bin), p.Type)
			return
		}
	}
	libs, err := f.ImportedLibraries()
	if err != nil || len(libs) != 0 {
		t.Errorf("%s imports %v (%v)", filepath.Base(bin), libs, err)
	}
}
