package main

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/auth"
	"github.com/rekuiper/rekuiper/internal/certs/certstest"
	"github.com/rekuiper/rekuiper/internal/procs"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// floodFiles is the open-files limit the flooded daemon runs under: low
// enough that each flood needs hundreds of connections, not tens of
// thousands, to pass it.
const floodFiles = 400

// TestFloodsLeaveTheAPIUp runs kuiperd with authentication on, under an
// open-files limit of floodFiles, and holds open more taps, idle
// connections and unauthenticated requests than its descriptors could
// carry. Throughout, /ping and an authenticated GET /rules answer; every
// refusal names its limit; when the flood ends the connections are given
// back.
func TestFloodsLeaveTheAPIUp(t *testing.T) {
	prlimit, bin := floodTools(t)
	base := newBase(t)
	key := writeKey(t, base, "ops.pub")
	token := mustSign(t, key, auth.SignOptions{Issuer: "ops.pub", Subject: "ops", Expires: time.Now().Add(time.Hour)})
	url := startFlooded(t, prlimit, bin, base, "KUIPER__BASIC__AUTHENTICATION=true", "KUIPER__BASIC__PROMETHEUS=true", "KUIPER__BASIC__PROMETHEUSPORT=0",
		"KUIPER__LIMITS__MAXCONNECTIONS=350", "KUIPER__LIMITS__FILEDESCRIPTORRESERVE=100", "KUIPER__LIMITS__UNAUTHENTICATEDBURST=20")
	addr := strings.TrimPrefix(url, "http://")
	f := &flood{t: t, addr: addr, token: token}
	// The budget is limits.maxConnections (350) cut to the 400
	// descriptors less the reserve of 100: the daemon read its limit.
	if _, body := f.do("GET", "/metrics", "", true); !strings.Contains(body, "\nrekuiper_connections_max 300\n") {
		t.Fatalf("want rekuiper_connections_max 300 in /metrics:\n%s", body)
	}
	f.must("POST", "/streams", `{"sql":"CREATE STREAM flood () WITH (TYPE=\"memory\", DATASOURCE=\"flood\")"}`, 201)
	f.must("POST", "/rules", `{"id":"r1","sql":"SELECT * FROM flood","actions":[{"nop":{}}]}`, 201)

	t.Run("taps", func(t *testing.T) {
		const n = 600
		taps, refusals := f.openTaps(n)
		defer closeAll(taps)
		t.Logf("%d of %d taps streamed; refusals: %v", len(taps), n, refusals)
		if len(taps) == 0 || len(taps) > 32 {
			t.Fatalf("%d taps open, want between 1 and 32 (limits.maxEventStreamsPerRule)", len(taps))
		}
		for status, msg := range refusals {
			if status != 429 && status != 503 || !strings.Contains(msg, "limits.") {
				t.Fatalf("tap refused with %d %q: want 429 or 503 naming the limit", status, msg)
			}
		}
		f.apiAnswers(t)
	})
	t.Run("idle connections", func(t *testing.T) {
		defer closeAll(holdIdle(t, addr))
		f.apiAnswers(t)
	})
	t.Run("unauthenticated requests", func(t *testing.T) {
		limited := 0
		for range 100 {
			status, body := f.do("GET", "/rules", "", false)
			switch {
			case status == 429 && strings.Contains(body, "limits.unauthenticatedRate"):
				limited++
			case status != 401 && status != 429:
				t.Fatalf("request without a token: %d %s", status, body)
			}
		}
		if limited == 0 {
			t.Fatal("100 requests without a token in a row, none rate-limited")
		}
		t.Logf("%d of 100 requests without a token rate-limited", limited)
		f.apiAnswers(t) // a valid token always gets in
	})
	t.Run("recovers", func(t *testing.T) {
		open := regexp.MustCompile(`(?m)^rekuiper_connections_open (\d+)$`)
		testwait.Until(t, "the flood's connections are given back", func() bool {
			_, body := f.do("GET", "/metrics", "", true)
			m := open.FindStringSubmatch(body)
			if m == nil {
				return false
			}
			n, _ := strconv.Atoi(m[1])
			return n <= 2
		})
		f.apiAnswers(t)
	})
}

// TestTLSFloodLeavesThePingUp holds more idle connections to the REST
// API's TLS port than the daemon has descriptors, none of them starting
// its handshake, and checks that /ping answers over TLS throughout.
func TestTLSFloodLeavesThePingUp(t *testing.T) {
	prlimit, bin := floodTools(t)
	pair := certstest.Write(t, t.TempDir(), "rest", "flood")
	url := startFlooded(t, prlimit, bin, newBase(t), "KUIPER__LIMITS__FILEDESCRIPTORRESERVE=100",
		"KUIPER__BASIC__RESTTLS__CERTFILE="+pair.Certfile, "KUIPER__BASIC__RESTTLS__KEYFILE="+pair.Keyfile)
	addr := strings.TrimPrefix(url, "https://")
	f := &flood{t: t, addr: addr, tls: &tls.Config{RootCAs: pair.Pool}}
	conns := holdIdle(t, addr)
	defer closeAll(conns)
	for i := range 5 {
		if status, body := f.do("GET", "/ping", "", false); status != 200 {
			t.Fatalf("ping %d over TLS during the flood: %d %s", i, status, body)
		}
	}
}

// floodTools skips in -short mode, else returns the prlimit command
// (util-linux) and a built kuiperd.
func floodTools(t *testing.T) (prlimit, bin string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs kuiperd")
	}
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Fatalf("prlimit (util-linux) is needed to lower the daemon's open-files limit: %v", err)
	}
	return prlimit, buildDaemon(t)
}

// startFlooded runs bin over base under an open-files limit of
// floodFiles (with prlimit) and returns its REST URL.
func startFlooded(t *testing.T, prlimit, bin, base string, env ...string) string {
	t.Helper()
	cmd := exec.Command(prlimit, append([]string{fmt.Sprintf("--nofile=%d:%d", floodFiles, floodFiles), bin}, folderArgs(base)...)...)
	cmd.Env = daemonEnv(env...)
	var errOut procs.SyncBuffer
	cmd.Stderr = &errOut
	out := &procs.SyncBuffer{}
	url, err := launch(t, cmd, out)
	if err != nil {
		t.Fatalf("%v:\n%s%s", err, out.String(), errOut.String())
	}
	return url
}

// holdIdle opens three times floodFiles connections to addr and sends
// nothing on them; it fails the test when fewer than floodFiles opened.
func holdIdle(t *testing.T, addr string) []net.Conn {
	t.Helper()
	var conns []net.Conn
	for range 3 * floodFiles {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			continue // the backlog is full: the flood is as big as it gets
		}
		conns = append(conns, c)
	}
	t.Logf("%d idle connections opened", len(conns))
	if len(conns) < floodFiles {
		closeAll(conns)
		t.Fatalf("only %d connections opened, want more than the daemon's %d descriptors", len(conns), floodFiles)
	}
	return conns
}

// flood is a client of the flooded daemon.
type flood struct {
	t     *testing.T
	addr  string
	token string
	// from is the local IP requests are sent from (empty: any).
	from string
	// tls, when set, talks HTTPS with it.
	tls *tls.Config
}

// do sends one request on a connection of its own (with the token when
// authed) and returns the status and body; status 0 when the connection
// failed.
func (f *flood) do(method, path, body string, authed bool) (int, string) {
	scheme := "http://"
	if f.tls != nil {
		scheme = "https://"
	}
	req, _ := http.NewRequest(method, scheme+f.addr+path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if authed {
		req.Header.Set("Authorization", "Bearer "+f.token)
	}
	tr := &http.Transport{DisableKeepAlives: true, TLSClientConfig: f.tls}
	if f.from != "" {
		tr.DialContext = (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(f.from)}}).DialContext
	}
	hc := &http.Client{Transport: tr, Timeout: 20 * time.Second}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (f *flood) must(method, path, body string, want int) {
	f.t.Helper()
	if status, got := f.do(method, path, body, true); status != want {
		f.t.Fatalf("%s %s: %d %s, want %d", method, path, status, got, want)
	}
}

// apiAnswers checks, a few times over, that /ping and an authenticated
// GET /rules answer while the flood is held open.
func (f *flood) apiAnswers(t *testing.T) {
	t.Helper()
	for i := range 5 {
		if status, body := f.do("GET", "/ping", "", false); status != 200 {
			t.Fatalf("ping %d during the flood: %d %s", i, status, body)
		}
		if status, body := f.do("GET", "/rules", "", true); status != 200 || !strings.Contains(body, `"r1"`) {
			t.Fatalf("GET /rules %d during the flood: %d %s", i, status, body)
		}
	}
}

// openTaps asks for n taps of r1 at once and returns the connections of
// those that streamed, and one refusal message per status.
func (f *flood) openTaps(n int) ([]net.Conn, map[int]string) {
	var (
		mu       sync.Mutex
		open     []net.Conn
		refusals = map[int]string{}
		wg       sync.WaitGroup
	)
	for range n {
		wg.Go(func() {
			c, err := net.Dial("tcp", f.addr)
			if err != nil {
				return
			}
			c.SetDeadline(time.Now().Add(20 * time.Second))
			fmt.Fprintf(c, "GET /rules/r1/tap HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", f.addr, f.token)
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				c.Close() // closed by the daemon to make room: a refusal without words
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if resp.StatusCode == 200 {
				c.SetDeadline(time.Time{})
				open = append(open, c)
				return
			}
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			refusals[resp.StatusCode] = string(b)
			c.Close()
		})
	}
	wg.Wait()
	return open, refusals
}

func closeAll(conns []net.Conn) {
	for _, c := range conns {
		c.Close()
	}
}
