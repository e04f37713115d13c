package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/bench"
	"github.com/rekuiper/rekuiper/internal/auth"
)

// Environment of a flood helper process (TestFloodHelper).
const (
	floodAddrEnv  = "REKUIPER_FLOOD_ADDR"
	floodKindEnv  = "REKUIPER_FLOOD_KIND" // "taps" or "idle"
	floodCountEnv = "REKUIPER_FLOOD_COUNT"
	floodTokenEnv = "REKUIPER_FLOOD_TOKEN"
)

// BenchmarkFlood holds 25,000 taps, then 25,000 idle connections, open
// against a kuiperd with authentication on and the shipped limits, from
// two helper processes (one process has too few descriptors for all of
// them), and measures while they are held: the slowest /ping and
// authenticated GET /rules of a probe every 50 ms, sent from the
// flood's address (127.0.0.1) and from another (127.0.0.2, an operator
// elsewhere), and the daemon's largest resident memory. docs/limits.md
// has the figures.
//
//	go test -run '^$' -bench BenchmarkFlood -benchtime 1x ./cmd/kuiperd
func BenchmarkFlood(b *testing.B) {
	bin := buildDaemon(b)
	base := newBase(b)
	key := writeKey(b, base, "ops.pub")
	token, err := auth.SignWithKey(key, auth.SignOptions{Issuer: "ops.pub", Subject: "ops", Expires: time.Now().Add(time.Hour)})
	if err != nil {
		b.Fatal(err)
	}
	cmd := command(bin, base, []string{"KUIPER__BASIC__AUTHENTICATION=true"})
	cmd.Stderr = os.Stderr
	url, err := launch(b, cmd, nil)
	if err != nil {
		b.Fatal(err)
	}
	addr := strings.TrimPrefix(url, "http://")
	f := &flood{addr: addr, token: token}
	for _, req := range [][2]string{
		{"/streams", `{"sql":"CREATE STREAM flood () WITH (TYPE=\"memory\", DATASOURCE=\"flood\")"}`},
		{"/rules", `{"id":"r1","sql":"SELECT * FROM flood","actions":[{"nop":{}}]}`},
	} {
		if status, body := f.do("POST", req[0], req[1], true); status != 201 {
			b.Fatalf("POST %s: %d %s", req[0], status, body)
		}
	}
	for b.Loop() {
		for _, kind := range []string{"taps", "idle"} {
			r := floodOnce(b, f, cmd.Process.Pid, kind, 25_000)
			b.ReportMetric(r.ping.Seconds()*1000, kind+"_ping_max_ms")
			b.ReportMetric(r.rules.Seconds()*1000, kind+"_rules_max_ms")
			b.ReportMetric(r.pingElsewhere.Seconds()*1000, kind+"_ping_elsewhere_max_ms")
			b.ReportMetric(r.rulesElsewhere.Seconds()*1000, kind+"_rules_elsewhere_max_ms")
			b.ReportMetric(float64(r.rss)/(1<<20), kind+"_rss_max_MiB")
			b.ReportMetric(float64(r.held), kind+"_held")
			b.ReportMetric(float64(r.failed), kind+"_probe_failures")
		}
	}
}

type floodResult struct {
	ping, rules                   time.Duration // slowest answers from the flood's address
	pingElsewhere, rulesElsewhere time.Duration // and from another
	rss                           int64         // largest resident memory, bytes
	held                          int           // connections the helpers held open
	failed                        int           // probes without a 200
}

// floodOnce runs two helpers of n/2 connections each, probes the daemon
// while they open them and for 5 s while they hold them, and ends them.
func floodOnce(b *testing.B, f *flood, pid int, kind string, n int) floodResult {
	var res floodResult
	var helpers []*exec.Cmd
	var ready sync.WaitGroup
	var mu sync.Mutex
	for range 2 {
		h := exec.Command(os.Args[0], "-test.run", "^TestFloodHelper$")
		h.Env = append(os.Environ(), floodAddrEnv+"="+f.addr, floodKindEnv+"="+kind,
			floodCountEnv+"="+strconv.Itoa(n/2), floodTokenEnv+"="+f.token)
		stdin, _ := h.StdinPipe()
		out, _ := h.StdoutPipe()
		h.Stderr = os.Stderr
		if err := h.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { stdin.Close(); h.Wait() }) //nolint:errcheck // ended by closing stdin
		helpers = append(helpers, h)
		ready.Add(1)
		go func() {
			defer ready.Done()
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				if held, ok := strings.CutPrefix(sc.Text(), "holding "); ok {
					k, _ := strconv.Atoi(held)
					mu.Lock()
					res.held += k
					mu.Unlock()
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() {
		ready.Wait()
		time.Sleep(5 * time.Second) // the measuring window: 5 s of the flood held
		close(done)
	}()
	probe := time.NewTicker(50 * time.Millisecond)
	defer probe.Stop()
	for {
		select {
		case <-done:
			for _, h := range helpers {
				h.Process.Signal(os.Interrupt) //nolint:errcheck // it may be gone
			}
			return res
		case <-probe.C:
		}
		elsewhere := &flood{addr: f.addr, token: f.token, from: "127.0.0.2"}
		for _, p := range []struct {
			f      *flood
			path   string
			authed bool
			max    *time.Duration
		}{
			{f, "/ping", false, &res.ping}, {f, "/rules", true, &res.rules},
			{elsewhere, "/ping", false, &res.pingElsewhere}, {elsewhere, "/rules", true, &res.rulesElsewhere},
		} {
			start := time.Now()
			if status, _ := p.f.do("GET", p.path, "", p.authed); status != 200 {
				res.failed++
			}
			*p.max = max(*p.max, time.Since(start))
		}
		if m, err := bench.ReadMemory(pid); err == nil && m.RSS > res.rss {
			res.rss = m.RSS
		}
	}
}

// TestFloodHelper is a flood helper process of BenchmarkFlood; run
// without its environment it does nothing. It opens the connections,
// prints "holding N", and holds them until its standard input closes.
func TestFloodHelper(t *testing.T) {
	addr := os.Getenv(floodAddrEnv)
	if addr == "" {
		return
	}
	n, _ := strconv.Atoi(os.Getenv(floodCountEnv))
	kind, token := os.Getenv(floodKindEnv), os.Getenv(floodTokenEnv)
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
		sem   = make(chan struct{}, 256)
	)
	for range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			c, err := net.DialTimeout("tcp", addr, 10*time.Second)
			if err != nil {
				return
			}
			if kind == "taps" {
				fmt.Fprintf(c, "GET /rules/r1/tap HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", addr, token)
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		})
	}
	wg.Wait()
	fmt.Printf("holding %d\n", len(conns))
	bufio.NewReader(os.Stdin).ReadString('\n') //nolint:errcheck // any end of input ends the hold
	for c := range slices.Values(conns) {
		c.Close()
	}
}
