package qualify

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx" for the results table
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/rekuiper/rekuiper/internal/connector/sqldb/pgtest"
)

// ClusterParams configure the cluster scenario.
type ClusterParams struct {
	Qos   []int // rule qos levels to run (default 1, 2)
	Nodes int   // kuiperd sharing the catalog (default 3)
	Kills int   // SIGKILLs of a node running the rule per qos level (default 10)
	// Partitions of the input topic (default 6). With two or more the
	// rule runs as one task per partition, spread over the nodes; with
	// one it runs whole on one node.
	Partitions int
	// Rate is records per second fed to the input topic (default 200);
	// Records how many (default 20 s worth).
	Rate    float64
	Records int
	// LeaseTime is cluster.leaseTime of every node (default 3 s).
	LeaseTime time.Duration
	Seed      uint64
	// CatalogURL is a PostgreSQL server to create the scenario's
	// databases on (postgres://…); empty starts a throwaway one with
	// initdb and pg_ctl.
	CatalogURL string
	// SQLSink writes the results to a PostgreSQL table (the sql sink, a
	// database of its own on the same server) instead of a Kafka topic.
	SQLSink bool
}

func (p ClusterParams) withDefaults() ClusterParams {
	if len(p.Qos) == 0 {
		p.Qos = []int{1, 2}
	}
	if p.Nodes == 0 {
		p.Nodes = 3
	}
	if p.Kills == 0 {
		p.Kills = 10
	}
	if p.Partitions == 0 {
		p.Partitions = 6
	}
	if p.Rate == 0 {
		p.Rate = 200
	}
	if p.Records == 0 {
		p.Records = int(20 * p.Rate)
	}
	if p.LeaseTime == 0 {
		p.LeaseTime = 3 * time.Second
	}
	return p
}

// ClusterResult is the account of one qos level of the cluster scenario.
type ClusterResult struct {
	Qos int `json:"qos"`
	// Sink is "kafka" or "sql".
	Sink  string `json:"sink"`
	Nodes int    `json:"nodes"`
	// Partitions of the input topic; Tasks the rule ran as (1: whole).
	Partitions   int     `json:"partitions"`
	Tasks        int     `json:"tasks"`
	Kills        int     `json:"kills"`
	Records      int     `json:"records"`
	LeaseSeconds float64 `json:"lease_seconds"`
	// Failover is, per kill, the time from SIGKILL of a node to every
	// task (or the rule) it ran running on the other nodes.
	Failover    DurationStats `json:"failover"`
	FailoverP99 float64       `json:"failover_p99_seconds"`
	// TakeOvers counts the tasks (or the rule) moved by the kills;
	// NotRestored those whose first checkpoint on their new node did not
	// follow the killed node's last: the new node did not restore it.
	TakeOvers   int          `json:"take_overs"`
	NotRestored int          `json:"not_restored"`
	Windows     WindowReport `json:"windows"`
	Seconds     float64      `json:"seconds"`
}

// Violations lists what the design promises and this run broke: every
// window exact and none missing (qos 1), none twice (qos 2), each
// take-over from the killed node's checkpoint, failover p99 within the
// lease time plus 2 s.
func (r ClusterResult) Violations() []string {
	var v []string
	name := fmt.Sprintf("cluster qos %d (%s sink, %d partitions)", r.Qos, r.Sink, r.Partitions)
	w := r.Windows
	if !w.OK() {
		v = append(v, fmt.Sprintf("%s: %d of %d windows exact, %d missing, %d wrong, %d unexpected after %d kills (first %v)",
			name, w.Exact, w.Expected, w.Missing, w.Wrong, w.Unexpected, r.Kills, w.FirstErrors))
	}
	if r.Qos >= 2 && w.Duplicates > 0 {
		v = append(v, fmt.Sprintf("%s: %d window results delivered twice", name, w.Duplicates))
	}
	if r.NotRestored > 0 {
		v = append(v, fmt.Sprintf("%s: %d of %d take-overs did not continue from the killed node's checkpoint", name, r.NotRestored, r.TakeOvers))
	}
	if r.FailoverP99 > r.LeaseSeconds+2 {
		v = append(v, fmt.Sprintf("%s: failover p99 %.2fs, more than the lease time %.0fs + 2s", name, r.FailoverP99, r.LeaseSeconds))
	}
	return v
}

// failoverVerdict says whether the failover p99 is within the lease time
// plus 2 s, the bound the design promises.
func (r ClusterResult) failoverVerdict() string {
	if r.FailoverP99 > r.LeaseSeconds+2 {
		return "over lease time + 2s"
	}
	return "within lease time + 2s"
}

// RunCluster runs, for each qos level, Nodes kuiperd on one PostgreSQL
// catalog and one rule over an in-process Kafka broker (kfake): an
// event-time 1-second tumbling window with count and sum per key, from a
// topic of Partitions partitions, fed at Rate and keyed by the group key,
// to a Kafka sink (or the sql sink). With several partitions the rule runs
// as one task per partition, spread over the nodes. Kills times it kills
// a node running tasks of the rule with SIGKILL, at a random moment once
// each of them completed two checkpoints, restarts it, measures how long
// until every task it ran runs on another node and checks that each
// moved task's first checkpoint follows the killed node's last. At the
// end it reads the output (read_committed at qos 2) and compares every
// window with the one computed from the input, with one watermark per
// partition.
func RunCluster(ctx context.Context, env Env, p ClusterParams) ([]ClusterResult, error) {
	p = p.withDefaults()
	server := p.CatalogURL
	if server == "" {
		srv, stop, err := pgtest.StartMain(pgtest.Options{})
		if err != nil {
			return nil, fmt.Errorf("start PostgreSQL: %w", err)
		}
		defer stop()
		server = srv.URL
	}
	var out []ClusterResult
	for _, qos := range p.Qos {
		dir, err := env.sub(fmt.Sprintf("qos%d", qos))
		if err != nil {
			return out, err
		}
		db, err := newDatabase(ctx, server, fmt.Sprintf("rekuiper_cluster_%d_%d", qos, time.Now().UnixNano()))
		if err != nil {
			return out, err
		}
		var sinkDB string
		if p.SQLSink {
			if sinkDB, err = newDatabase(ctx, server, fmt.Sprintf("rekuiper_results_%d_%d", qos, time.Now().UnixNano())); err != nil {
				return out, err
			}
		}
		r, err := runClusterQos(ctx, env, p, qos, dir, db, sinkDB)
		out = append(out, r)
		if err != nil {
			return out, fmt.Errorf("cluster qos %d: %w", qos, err)
		}
		env.logf("cluster qos %d: failover %+v, windows %+v", qos, r.Failover, r.Windows)
	}
	return out, nil
}

// newDatabase creates database name on the server at serverURL and
// returns its URL.
func newDatabase(ctx context.Context, serverURL, name string) (string, error) {
	u, err := url.Parse(serverURL)
	if err != nil {
		return "", errors.New("catalog server: not a valid PostgreSQL URL")
	}
	admin, err := sql.Open("pgx", serverURL)
	if err != nil {
		return "", err
	}
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	u.Path = "/" + name
	return u.String(), nil
}

// clusterNode is one kuiperd of the cluster scenario.
type clusterNode struct {
	*Daemon
	id string
}

func startClusterNode(ctx context.Context, bin, dir, catalogURL string, lease time.Duration) (*clusterNode, error) {
	d, err := NewDaemon(bin, dir, "")
	if err != nil {
		return nil, err
	}
	d.Env = []string{"KUIPER__BASIC__CATALOG=" + catalogURL, "KUIPER__CLUSTER__LEASETIME=" + lease.String()}
	if err := d.Start(ctx); err != nil {
		return nil, err
	}
	var info map[string]any
	if _, err := d.Do(http.MethodGet, "/", nil, &info); err != nil {
		d.Kill()
		return nil, err
	}
	id, _ := info["node"].(string)
	if id == "" {
		d.Kill()
		return nil, fmt.Errorf("GET / names no node: %v", info)
	}
	return &clusterNode{Daemon: d, id: id}, nil
}

// runs returns the rule's status when n itself runs it: the status names
// n, says running and carries the source metrics only the running node
// has.
func (n *clusterNode) runs(rule string) (map[string]any, bool) {
	st, err := n.RuleStatus(rule)
	if err != nil || st["node"] != n.id || st["status"] != "running" {
		return nil, false
	}
	for k := range st {
		if strings.HasPrefix(k, "source_") {
			return st, true
		}
	}
	return nil, false
}

// checkpointID is the id of the last checkpoint n completed for rule, 0
// when none (or n does not run it).
func (n *clusterNode) checkpointID(rule string) int64 {
	st, ok := n.runs(rule)
	if !ok {
		return 0
	}
	return int64(asFloat(st["checkpoint_last_id"]))
}

// ownerOf polls until one of ns runs rule, within limit.
func ownerOf(ctx context.Context, ns []*clusterNode, rule string, limit time.Duration) (*clusterNode, error) {
	var owner *clusterNode
	err := poll(ctx, limit, func() bool {
		for _, n := range ns {
			if _, ok := n.runs(rule); ok {
				owner = n
				return true
			}
		}
		return false
	})
	if err != nil {
		return nil, fmt.Errorf("no node runs rule %s: %w", rule, err)
	}
	return owner, nil
}

// poll calls cond every 20 ms until it holds, ctx ends or limit passes.
func poll(ctx context.Context, limit time.Duration, cond func() bool) error {
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %s", limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// unit is one task of the rule (or the whole rule) as the node running
// it reports it.
type unit struct {
	completed int64 // checkpoints completed since it started there
	lastID    int64 // id of the last one
}

// work returns what n itself runs of rule: its tasks by id, or the rule
// under its own id when it runs whole. Only the running node reports a
// task's metrics, so a task appears once n has started it.
func (n *clusterNode) work(rule string) map[string]unit {
	out := map[string]unit{}
	st, err := n.RuleStatus(rule)
	if err != nil {
		return out
	}
	tasks, split := st["tasks"].([]any)
	if !split {
		if st, ok := n.runs(rule); ok {
			out[rule] = unit{int64(asFloat(st["checkpoint_completed_total"])), int64(asFloat(st["checkpoint_last_id"]))}
		}
		return out
	}
	for _, x := range tasks {
		m, _ := x.(map[string]any)
		met, ok := m["metrics"].(map[string]any)
		if !ok || m["node"] != n.id || m["status"] != "running" {
			continue
		}
		out[fmt.Sprint(m["id"])] = unit{int64(asFloat(met["checkpoint_completed_total"])), int64(asFloat(met["checkpoint_last_id"]))}
	}
	return out
}

// placement polls until the nodes ns run, between them, want units of
// rule (each on one node), within limit; it returns what each runs.
func placement(ctx context.Context, ns []*clusterNode, rule string, want int, limit time.Duration) ([]map[string]unit, error) {
	var by []map[string]unit
	err := poll(ctx, limit, func() bool {
		by = by[:0]
		seen := map[string]bool{}
		for _, n := range ns {
			w := n.work(rule)
			for id := range w {
				seen[id] = true
			}
			by = append(by, w)
		}
		return len(seen) == want
	})
	if err != nil {
		return nil, fmt.Errorf("%d tasks of rule %s running: %w", want, rule, err)
	}
	return by, nil
}

func runClusterQos(ctx context.Context, env Env, p ClusterParams, qos int, dir, db, sinkDB string) (ClusterResult, error) {
	t0 := time.Now()
	res := ClusterResult{Qos: qos, Sink: "kafka", Nodes: p.Nodes, Partitions: p.Partitions, Tasks: 1, Records: p.Records, LeaseSeconds: p.LeaseTime.Seconds()}
	if p.Partitions > 1 {
		res.Tasks = p.Partitions
	}
	action := map[string]any{"kafka": nil}
	if sinkDB != "" {
		res.Sink = "sql"
		if err := execSQL(ctx, sinkDB, `CREATE TABLE out (key TEXT, c BIGINT, s BIGINT, ws BIGINT)`); err != nil {
			return res, err
		}
		action = map[string]any{"sql": map[string]any{"url": sinkDB, "table": "out"}}
	}
	broker, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(int32(p.Partitions), "in"), kfake.SeedTopics(1, "out"))
	if err != nil {
		return res, fmt.Errorf("start kfake: %w", err)
	}
	defer broker.Close()
	brokers := strings.Join(broker.ListenAddrs(), ",")
	if sinkDB == "" {
		action = map[string]any{"kafka": map[string]any{"brokers": brokers, "topic": "out"}}
	}
	var nodes []*clusterNode
	defer func() {
		for _, n := range nodes {
			n.Kill()
		}
	}()
	for i := range p.Nodes {
		n, err := startClusterNode(ctx, env.Bin, filepath.Join(dir, fmt.Sprintf("node%d", i)), db, p.LeaseTime)
		if err != nil {
			return res, err
		}
		nodes = append(nodes, n)
	}

	// Two keys per partition, each record in its key's partition: the
	// producers key the topic by the rule's group key (keyField).
	const (
		base   = int64(1700000000000)
		stepMS = 10
	)
	keys := max(2*p.Partitions, 10)
	part := func(r Record) int { return int(r.Seq) % keys % p.Partitions }
	recs := GenerateRecords(p.Records, keys, base, stepMS)
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	produced := make(chan error, 1)
	var done atomic.Bool
	go func() {
		produced <- produce(pctx, brokers, recs, part, time.Duration(float64(time.Second)/p.Rate))
		done.Store(true)
	}()
	for _, step := range []struct {
		method, path string
		body         any
	}{
		{http.MethodPut, "/metadata/sources/kafka/confKeys/cluster", map[string]any{"brokers": brokers, "keyField": "key"}},
		{http.MethodPost, "/streams", map[string]any{"sql": `CREATE STREAM src (seq BIGINT, key STRING, v BIGINT, ts BIGINT) WITH (DATASOURCE="in", TYPE="kafka", FORMAT="json", TIMESTAMP="ts", CONF_KEY="cluster")`}},
		{http.MethodPost, "/rules", map[string]any{
			"id":      "win",
			"sql":     "SELECT key, count(*) AS c, sum(v) AS s, window_start() AS ws FROM src GROUP BY key, TUMBLINGWINDOW(ss, 1)",
			"actions": []any{action},
			"options": map[string]any{"qos": qos, "checkpointInterval": "1s", "isEventTime": true, "lateTolerance": "0s"},
		}},
	} {
		if _, err := nodes[0].Do(step.method, step.path, step.body, nil); err != nil {
			return res, err
		}
	}

	rng := rand.New(rand.NewPCG(p.Seed, uint64(qos)))
	var failovers []float64
	killsOf := make([]int, len(nodes))
	for attempt := 0; res.Kills < p.Kills; attempt++ {
		if attempt > 3*p.Kills {
			return res, fmt.Errorf("only %d of %d kills: the tasks kept moving before a kill", res.Kills, p.Kills)
		}
		by, err := placement(ctx, nodes, "win", res.Tasks, 30*time.Second)
		if err != nil {
			return res, err
		}
		// A restarted node takes its share back: wait for every node to
		// run some tasks, so that the kills fall on each in turn.
		if res.Tasks >= len(nodes) {
			_ = poll(ctx, 3*p.LeaseTime, func() bool {
				b, err := placement(ctx, nodes, "win", res.Tasks, p.LeaseTime)
				if err != nil {
					return false
				}
				by = b
				for _, w := range b {
					if len(w) == 0 {
						return false
					}
				}
				return true
			})
		}
		// The victim: a node running tasks, killed least often so far.
		var candidates []int
		for i, w := range by {
			switch {
			case len(w) == 0:
			case len(candidates) == 0 || killsOf[i] < killsOf[candidates[0]]:
				candidates = []int{i}
			case killsOf[i] == killsOf[candidates[0]]:
				candidates = append(candidates, i)
			}
		}
		vi := candidates[rng.IntN(len(candidates))]
		victim, floor := nodes[vi], by[vi]
		// Two checkpoints of each of the victim's tasks first, so that a
		// task starting from nothing would number below them.
		moved := false
		if err := poll(ctx, 30*time.Second, func() bool {
			now := victim.work("win")
			for id, u := range floor {
				v, ok := now[id]
				if !ok {
					moved = true
					return true
				}
				if v.completed < u.completed+2 {
					return false
				}
			}
			return true
		}); err != nil {
			return res, fmt.Errorf("kill %d: the tasks of %s complete two checkpoints: %w", res.Kills+1, victim.id, err)
		}
		if moved {
			continue // a rebalance moved a task away; pick again
		}
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(time.Duration(300+rng.IntN(1000)) * time.Millisecond):
		}
		last := victim.work("win")
		if len(last) != len(floor) {
			continue
		}
		victim.Kill()
		killed := time.Now()
		var rest []*clusterNode
		for _, n := range nodes {
			if n != victim {
				rest = append(rest, n)
			}
		}
		// Every task of the victim running on another node.
		var after map[string]*clusterNode
		if err := poll(ctx, 30*time.Second, func() bool {
			after = map[string]*clusterNode{}
			for _, n := range rest {
				for id := range n.work("win") {
					after[id] = n
				}
			}
			for id := range last {
				if after[id] == nil {
					return false
				}
			}
			return true
		}); err != nil {
			return res, fmt.Errorf("kill %d of %s: its tasks %v running elsewhere: %w", res.Kills+1, victim.id, slices.Sorted(maps.Keys(last)), err)
		}
		failover := time.Since(killed)
		failovers = append(failovers, failover.Seconds())
		// Each moved task's first checkpoint on its new node follows
		// the victim's last: it restored the victim's state.
		var moves []string
		for _, id := range slices.Sorted(maps.Keys(last)) {
			next := after[id]
			var first unit
			if err := poll(ctx, 30*time.Second, func() bool {
				u, ok := next.work("win")[id]
				first = u
				return ok && u.completed > 0
			}); err != nil {
				return res, fmt.Errorf("kill %d: %s on %s completes a checkpoint: %w", res.Kills+1, id, next.id, err)
			}
			res.TakeOvers++
			if first.lastID <= last[id].lastID {
				res.NotRestored++
			}
			moves = append(moves, fmt.Sprintf("%s %d→%s %d", id, last[id].lastID, next.id, first.lastID))
		}
		res.Kills++
		killsOf[vi]++
		env.logf("cluster qos %d kill %d: %s killed; its tasks ran elsewhere %.3fs later; checkpoints %s (input done: %v)",
			qos, res.Kills, victim.id, failover.Seconds(), strings.Join(moves, ", "), done.Load())
		if err := victim.Start(ctx); err != nil {
			return res, fmt.Errorf("restart %s: %w", victim.id, err)
		}
	}
	if err := <-produced; err != nil {
		return res, fmt.Errorf("feed the input topic: %w", err)
	}
	res.Failover = summarize(failovers)
	res.FailoverP99 = percentile(failovers, 0.99)
	expected := ExpectedWindowsBy(recs, 1000, part)
	var observed map[WindowKey][]WindowValue
	if sinkDB != "" {
		observed, err = tableWindows(ctx, sinkDB, len(expected), 60*time.Second)
	} else {
		observed, err = consumeWindows(ctx, brokers, qos >= 2, len(expected), 60*time.Second)
	}
	if err != nil {
		return res, err
	}
	res.Windows = CompareWindows(expected, observed, 0)
	res.Seconds = time.Since(t0).Seconds()
	return res, nil
}

// percentile is the nearest-rank q-quantile of xs.
func percentile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(float64(len(s))*q+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// execSQL runs one statement on the database at dbURL.
func execSQL(ctx context.Context, dbURL, stmt string) error {
	db, err := sql.Open("pgx", dbURL)
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, stmt); err != nil {
		return fmt.Errorf("%s: %w", firstLine(stmt), err)
	}
	return nil
}

// tableWindows reads the window results of table out at dbURL until want
// distinct windows are there and the row count stayed the same for 5 s,
// or limit passed.
func tableWindows(ctx context.Context, dbURL string, want int, limit time.Duration) (map[WindowKey][]WindowValue, error) {
	db, err := sql.Open("pgx", dbURL)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	var out map[WindowKey][]WindowValue
	read := func() (int, error) {
		rows, err := db.QueryContext(ctx, `SELECT key, c, s, ws FROM out`)
		if err != nil {
			return 0, err
		}
		defer rows.Close()
		out = map[WindowKey][]WindowValue{}
		n := 0
		for rows.Next() {
			var k string
			var c, s, ws int64
			if err := rows.Scan(&k, &c, &s, &ws); err != nil {
				return 0, err
			}
			out[WindowKey{Key: k, Start: ws}] = append(out[WindowKey{Key: k, Start: ws}], WindowValue{Count: c, Sum: s})
			n++
		}
		return n, rows.Err()
	}
	deadline := time.Now().Add(limit)
	last, stable := -1, time.Now()
	for time.Now().Before(deadline) && ctx.Err() == nil {
		n, err := read()
		if err != nil {
			return nil, fmt.Errorf("read results: %w", err)
		}
		if n != last {
			last, stable = n, time.Now()
		}
		if len(out) >= want && time.Since(stable) > 5*time.Second {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	return out, ctx.Err()
}
