package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/client"
	"github.com/rekuiper/rekuiper/internal/procs"
)

// daemon is a kuiperd child process.
type daemon struct {
	cmd *exec.Cmd
	c   *client.Client
}

// buildDaemon builds this kuiperd, with the extra go build flags (-tags
// x, -ldflags y), into a temporary folder and returns the binary's path.
func buildDaemon(tb testing.TB, flags ...string) string {
	tb.Helper()
	bin := filepath.Join(tb.TempDir(), "kuiperd")
	args := append(append([]string{"build"}, flags...), "-o", bin, ".")
	out, err := exec.Command("go", args...).CombinedOutput()
	if err != nil {
		tb.Fatalf("build kuiperd: %v\n%s", err, out)
	}
	return bin
}

// folderArgs are kuiperd's flags for its folders under base.
func folderArgs(base string) []string {
	return []string{"-etc", filepath.Join(base, "etc"), "-data", filepath.Join(base, "data"), "-log", filepath.Join(base, "log")}
}

// launch starts cmd, a kuiperd, and waits for its banner, copying its
// standard output to out (nil: dropped). It returns the REST URL, or why
// the daemon did not serve. The process is killed and reaped when the test
// ends, unless it was reaped before.
func launch(tb testing.TB, cmd *exec.Cmd, out io.Writer) (string, error) {
	tb.Helper()
	tb.Cleanup(func() { reap(cmd) })
	return procs.StartServing(cmd, out, 30*time.Second)
}

// reap kills cmd and reaps it, unless it was not started or was reaped
// already.
func reap(cmd *exec.Cmd) {
	if cmd.Process != nil && cmd.ProcessState == nil {
		cmd.Process.Kill() //nolint:errcheck // may have exited
		cmd.Wait()         //nolint:errcheck // reaped
	}
}

// stop kills d and reaps it, unless it was reaped already.
func (d *daemon) stop() { reap(d.cmd) }

// kill9 kills d with SIGKILL, reaps it and returns when the signal was
// sent.
func (d *daemon) kill9(t *testing.T) time.Time {
	t.Helper()
	if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	d.cmd.Wait() //nolint:errcheck // killed
	return killed
}

// startDaemon runs bin on an ephemeral loopback port with its own folders
// and the extra environment env, and waits for its banner.
func startDaemon(tb testing.TB, bin, base string, env ...string) *daemon {
	tb.Helper()
	return startUnder(tb, nil, bin, base, env...)
}

// startUnder is startDaemon with bin run by the command wrap ("taskset",
// "-c", "0"; nil: none).
func startUnder(tb testing.TB, wrap []string, bin, base string, env ...string) *daemon {
	tb.Helper()
	args := append(append(slices.Clone(wrap), bin), folderArgs(base)...)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(append(os.Environ(), "KUIPER__BASIC__RESTPORT=0", "KUIPER__BASIC__RESTIP=127.0.0.1", "KUIPER__BASIC__CONSOLELOG=false"), env...)
	cmd.Stderr = os.Stderr
	url, err := launch(tb, cmd, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return &daemon{cmd: cmd, c: client.New(url, nil)}
}

// outcome of a mutation: acknowledged (2xx), refused (non-2xx answer) or
// unknown (the connection broke, as kill -9 does).
type outcome int

const (
	acked outcome = iota
	refused
	unknown
)

func outcomeOf(err error) outcome {
	var ae *client.APIError
	switch {
	case err == nil:
		return acked
	case errors.As(err, &ae):
		return refused
	default:
		return unknown
	}
}

// model is what the catalog must hold: for every name the set of states it
// may be in ("absent", "present" for streams; "absent", "running",
// "stopped" for rules).
type model struct {
	mu      sync.Mutex
	streams map[string]map[string]bool
	rules   map[string]map[string]bool
}

func set(states ...string) map[string]bool {
	m := map[string]bool{}
	for _, s := range states {
		m[s] = true
	}
	return m
}

// record applies a mutation's outcome: acked → after, refused → before,
// unknown → either.
func (m *model) record(kind map[string]map[string]bool, name string, before map[string]bool, after string, o outcome) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch o {
	case acked:
		kind[name] = set(after)
	case refused:
		kind[name] = before
	default:
		both := set(after)
		for s := range before {
			both[s] = true
		}
		kind[name] = both
	}
}

func (m *model) stateOf(kind map[string]map[string]bool, name string) map[string]bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := kind[name]; ok {
		return s
	}
	return set("absent")
}

// mutate issues REST mutations until stop is closed.
func mutate(d *daemon, m *model, cycle, worker int, stop <-chan struct{}) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(uint64(cycle), uint64(worker)))
	for k := 0; ; k++ {
		select {
		case <-stop:
			return
		default:
		}
		name := fmt.Sprintf("s_%d_%d_%d", cycle, worker, k)
		before := m.stateOf(m.streams, name)
		_, err := d.c.CreateStream(ctx, client.Stream, fmt.Sprintf(`CREATE STREAM %s (a bigint) WITH (TYPE="memory", DATASOURCE="t/%s")`, name, name))
		m.record(m.streams, name, before, "present", outcomeOf(err))
		if rng.IntN(3) == 0 {
			before = m.stateOf(m.streams, name)
			_, err = d.c.DropStream(ctx, client.Stream, name, false)
			m.record(m.streams, name, before, "absent", outcomeOf(err))
		}

		id := fmt.Sprintf("r_%d_%d_%d", cycle, worker, k)
		triggered := rng.IntN(2) == 0
		wanted := map[bool]string{true: "running", false: "stopped"}
		before = m.stateOf(m.rules, id)
		_, err = d.c.CreateRule(ctx, []byte(fmt.Sprintf(`{"id":%q,"sql":"SELECT a FROM base WHERE a > %d","actions":[{"log":{}}],"triggered":%v}`, id, k, triggered)))
		m.record(m.rules, id, before, wanted[triggered], outcomeOf(err))
		for range rng.IntN(3) {
			action, after := "stop", "stopped"
			if rng.IntN(2) == 0 {
				action, after = "start", "running"
			}
			before = m.stateOf(m.rules, id)
			if before["absent"] && len(before) == 1 {
				break
			}
			_, err = d.c.RuleAction(ctx, id, action)
			m.record(m.rules, id, before, after, outcomeOf(err))
		}
		// A mutation the daemon must refuse leaves no trace.
		bad := fmt.Sprintf("bad_%d_%d_%d", cycle, worker, k)
		_, err = d.c.CreateRule(ctx, []byte(fmt.Sprintf(`{"id":%q,"sql":"SELECT a FROM base","actions":[{"log":{}}],"bogus":1}`, bad)))
		if outcomeOf(err) == acked {
			panic("a rule with an unknown field was accepted")
		}
		m.record(m.rules, bad, set("absent"), "absent", refused)
	}
}

// verify checks every name against the model, then pins the model to what
// the daemon holds so the next cycle starts from certain states.
func verify(t *testing.T, d *daemon, m *model) {
	t.Helper()
	ctx := context.Background()
	streams, err := d.c.ListStreams(ctx, client.Stream)
	if err != nil {
		t.Fatal(err)
	}
	have := set(streams...)
	for name, states := range m.streams {
		got := "absent"
		if have[name] {
			got = "present"
			if _, err := d.c.DescribeStream(ctx, client.Stream, name); err != nil {
				t.Fatalf("stream %s listed but not readable: %v", name, err)
			}
		}
		if !states[got] {
			t.Fatalf("stream %s is %s, want one of %v", name, got, states)
		}
		m.streams[name] = set(got)
	}
	rules, err := d.c.ListRules(ctx)
	if err != nil {
		t.Fatal(err)
	}
	status := map[string]string{}
	for _, r := range rules {
		status[r.ID] = r.Status
	}
	for id, states := range m.rules {
		got := "absent"
		if st, ok := status[id]; ok {
			raw, err := d.c.GetRule(ctx, id)
			if err != nil {
				t.Fatalf("rule %s listed but not readable: %v", id, err)
			}
			var def struct {
				SQL       string `json:"sql"`
				Triggered bool   `json:"triggered"`
			}
			if err := json.Unmarshal(raw, &def); err != nil || !strings.HasPrefix(def.SQL, "SELECT a FROM base WHERE a > ") {
				t.Fatalf("rule %s definition damaged: %s", id, raw)
			}
			got = "stopped"
			if def.Triggered {
				got = "running"
			}
			// Without an engine a wanted-running rule is stopped by error;
			// a wanted-stopped rule must be plainly stopped.
			if (got == "stopped") != (st == "stopped") {
				t.Fatalf("rule %s wanted %s has status %q", id, got, st)
			}
		}
		if !states[got] {
			t.Fatalf("rule %s is %s, want one of %v", id, got, states)
		}
		m.rules[id] = set(got)
	}
}

func TestKillRestartKeepsCatalog(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs kuiperd")
	}
	bin := buildDaemon(t)
	base := t.TempDir()
	m := &model{streams: map[string]map[string]bool{}, rules: map[string]map[string]bool{}}
	const cycles = 20
	for cycle := range cycles {
		d := startDaemon(t, bin, base)
		if cycle == 0 {
			if _, err := d.c.CreateStream(context.Background(), client.Stream, `CREATE STREAM base (a bigint) WITH (TYPE="memory", DATASOURCE="base")`); err != nil {
				t.Fatal(err)
			}
			m.streams["base"] = set("present")
		}
		verify(t, d, m)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				mutate(d, m, cycle, w, stop)
			}()
		}
		// Pacing, not a wait: the kill lands at a random moment of the
		// mutations.
		time.Sleep(time.Duration(40+rand.IntN(120)) * time.Millisecond)
		d.kill9(t)
		close(stop)
		wg.Wait()
	}
	d := startDaemon(t, bin, base)
	verify(t, d, m)
	acks := 0
	for _, s := range m.rules {
		if !s["absent"] {
			acks++
		}
	}
	t.Logf("%d rules and %d streams tracked, %d rules present at the end", len(m.rules), len(m.streams), acks)
	if acks < cycles {
		t.Fatalf("only %d rules survived %d cycles; the test did too little", acks, cycles)
	}
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Wait(); err != nil {
		t.Fatalf("graceful stop: %v", err)
	}
	st, err := catalog.Open(context.Background(), filepath.Join(base, "data", catalog.DefaultFileName), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.IntegrityCheck(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestUnreachableDaemon(t *testing.T) {
	c := client.New("http://127.0.0.1:1", nil)
	err := c.Ping(context.Background())
	if !errors.Is(err, client.ErrUnreachable) || err.Error() != "cannot reach kuiperd at http://127.0.0.1:1: connection refused" {
		t.Fatalf("got %v", err)
	}
}
