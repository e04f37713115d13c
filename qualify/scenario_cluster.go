package qualify

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
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
	Kills int   // SIGKILLs of the rule's node per qos level (default 10)
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
	Sink         string  `json:"sink"`
	Nodes        int     `json:"nodes"`
	Kills        int     `json:"kills"`
	Records      int     `json:"records"`
	LeaseSeconds float64 `json:"lease_seconds"`
	// Failover is, per kill, the time from SIGKILL of the rule's node to
	// another node running the rule.
	Failover    DurationStats `json:"failover"`
	FailoverP99 float64       `json:"failover_p99_seconds"`
	// NotRestored counts take-overs whose first checkpoint did not follow
	// the killed node's last: the new node did not restore it.
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
	name := fmt.Sprintf("cluster qos %d (%s sink)", r.Qos, r.Sink)
	w := r.Windows
	if !w.OK() {
		v = append(v, fmt.Sprintf("%s: %d of %d windows exact, %d missing, %d wrong, %d unexpected after %d kills (first %v)",
			name, w.Exact, w.Expected, w.Missing, w.Wrong, w.Unexpected, r.Kills, w.FirstErrors))
	}
	if r.Qos >= 2 && w.Duplicates > 0 {
		v = append(v, fmt.Sprintf("%s: %d window results delivered twice", name, w.Duplicates))
	}
	if r.NotRestored > 0 {
		v = append(v, fmt.Sprintf("%s: %d of %d take-overs did not continue from the killed node's checkpoint", name, r.NotRestored, r.Kills))
	}
	if r.FailoverP99 > r.LeaseSeconds+2 {
		v = append(v, fmt.Sprintf("%s: failover p99 %.2fs, more than the lease time %.0fs + 2s", name, r.FailoverP99, r.LeaseSeconds))
	}
	return v
}

// RunCluster runs, for each qos level, Nodes kuiperd on one PostgreSQL
// catalog and one rule over an in-process Kafka broker (kfake): an
// event-time 1-second tumbling window with count and sum per key, from a
// topic fed at Rate to a Kafka sink. It kills the node running the rule
// with SIGKILL Kills times, at random moments once the node completed two
// checkpoints, restarts it each time, measures how long until another node
// runs the rule and checks that its first checkpoint follows the killed
// node's last. At the end it reads the output topic (read_committed at
// qos 2) and compares every window with the one computed from the input.
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

func runClusterQos(ctx context.Context, env Env, p ClusterParams, qos int, dir, db, sinkDB string) (ClusterResult, error) {
	t0 := time.Now()
	res := ClusterResult{Qos: qos, Sink: "kafka", Nodes: p.Nodes, Records: p.Records, LeaseSeconds: p.LeaseTime.Seconds()}
	action := map[string]any{"kafka": nil}
	if sinkDB != "" {
		res.Sink = "sql"
		if err := execSQL(ctx, sinkDB, `CREATE TABLE out (key TEXT, c BIGINT, s BIGINT, ws BIGINT)`); err != nil {
			return res, err
		}
		action = map[string]any{"sql": map[string]any{"url": sinkDB, "table": "out"}}
	}
	broker, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "in", "out"))
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

	const (
		keys   = 10
		base   = int64(1700000000000)
		stepMS = 10
	)
	recs := GenerateRecords(p.Records, keys, base, stepMS)
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	produced := make(chan error, 1)
	var done atomic.Bool
	go func() {
		produced <- produce(pctx, brokers, recs, time.Duration(float64(time.Second)/p.Rate))
		done.Store(true)
	}()
	for _, step := range []struct {
		path string
		body any
	}{
		{"/streams", map[string]any{"sql": `CREATE STREAM src (seq BIGINT, key STRING, v BIGINT, ts BIGINT) WITH (DATASOURCE="in", TYPE="kafka", FORMAT="json", TIMESTAMP="ts", EXTRA="{\"brokers\":\"` + brokers + `\"}")`}},
		{"/rules", map[string]any{
			"id":      "win",
			"sql":     "SELECT key, count(*) AS c, sum(v) AS s, window_start() AS ws FROM src GROUP BY key, TUMBLINGWINDOW(ss, 1)",
			"actions": []any{action},
			"options": map[string]any{"qos": qos, "checkpointInterval": "500ms", "isEventTime": true, "lateTolerance": "0s"},
		}},
	} {
		if _, err := nodes[0].Do(http.MethodPost, step.path, step.body, nil); err != nil {
			return res, err
		}
	}

	rng := rand.New(rand.NewPCG(p.Seed, uint64(qos)))
	var failovers []float64
	for i := range p.Kills {
		owner, err := ownerOf(ctx, nodes, "win", 30*time.Second)
		if err != nil {
			return res, err
		}
		// Two checkpoints of the owner's own first, so that a node
		// starting from nothing would number below them.
		floor := owner.checkpointID("win")
		if err := poll(ctx, 30*time.Second, func() bool { return owner.checkpointID("win") >= floor+2 }); err != nil {
			return res, fmt.Errorf("kill %d: %s completes two checkpoints: %w", i+1, owner.id, err)
		}
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(time.Duration(300+rng.IntN(1000)) * time.Millisecond):
		}
		last := owner.checkpointID("win")
		owner.Kill()
		killed := time.Now()
		var rest []*clusterNode
		for _, n := range nodes {
			if n != owner {
				rest = append(rest, n)
			}
		}
		next, err := ownerOf(ctx, rest, "win", 30*time.Second)
		if err != nil {
			return res, fmt.Errorf("kill %d of %s: %w", i+1, owner.id, err)
		}
		failover := time.Since(killed)
		failovers = append(failovers, failover.Seconds())
		var first int64
		if err := poll(ctx, 30*time.Second, func() bool {
			first = next.checkpointID("win")
			return first > 0
		}); err != nil {
			return res, fmt.Errorf("kill %d: %s completes a checkpoint: %w", i+1, next.id, err)
		}
		if first <= last {
			res.NotRestored++
		}
		res.Kills++
		env.logf("cluster qos %d kill %d: %s killed after checkpoint %d; %s ran the rule %.3fs later, first checkpoint %d (input done: %v)",
			qos, i+1, owner.id, last, next.id, failover.Seconds(), first, done.Load())
		if err := owner.Start(ctx); err != nil {
			return res, fmt.Errorf("restart %s: %w", owner.id, err)
		}
	}
	if err := <-produced; err != nil {
		return res, fmt.Errorf("feed the input topic: %w", err)
	}
	res.Failover = summarize(failovers)
	res.FailoverP99 = percentile(failovers, 0.99)
	expected := ExpectedWindows(recs, 1000)
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
