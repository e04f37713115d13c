package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/connector/sqldb/pgtest"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// testLeaseTime is cluster.leaseTime in these tests: short, to keep them
// short; the bounds asserted are derived from it.
const testLeaseTime = 3 * time.Second

// node is a kuiperd of a cluster test with its node id.
type node struct {
	*daemon
	id string
}

func startNode(t *testing.T, bin, catalogURL string) *node {
	t.Helper()
	d := startDaemon(t, bin, t.TempDir(), "KUIPER__BASIC__CATALOG="+catalogURL, "KUIPER__CLUSTER__LEASETIME="+testLeaseTime.String())
	var info map[string]any
	if err := d.c.JSON(context.Background(), "GET", "/", nil, &info); err != nil {
		t.Fatal(err)
	}
	id, _ := info["node"].(string)
	if id == "" {
		t.Fatalf("GET / names no node: %v", info)
	}
	return &node{daemon: d, id: id}
}

// runsHere reports whether n itself runs rule id: its status names n and
// says running, with the source metrics only the running node has.
func (n *node) runsHere(id string) bool {
	var st map[string]any
	if err := n.c.JSON(context.Background(), "GET", "/rules/"+id+"/status", nil, &st); err != nil {
		return false
	}
	if st["node"] != n.id || st["status"] != "running" {
		return false
	}
	for k := range st {
		if strings.HasPrefix(k, "source_") {
			return true
		}
	}
	return false
}

// placement maps each rule to the nodes that run it.
func placement(nodes []*node, rules []string) map[string][]string {
	out := map[string][]string{}
	for _, r := range rules {
		for _, n := range nodes {
			if n.runsHere(r) {
				out[r] = append(out[r], n.id)
			}
		}
	}
	return out
}

// settled waits until every rule runs on exactly one of nodes and no node
// runs more than share, the same placement for at least 100ms (two polls
// or more), and returns that placement.
func settled(t *testing.T, nodes []*node, rules []string, share int, within time.Duration) map[string]string {
	t.Helper()
	var last map[string][]string
	var since time.Time // when last was first seen
	if !testwait.Poll(within, func() bool {
		now := placement(nodes, rules)
		if fmt.Sprint(now) != fmt.Sprint(last) {
			last, since = now, time.Now()
			return false
		}
		if time.Since(since) < 100*time.Millisecond || len(last) != len(rules) {
			return false
		}
		count := map[string]int{}
		for _, ns := range last {
			if len(ns) != 1 {
				return false
			}
			count[ns[0]]++
		}
		for _, c := range count {
			if c > share {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("rules not placed one node each (at most %d per node) within %s: %v", share, within, last)
	}
	out := map[string]string{}
	for r, ns := range last {
		out[r] = ns[0]
	}
	return out
}

func setupRules(t *testing.T, via []*node, n int) []string {
	t.Helper()
	ctx := context.Background()
	if _, err := via[0].c.CreateStream(ctx, "stream", `CREATE STREAM placed () WITH (TYPE="memory", DATASOURCE="placed")`); err != nil {
		t.Fatal(err)
	}
	for _, n := range via {
		testwait.Within(t, 10*time.Second, "the stream reaches "+n.id, func() bool {
			_, err := n.c.DescribeStream(ctx, "stream", "placed")
			return err == nil
		})
	}
	var rules []string
	for i := range n {
		id := fmt.Sprintf("r%d", i)
		body := fmt.Sprintf(`{"id":%q,"sql":"SELECT * FROM placed","actions":[{"nop":{}}]}`, id)
		// Through each node in turn: REST on any node manages any rule.
		if _, err := via[i%len(via)].c.CreateRule(ctx, []byte(body)); err != nil {
			t.Fatalf("create %s: %v", id, err)
		}
		rules = append(rules, id)
	}
	return rules
}

// TestClusterPlacement: rules created through two daemons sharing a
// PostgreSQL catalog run on exactly one node each, spread over both; a
// killed owner's rules resume on the other node within the lease time
// plus 2s; a node that joins takes its share.
func TestClusterPlacement(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs kuiperd")
	}
	db := pgtest.Start(t).NewDatabase(t)
	bin := buildDaemon(t)
	a, b := startNode(t, bin, db), startNode(t, bin, db)
	rules := setupRules(t, []*node{a, b}, 4)
	placed := settled(t, []*node{a, b}, rules, 2, 30*time.Second)
	t.Logf("placed: %v", placed)

	// Status asked on the node that does not run a rule names its owner.
	var st map[string]any
	other := map[string]*node{a.id: b, b.id: a}[placed["r0"]]
	if err := other.c.JSON(context.Background(), "GET", "/rules/r0/status", nil, &st); err != nil {
		t.Fatal(err)
	}
	testwait.Within(t, 10*time.Second, "status of r0 on the other node names its owner", func() bool {
		st = nil
		other.c.JSON(context.Background(), "GET", "/rules/r0/status", nil, &st) //nolint:errcheck // polled
		return st["node"] == placed["r0"] && st["status"] == "running"
	})

	// Stop and start through the node that does not run the rule: the
	// holder acts.
	byID := map[string]*node{a.id: a, b.id: b}
	owner := byID[placed["r1"]]
	notOwner := map[string]*node{a.id: b, b.id: a}[owner.id]
	if _, err := notOwner.c.RuleAction(context.Background(), "r1", "stop"); err != nil {
		t.Fatal(err)
	}
	testwait.Within(t, 10*time.Second, "r1 stopped by its owner", func() bool {
		st = nil
		owner.c.JSON(context.Background(), "GET", "/rules/r1/status", nil, &st) //nolint:errcheck // polled
		return st["status"] == "stopped" && !a.runsHere("r1") && !b.runsHere("r1")
	})
	if _, err := notOwner.c.RuleAction(context.Background(), "r1", "start"); err != nil {
		t.Fatal(err)
	}
	placed = settled(t, []*node{a, b}, rules, 2, 30*time.Second)

	victim, survivor := a, b
	if placed["r0"] == b.id {
		victim, survivor = b, a
	}
	killed := victim.kill9(t)
	testwait.Within(t, 30*time.Second, "r0 running on the survivor", func() bool { return survivor.runsHere("r0") })
	failover := time.Since(killed)
	t.Logf("failover of r0 after kill -9 of its owner: %s (lease time %s)", failover.Round(time.Millisecond), testLeaseTime)
	settled(t, []*node{survivor}, rules, 4, 30*time.Second)

	joiner := startNode(t, bin, db)
	placed = settled(t, []*node{survivor, joiner}, rules, 2, 30*time.Second)
	t.Logf("after %s joined: %v", joiner.id, placed)
}

// TestClusterFencedNode: a node cut off from PostgreSQL stops its rules
// before its leases expire; the other node takes them over after that.
// (How long each step takes is logged, not asserted: failover times are
// measured by the qualification harness's cluster scenario.)
func TestClusterFencedNode(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs kuiperd")
	}
	db := pgtest.Start(t).NewDatabase(t)
	u, err := url.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	px := newProxy(t, u.Host)
	viaProxy := *u
	viaProxy.Host = px.addr
	bin := buildDaemon(t)
	a, b := startNode(t, bin, viaProxy.String()), startNode(t, bin, db)
	rules := setupRules(t, []*node{a, b}, 2)
	placed := settled(t, []*node{a, b}, rules, 1, 30*time.Second)
	var onA string
	for r, n := range placed {
		if n == a.id {
			onA = r
		}
	}

	px.cut()
	cut := time.Now()
	testwait.Within(t, 30*time.Second, "a stops its rule once cut off", func() bool { return !a.runsHere(onA) })
	stopped := time.Since(cut)
	testwait.Within(t, 30*time.Second, "b takes a's rule over", func() bool { return b.runsHere(onA) })
	taken := time.Since(cut)
	t.Logf("cut off from PostgreSQL: a stopped %s at %s, b took it over at %s (lease time %s)", onA, stopped.Round(time.Millisecond), taken.Round(time.Millisecond), testLeaseTime)
	// Same machine, same clock: a's stop precedes b's start.
	var stA, stB map[string]any
	if err := a.c.JSON(context.Background(), "GET", "/rules/"+onA+"/status", nil, &stA); err != nil {
		t.Fatal(err)
	}
	if err := b.c.JSON(context.Background(), "GET", "/rules/"+onA+"/status", nil, &stB); err != nil {
		t.Fatal(err)
	}
	stop, _ := stA["lastStopTimestamp"].(float64)
	start, _ := stB["lastStartTimestamp"].(float64)
	if stop == 0 || start == 0 || stop > start {
		t.Fatalf("a stopped %s at %v, b started it at %v: the rule ran on both", onA, stop, start)
	}
	settled(t, []*node{b}, rules, 2, 30*time.Second)
}

// proxy forwards TCP connections to a PostgreSQL server until cut, which
// closes them all and refuses new ones: the daemon behind it is cut off.
type proxy struct {
	addr string
	ln   net.Listener
	mu   sync.Mutex
	open []net.Conn
	done bool
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{addr: ln.Addr().String(), ln: ln}
	t.Cleanup(p.cut)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			if !p.track(c, s) {
				return
			}
			go func() { io.Copy(s, c); s.Close() }() //nolint:errcheck // ends with either side
			go func() { io.Copy(c, s); c.Close() }() //nolint:errcheck // ends with either side
		}
	}()
	return p
}

func (p *proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	p.open = append(p.open, cs...)
	return true
}

func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done = true
	p.ln.Close()
	for _, c := range slices.Clip(p.open) {
		c.Close()
	}
	p.open = nil
}
