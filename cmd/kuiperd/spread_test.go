package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"

	"github.com/rekuiper/rekuiper/internal/connector/mqtt/mqtttest"
	"github.com/rekuiper/rekuiper/internal/connector/sqldb/pgtest"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// spreadRule is the rule of TestClusterSpreadRule: stateless, over a
// shared subscription; every record with v >= 0 is written to "out".
const spreadRule = "sp"

// filtered tells the records the rule's WHERE drops.
func filtered(seq int64) bool { return seq%4 == 0 }

// TestClusterSpreadRule: a stateless rule over an MQTT shared subscription
// runs as one copy on every node of a three-node cluster; every node
// processes a share, and together they deliver every record once at qos
// 1. After kill -9 of a node, every record published once the broker has
// dropped the dead node's connections is delivered by the other two (the
// records in flight to the dead node at the kill are counted, not
// asserted: mosquitto hands them to no other member). A node that joins
// gets its copy and a share. POST /rules/{id}/restart, on one node,
// restarts the copies on every node.
func TestClusterSpreadRule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs kuiperd")
	}
	br := mqtttest.StartMosquitto(t, mqtttest.PacketLog())
	db := pgtest.Start(t).NewDatabase(t)
	bin := buildDaemon(t)
	nodes := []*node{startNode(t, bin, db), startNode(t, bin, db), startNode(t, bin, db)}
	out := collect(t, br.URL("plain"), "out")
	setupSpreadRule(t, nodes[0], br.URL("plain"))
	// Stateful (lag), the rule runs whole, in the group with a persistent
	// session; made stateless it runs on every node, and that session is
	// ended, or the broker would go on queueing a share for it.
	session := wholeSession(t, nodes, br)
	testwait.Within(t, 30*time.Second, "stream s known to node "+nodes[1].id, func() bool {
		_, err := nodes[1].c.DescribeStream(context.Background(), "stream", "s")
		return err == nil
	})
	putSpreadRule(t, nodes[1], br.URL("plain"), "SELECT seq FROM s WHERE v >= 0")
	waitCopies(t, nodes[1], nodes)
	testwait.Within(t, 30*time.Second, "the whole rule's session "+session+" ended", func() bool {
		return strings.Contains(br.Log(), " as "+session+" (p2, c1") && dropped(br.Log(), []string{session})
	})

	pub := startPublisher(t, br.URL("plain"), "in")
	pub.allow(600)
	out.waitAll(t, 0, 600)
	if d := out.duplicates(0, 600); d != 0 {
		t.Fatalf("%d records delivered twice before any kill", d)
	}
	for _, n := range nodes {
		in := localRecordsIn(n)
		t.Logf("node %s processed %d of the first 600 records", n.id, in)
		if in == 0 {
			t.Errorf("node %s processed none of the first 600 records", n.id)
		}
	}

	// kill -9 of a node while publishing continues.
	victim, rest := nodes[2], nodes[:2]
	clients := brokerClients(t, victim.cmd.Process.Pid, br.Plain, br.Log())
	if len(clients) == 0 {
		t.Fatalf("no broker connection of node %s found; broker log:\n%s", victim.id, br.Log())
	}
	pub.allow(1 << 40)
	pub.waitSent(t, 800)
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killedAt := pub.sent()
	victim.cmd.Wait() //nolint:errcheck // killed
	testwait.Within(t, 30*time.Second, "the broker drops the dead node's connections "+strings.Join(clients, ", "), func() bool {
		return dropped(br.Log(), clients)
	})
	noticedAt := pub.sent()
	pub.allow(noticedAt + 600)
	out.waitAll(t, noticedAt, noticedAt+600)
	if d := out.duplicates(noticedAt, noticedAt+600); d != 0 {
		t.Errorf("%d records published after the broker dropped the dead node delivered twice", d)
	}
	t.Logf("kill -9 of %s at record %d, its %d broker connections dropped by record %d; records 600-%d: %d lost, %d delivered twice; each of the 600 published after that delivered once",
		victim.id, killedAt, len(clients), noticedAt, noticedAt, out.missing(600, noticedAt), out.duplicates(600, noticedAt))
	waitCopies(t, rest[0], rest)

	// A fourth node joins: it runs its copy and takes a share.
	joiner := startNode(t, bin, db)
	nodes = append(slices.Clone(rest), joiner)
	waitCopies(t, rest[1], nodes)
	from := pub.sent()
	pub.allow(from + 600)
	out.waitAll(t, from, from+600)
	if in := localRecordsIn(joiner); in == 0 {
		t.Errorf("the node that joined (%s) processed none of 600 records", joiner.id)
	}
	var members []struct {
		ID    string   `json:"id"`
		Rules []string `json:"rules"`
	}
	if err := rest[0].c.JSON(context.Background(), "GET", "/cluster/nodes", nil, &members); err != nil {
		t.Fatal(err)
	}
	listed := 0
	for _, m := range members {
		if slices.Contains(m.Rules, spreadRule+"#n"+m.ID) {
			listed++
		}
	}
	if listed != len(nodes) {
		t.Errorf("GET /cluster/nodes lists the copies of %d nodes, want %d: %+v", listed, len(nodes), members)
	}

	// Restart through one node, while publishing, restarts the copies on
	// all of them. A stopping copy drains its subscription: every record
	// the broker handed to a copy arrives. Records published while no
	// copy was subscribed (each between its UNSUBSCRIBE and its new
	// SUBSCRIBE) go to nobody: counted, from the broker's log, not
	// asserted. What is published once every copy runs again arrives.
	before := map[string]float64{}
	for _, n := range nodes {
		before[n.id], _ = localCopy(n)["lastStartTimestamp"].(float64)
	}
	pub.allow(1 << 40)
	restartFrom := pub.sent()
	if _, err := joiner.c.RuleAction(context.Background(), spreadRule, "restart"); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		testwait.Within(t, 30*time.Second, "the copy on "+n.id+" restarted", func() bool {
			c := localCopy(n)
			start, _ := c["lastStartTimestamp"].(float64)
			return c["status"] == "running" && start > before[n.id]
		})
	}
	restarted := pub.sent()
	pub.allow(restarted + 300)
	out.waitAll(t, restarted, restarted+300)
	unrouted := unroutedMessages(br.Log(), "spread-publisher")
	handed, nobody := 0, 0
	out.mu.Lock()
	for seq := restartFrom; seq < restarted; seq++ {
		if unrouted[pub.mid(seq)] {
			nobody++
			continue
		}
		if !filtered(seq) && out.seen[seq] == 0 {
			handed++
			t.Errorf("record %d (message id %d), handed to a copy by the broker, lost in the restart", seq, pub.mid(seq))
		}
	}
	out.mu.Unlock()
	t.Logf("restart of the %d copies while publishing: records %d-%d: %d lost (%d of them handed to a copy), %d published while no copy was subscribed, %d delivered twice; each of the 300 published after every copy ran again delivered once",
		len(nodes), restartFrom, restarted, out.missing(restartFrom, restarted), handed, nobody, out.duplicates(restartFrom, restarted))
	if d := out.duplicates(restarted, restarted+300); d != 0 {
		t.Errorf("%d records published after the restart delivered twice", d)
	}
}

func setupSpreadRule(t *testing.T, n *node, broker string) {
	t.Helper()
	ctx := context.Background()
	if err := n.c.JSON(ctx, "PUT", "/metadata/sources/mqtt/confKeys/m", map[string]any{"server": broker, "qos": 1}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := n.c.CreateStream(ctx, "stream", `CREATE STREAM s (seq BIGINT, v BIGINT) WITH (TYPE="mqtt", DATASOURCE="$share/g/in", FORMAT="json", CONF_KEY="m")`); err != nil {
		t.Fatal(err)
	}
	if _, err := n.c.CreateRule(ctx, spreadRuleJSON(broker, "SELECT seq, lag(seq) AS prev FROM s WHERE v >= 0")); err != nil {
		t.Fatal(err)
	}
}

func spreadRuleJSON(broker, sql string) []byte {
	b, _ := json.Marshal(map[string]any{
		"id":      spreadRule,
		"sql":     sql,
		"actions": []any{map[string]any{"mqtt": map[string]any{"server": broker, "topic": "out", "qos": 1, "sendSingle": true}}},
		"options": map[string]any{"qos": 1, "checkpointInterval": "500ms"},
	})
	return b
}

func putSpreadRule(t *testing.T, n *node, broker, sql string) {
	t.Helper()
	if err := n.c.JSON(context.Background(), "PUT", "/rules/"+spreadRule, json.RawMessage(spreadRuleJSON(broker, sql)), nil); err != nil {
		t.Fatal(err)
	}
}

// wholeSession waits until the rule runs whole on one of nodes, subscribed,
// and returns the client id of its persistent session, from the broker's
// log.
func wholeSession(t *testing.T, nodes []*node, br *mqtttest.Mosquitto) string {
	t.Helper()
	var owner *node
	testwait.Within(t, 60*time.Second, "the stateful rule running whole, subscribed", func() bool {
		for _, n := range nodes {
			st := spreadStatus(n)
			if st["node"] == n.id && st["tasks"] == nil && st["status"] == "running" && st["source_s_0_connection_status"] == float64(1) {
				owner = n
				return true
			}
		}
		return false
	})
	var ids []string
	for _, id := range brokerClients(t, owner.cmd.Process.Pid, br.Plain, br.Log()) {
		if strings.Contains(br.Log(), " as "+id+" (p2, c0") {
			ids = append(ids, id)
		}
	}
	if len(ids) != 1 {
		t.Fatalf("persistent sessions of node %s running the whole rule: %v, want one", owner.id, ids)
	}
	return ids[0]
}

// spreadStatus is the rule's status as n answers it.
func spreadStatus(n *node) map[string]any {
	var st map[string]any
	n.c.JSON(context.Background(), "GET", "/rules/"+spreadRule+"/status", nil, &st) //nolint:errcheck // polled
	return st
}

// waitCopies waits until the status asked of via lists exactly one copy
// per node of nodes, each running on its node.
func waitCopies(t *testing.T, via *node, nodes []*node) {
	t.Helper()
	var want []string
	for _, n := range nodes {
		want = append(want, spreadRule+"#n"+n.id)
	}
	slices.Sort(want)
	var got map[string]string
	testwait.Within(t, 60*time.Second, fmt.Sprintf("copies %v running", want), func() bool {
		st := spreadStatus(via)
		got = taskNodes(st)
		tasks, _ := st["tasks"].([]any)
		if len(tasks) != len(want) || len(got) != len(want) || st["status"] != "running" {
			return false
		}
		for _, id := range want {
			if got[id] != strings.TrimPrefix(id, spreadRule+"#n") {
				return false
			}
		}
		return true
	})
}

// localCopy is n's own copy in the status n answers.
func localCopy(n *node) map[string]any {
	tasks, _ := spreadStatus(n)["tasks"].([]any)
	for _, x := range tasks {
		if m, _ := x.(map[string]any); m["node"] == n.id {
			return m
		}
	}
	return map[string]any{}
}

// localRecordsIn is the number of records n's copy read, from its metrics.
func localRecordsIn(n *node) int64 {
	m, _ := localCopy(n)["metrics"].(map[string]any)
	return recordsIn(m)
}

// brokerClients returns the client ids of process pid's connections to
// the broker's port, matched through the local ports of its sockets
// (/proc) with the broker's "New client connected" log lines.
func brokerClients(t *testing.T, pid, brokerPort int, brokerLog string) []string {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if inode, ok := strings.CutPrefix(link, "socket:["); err == nil && ok {
			inodes[strings.TrimSuffix(inode, "]")] = true
		}
	}
	ports := map[string]bool{}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || !inodes[fields[9]] {
				continue
			}
			_, remote, _ := strings.Cut(fields[2], ":")
			_, local, _ := strings.Cut(fields[1], ":")
			rp, _ := strconv.ParseInt(remote, 16, 32)
			lp, _ := strconv.ParseInt(local, 16, 32)
			if int(rp) == brokerPort {
				ports[strconv.Itoa(int(lp))] = true
			}
		}
		f.Close()
	}
	var ids []string
	for _, line := range strings.Split(brokerLog, "\n") {
		_, rest, ok := strings.Cut(line, "New client connected from 127.0.0.1:")
		if !ok {
			continue
		}
		var port, id string
		if _, err := fmt.Sscanf(rest, "%s as %s", &port, &id); err == nil && ports[port] {
			ids = append(ids, id)
		}
	}
	return ids
}

// dropped reports whether the broker's log says it dropped every client
// of ids.
func dropped(brokerLog string, ids []string) bool {
	for _, id := range ids {
		gone := false
		for _, end := range []string{" closed its connection", " disconnected", " has exceeded timeout"} {
			gone = gone || strings.Contains(brokerLog, "Client "+id+end)
		}
		if !gone {
			return false
		}
	}
	return true
}

// publisher publishes {"seq": n, "v": …} at qos 1, every 5 ms, while n is
// below the allowed count.
type publisher struct {
	limit, next atomic.Int64
	mu          sync.Mutex
	mids        map[int64]uint16 // seq → MQTT message id
}

// mid is the message id record seq was published with.
func (p *publisher) mid(seq int64) uint16 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mids[seq]
}

// unroutedMessages returns the ids of the messages from client that the
// broker, by its packet log, sent to no subscriber: after "Received
// PUBLISH from <client> (… m<id>, …)" no "Sending PUBLISH to" came before
// its PUBACK (mosquitto routes a message while it handles it). A message
// queued for a member whose in-flight window is full counts too.
func unroutedMessages(brokerLog, client string) map[uint16]bool {
	out := map[uint16]bool{}
	var cur string
	routed := false
	for _, line := range strings.Split(brokerLog, "\n") {
		switch {
		case strings.Contains(line, "Received PUBLISH from "+client+" "):
			_, rest, _ := strings.Cut(line, ", m")
			cur, _, _ = strings.Cut(rest, ",")
			routed = false
		case cur != "" && strings.Contains(line, "Sending PUBLISH to "):
			routed = true
		case cur != "" && strings.Contains(line, "Sending PUBACK to "+client+" (m"+cur+","):
			if !routed {
				if id, err := strconv.ParseUint(cur, 10, 16); err == nil {
					out[uint16(id)] = true
				}
			}
			cur = ""
		}
	}
	return out
}

func startPublisher(t *testing.T, broker, topic string) *publisher {
	t.Helper()
	c := mqtt.NewClient(mqtt.NewClientOptions().AddBroker(broker).SetClientID("spread-publisher"))
	if tok := c.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("publisher connect: %v", tok.Error())
	}
	p := &publisher{mids: map[int64]uint16{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done; c.Disconnect(100) })
	go func() {
		defer close(done)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			seq := p.next.Load()
			if seq >= p.limit.Load() {
				continue
			}
			v := seq%4 - 1
			if filtered(seq) != (v < 0) {
				panic("filtered disagrees with the published v")
			}
			tok := c.Publish(topic, 1, false, fmt.Sprintf(`{"seq":%d,"v":%d}`, seq, v))
			if !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
				continue // published again on the next tick
			}
			p.mu.Lock()
			p.mids[seq] = tok.(*mqtt.PublishToken).MessageID()
			p.mu.Unlock()
			p.next.Add(1)
		}
	}()
	return p
}

func (p *publisher) allow(n int64) { p.limit.Store(n) }
func (p *publisher) sent() int64   { return p.next.Load() }

func (p *publisher) waitSent(t *testing.T, n int64) {
	t.Helper()
	testwait.Within(t, 60*time.Second, fmt.Sprintf("%d records published", n), func() bool { return p.sent() >= n })
}

// collector counts the seq of every message on a topic.
type collector struct {
	mu   sync.Mutex
	seen map[int64]int
	bad  []string
}

func collect(t *testing.T, broker, topic string) *collector {
	t.Helper()
	col := &collector{seen: map[int64]int{}}
	c := mqtt.NewClient(mqtt.NewClientOptions().AddBroker(broker).SetClientID("spread-collector"))
	if tok := c.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("collector connect: %v", tok.Error())
	}
	t.Cleanup(func() { c.Disconnect(100) })
	tok := c.Subscribe(topic, 1, func(_ mqtt.Client, m mqtt.Message) {
		var row struct {
			Seq *int64 `json:"seq"`
		}
		col.mu.Lock()
		defer col.mu.Unlock()
		if err := json.Unmarshal(m.Payload(), &row); err != nil || row.Seq == nil || filtered(*row.Seq) {
			col.bad = append(col.bad, string(m.Payload()))
			return
		}
		col.seen[*row.Seq]++
	})
	if !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("collector subscribe: %v", tok.Error())
	}
	return col
}

// waitAll waits until every record of [from, to) the rule keeps arrived,
// and fails on any message that is not such a record.
func (c *collector) waitAll(t *testing.T, from, to int64) {
	t.Helper()
	testwait.Within(t, 60*time.Second, fmt.Sprintf("records %d-%d delivered", from, to), func() bool { return c.missing(from, to) == 0 })
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.bad) > 0 {
		t.Fatalf("unexpected output (dropped by the WHERE, or unreadable): %q", c.bad[:min(len(c.bad), 5)])
	}
}

// missing counts the records of [from, to) the rule keeps that did not
// arrive.
func (c *collector) missing(from, to int64) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for seq := from; seq < to; seq++ {
		if !filtered(seq) && c.seen[seq] == 0 {
			n++
		}
	}
	return n
}

// duplicates counts the extra deliveries of the records of [from, to).
func (c *collector) duplicates(from, to int64) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for seq := from; seq < to; seq++ {
		n += max(c.seen[seq]-1, 0)
	}
	return n
}
