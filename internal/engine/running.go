package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/checkpoint"
	"github.com/rekuiper/rekuiper/internal/format"
	"github.com/rekuiper/rekuiper/internal/guard"
	"github.com/rekuiper/rekuiper/internal/operator"
	"github.com/rekuiper/rekuiper/internal/panics"
	"github.com/rekuiper/rekuiper/internal/planner"
	"github.com/rekuiper/rekuiper/internal/row"
	"github.com/rekuiper/rekuiper/internal/rule"
	"github.com/rekuiper/rekuiper/internal/rulemgr"
	"github.com/rekuiper/rekuiper/internal/sourcelog"
	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/stream"
)

// running is a started rule (rulemgr.Running).
type running struct {
	rn     *Engine
	def    *rule.Def
	built  *Built
	sinks  []*sinkNode
	coord  *checkpoint.Coordinator
	logger *slog.Logger

	mu      sync.Mutex
	inputs  []*input
	ended   int // stream inputs that reached their end
	streams int // stream inputs (not tables)
	// attaching is true while attach runs: an end or a failure then
	// stops the rule only once every input is attached.
	attaching bool
	err       error
	done      chan struct{}
	onDone    []func() // called once done is closed (rulemgr.DoneNotifier)

	lookups      []openLookup
	lookupCtx    context.Context
	lookupCancel context.CancelFunc
	stopOnce     sync.Once
}

var (
	_ rulemgr.Running      = (*running)(nil)
	_ rulemgr.DoneNotifier = (*running)(nil)
)

type input struct {
	name string
	// conn names the source after its connection as eKuiper does
	// ("<connectionSelector>/<datasource>"); "" without a selector.
	conn     string
	key      string
	table    bool
	sub      *stream.Subscription
	consumer int
	release  func(ctx context.Context) error
}

// injector routes the coordinator's barrier requests to one consumer.
type injector struct {
	sub      *stream.Subscription
	consumer int
}

func (i injector) InjectBarrier(id uint64) { i.sub.InjectBarrier(i.consumer, id) }

// attach acquires the subscription of every input and attaches the rule
// to each (lookup tables are queried instead, see connectLookups),
// rewinding them to restored and handing the checkpoint coordinator what
// it drives, then starts them all. Nothing is started before every input
// is attached, and a stream that ends meanwhile (a bounded source that
// ends at once, a shared one that already ended) does not stop the rule
// until attach is over: the rule ends when all its streams have ended,
// and a stop always finds every subscription to release.
func (rr *running) attach(p *prepared, restored *checkpoint.Checkpoint) error {
	rr.mu.Lock()
	rr.attaching = true
	for _, in := range rr.built.Plan.Inputs {
		if !in.Lookup && !in.Table {
			rr.streams++
		}
	}
	rr.mu.Unlock()
	w := checkpointWiring{injectors: map[string]checkpoint.Injector{}}
	source := 0
	var started []*stream.Subscription
	for _, in := range rr.built.Plan.Inputs {
		if in.Lookup {
			continue
		}
		sub, err := rr.attachInput(p, in, source, restored, &w)
		if err != nil {
			return err
		}
		if !in.Table {
			source++
		}
		started = append(started, sub)
	}
	if rr.coord != nil {
		for _, s := range rr.sinks {
			if _, ok := s.sink.(transactional); ok {
				w.committers = append(w.committers, s)
			}
		}
		rr.coord.SetSources(w.injectors, w.committers, w.followers)
	}
	for _, sub := range started {
		sub.Start()
	}
	rr.mu.Lock()
	rr.attaching = false
	stop := rr.err != nil || (rr.streams > 0 && rr.ended >= rr.streams)
	rr.mu.Unlock()
	if stop {
		go rr.Stop(context.Background())
	}
	return nil
}

// checkpointWiring is what the checkpoint coordinator of a rule at qos >= 1
// drives: the sources it injects barriers into (by checkpoint key), the
// transactional sinks that commit, and what follows a completed
// checkpoint (source log truncation, upstream offset commits).
type checkpointWiring struct {
	injectors             map[string]checkpoint.Injector
	committers, followers []checkpoint.Committer
}

// subscription is what subscribe acquired for one input.
type subscription struct {
	sub      *stream.Subscription
	release  func(ctx context.Context) error
	logged   *sourcelog.Log      // the durable log made a push source replayable
	upstream api.OffsetCommitter // a source whose offsets are committed upstream
}

// attachInput subscribes the rule to input in (its source-th stream when
// in is not a table), rewinds it to its offset in restored, attaches the
// rule's consumer and records in w what checkpoints drive for it.
func (rr *running) attachInput(p *prepared, in planner.Input, source int, restored *checkpoint.Checkpoint, w *checkpointWiring) (*stream.Subscription, error) {
	typ, props, sel, err := rr.rn.sourcePropsConn(in.Def)
	if err != nil {
		return nil, err
	}
	if t := rr.def.Task; t != nil && !in.Table && in.Name == t.Stream {
		props = taskProps(props, t)
	}
	conn := ""
	if sel != "" {
		ds, _ := props["datasource"].(string)
		conn = sel + "/" + ds
	}
	// A rule at qos >= 1 reads its streams through subscriptions of its
	// own (rewound to its checkpoints); tables are always shared.
	perRule := rr.def.Options.Qos.Checkpointed() && !in.Table
	s, err := rr.subscribe(p, in, typ, props, perRule)
	if err != nil {
		return nil, fmt.Errorf("stream %s of rule %s: %w", in.Name, rr.def.ID, err)
	}
	ckKey := "source:" + in.Name
	if s.logged != nil && rr.rn.cfg.ClusterNode != "" {
		// A source log lives in this node's data folder: its offsets
		// mean nothing to another node, which reads its own log from
		// where it is rather than from another node's position.
		ckKey += "@" + rr.rn.cfg.ClusterNode
		rr.logger.Warn("stream has a local source log: on a cluster, what this node received but no checkpoint covered yet is lost if the node dies (see docs/cluster.md)", "stream", in.Name)
	}
	if perRule && restored != nil {
		if off, ok := restored.Offsets[ckKey]; ok && len(off) > 0 && s.sub.Rewindable() {
			if err := s.sub.Rewind(off); err != nil {
				rr.logger.Warn("rewind failed; reading from the current position", "stream", in.Name, "err", err)
			}
		}
	}
	ri := &input{name: in.Name, conn: conn, key: ckKey, table: in.Table, sub: s.sub, release: s.release}
	ri.consumer = s.sub.Attach(rr.consumer(ri, source, in.Port))
	rr.mu.Lock()
	rr.inputs = append(rr.inputs, ri)
	rr.mu.Unlock()
	if perRule {
		w.injectors[ckKey] = injector{sub: s.sub, consumer: ri.consumer}
	}
	if s.logged != nil {
		// Segments go only once no restore can need them: after
		// every transactional sink committed the checkpoint.
		w.followers = append(w.followers, logTruncator{log: s.logged, key: ckKey, logger: rr.logger})
	}
	if s.upstream != nil {
		// Upstream offsets (a consumer group's) move only to where
		// no restore goes back behind.
		w.followers = append(w.followers, &upstreamCommit{src: s.upstream, key: ckKey, logger: rr.logger})
	}
	return s.sub, nil
}

// subscribe acquires the subscription input in reads: shared with every
// rule reading the same source with the same properties, or, perRule, the
// rule's own, its source made replayable (a durable log for push sources)
// and its offsets committed upstream only behind checkpoints. The second
// stage of a repartitioned rule reads its generation's records only.
func (rr *running) subscribe(p *prepared, in planner.Input, typ string, props map[string]any, perRule bool) (subscription, error) {
	key := propsKey(typ, props) + "|" + in.Name
	if perRule {
		key = "rule|" + rr.def.ID + "|" + key
	}
	gen := ""
	if t := rr.def.Task; t != nil && t.Topic != "" && !in.Table && in.Name == t.Stream {
		gen = t.Generation
		key += "|" + gen
	}
	var s subscription
	var err error
	s.sub, s.release, err = rr.rn.cfg.Streams.Acquire(key, func() (*stream.Subscription, error) {
		var wrap func(api.Source) (api.Source, error)
		if perRule || gen != "" {
			wrap = func(src api.Source) (api.Source, error) {
				if gen != "" {
					src = generationFilter{src: src, gen: gen}
				}
				if !perRule {
					return src, nil
				}
				if oc, ok := src.(api.OffsetCommitter); ok && rr.coord != nil {
					oc.CommitOnCheckpoints()
					s.upstream = oc
				}
				if _, ok := src.(api.Rewindable); ok {
					return src, nil
				}
				// A push source: make it replayable with a durable log.
				sync := sourcelog.SyncNone
				if v := rr.def.Options.SourceLogSync; v != "" {
					sync = sourcelog.Sync(v)
				}
				l, err := sourcelog.Open(src, rr.rn.sourceLogDir(rr.def.ID, in.Name), sourcelog.Options{Sync: sync, Clock: rr.rn.cfg.Clock})
				s.logged = l
				return l, err
			}
		}
		var state api.State
		if perRule {
			state = p.state
		}
		sessionID := ""
		// A spread rule's copy keeps no session with the broker: when
		// its node goes, the broker hands the group's messages to the
		// other copies instead of queueing them for this one.
		if perRule && (rr.def.Task == nil || rr.def.Task.Node == "") {
			sessionID = rr.rn.sessionID(rr.def.ID, in.Name)
		}
		return rr.rn.newSubscription(in.Def, typ, props, wrap, state, sessionID)
	})
	return s, err
}

// logTruncator drops source log segments behind completed checkpoints.
type logTruncator struct {
	log    *sourcelog.Log
	key    string
	logger *slog.Logger
}

func (t logTruncator) CheckpointCommitted(cp *checkpoint.Checkpoint) error {
	if off, ok := cp.Offsets[t.key]; ok && len(off) > 0 {
		if err := t.log.Truncate(off); err != nil {
			// Not fatal: the segments go at the next checkpoint.
			t.logger.Warn("truncate source log", "source", t.key, "err", err)
		}
	}
	return nil
}

// upstreamCommit commits a source's checkpointed offset upstream, off the
// goroutine that completed the checkpoint (a sink's or the rule's: a slow
// broker must not stall them). Commits do not queue up: while one is in
// flight, only the newest offset waits.
type upstreamCommit struct {
	src    api.OffsetCommitter
	key    string
	logger *slog.Logger

	mu   sync.Mutex
	next []byte
	busy bool
}

func (u *upstreamCommit) CheckpointCommitted(cp *checkpoint.Checkpoint) error {
	off, ok := cp.Offsets[u.key]
	if !ok || len(off) == 0 {
		return nil
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.next = off
	if !u.busy {
		u.busy = true
		// A panic in the source's commit is logged; the next checkpoint
		// tries again.
		panics.Go("commit offset upstream", func(e *panics.Error) {
			u.logger.Error("commit offset upstream panicked", "source", u.key, "err", e.Error(), "stack", string(e.Stack))
			u.mu.Lock()
			u.busy = false
			u.mu.Unlock()
		}, u.drain)
	}
	return nil
}

func (u *upstreamCommit) drain() {
	for {
		u.mu.Lock()
		off := u.next
		u.next = nil
		if off == nil {
			u.busy = false
			u.mu.Unlock()
			return
		}
		u.mu.Unlock()
		// The source bounds its own I/O; a failure waits for the next
		// checkpoint's commit.
		if err := u.src.CommitOffset(context.Background(), off); err != nil {
			u.logger.Warn("commit offset upstream", "source", u.key, "err", err)
		}
	}
}

func (rr *running) consumer(in *input, source, port int) *stream.Consumer {
	r := rr.built.Rule
	var match *stream.Match
	if k := rr.built.Plan.Index; k != nil && !in.table {
		match = &stream.Match{Column: k.Column, Values: k.Values}
	}
	var kept func() bool
	if !in.table {
		// A table keeps its rows; a rule reports what it kept.
		kept = r.DeliveryKept
	}
	return &stream.Consumer{
		Match: match,
		Deliver: func(ts []*row.Tuple) bool {
			return r.Send(operator.Item{Kind: operator.Data, Input: port, Source: source, Tuples: ts})
		},
		Delivered: r.EndDelivery,
		Kept:      kept,
		Barrier: func(id uint64, offset []byte) {
			if rr.coord != nil && !in.table {
				rr.coord.SourceReady(id, in.key, offset)
				r.Send(operator.Item{Kind: operator.Barrier, Barrier: id, Source: source})
			}
		},
		Error: func(err error) {
			r.Send(operator.Item{Kind: operator.Error, Err: err, Source: source})
		},
		End: func(err error) {
			if in.table {
				// A table's source ending is not the rule's end; its
				// source panicking is.
				if pe := (*panics.Error)(nil); errors.As(err, &pe) {
					rr.fail(pe)
				}
				return
			}
			rr.mu.Lock()
			rr.ended++
			stop := !rr.attaching && (rr.ended >= rr.streams || err != nil)
			if err != nil && rr.err == nil {
				rr.err = err
			}
			rr.mu.Unlock()
			if stop {
				go rr.Stop(context.Background())
			}
		},
	}
}

// fail stops the rule by error: a goroutine of it panicked (the panic is
// already logged with its stack). The first error wins.
func (rr *running) fail(err *panics.Error) {
	rr.mu.Lock()
	if rr.err == nil {
		rr.err = err
	}
	attaching := rr.attaching
	rr.mu.Unlock()
	if !attaching { // else attach stops the rule once it is over
		go rr.Stop(context.Background())
	}
}

// sessionID names what a rule has read from a stream, for sources that keep
// a position upstream (connector.Deps.SessionID).
func (rn *Engine) sessionID(ruleID, streamName string) string {
	node := rn.cfg.NodeID
	if rn.cfg.SessionScope != "" {
		node = rn.cfg.SessionScope
	}
	if node == "" {
		node = rn.cfg.Paths.Data
	}
	return node + "\x00" + ruleID + "\x00" + streamName
}

// sourceLogDir is where a rule's durable source log for a stream lives.
func (rn *Engine) sourceLogDir(ruleID, streamName string) string {
	return filepath.Join(rn.cfg.Paths.Data, "rule_"+guard.PathElem(ruleID), "sourcelog", guard.PathElem(streamName))
}

func (rn *Engine) newSubscription(def *ast.CreateStreamStmt, typ string, props map[string]any, wrap func(api.Source) (api.Source, error), state api.State, sessionID string) (*stream.Subscription, error) {
	entry, ok := rn.cfg.Registry.Source(typ)
	if !ok {
		return nil, fmt.Errorf("unknown source type %q (TYPE of stream %s)", typ, def.Name)
	}
	valid, err := entry.Spec.Validate(props)
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", def.Name, err)
	}
	deps := rn.cfg.Deps
	deps.State = state
	deps.SessionID = sessionID
	src, err := entry.New(valid, deps)
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", def.Name, err)
	}
	if wrap != nil {
		if src, err = wrap(src); err != nil {
			return nil, fmt.Errorf("stream %s: %w", def.Name, err)
		}
	}
	dec, err := newDecoder(def, rn.cfg.Schemas)
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", def.Name, err)
	}
	return stream.NewSubscription(def.Name, src, dec, rn.cfg.Clock, rn.cfg.Logger), nil
}

// newDecoder returns the decoder of a stream's FORMAT. Given the declared
// fields, a JSON decoder puts them into slots (format.TupleDecoder), the
// layout the rule's planner compiles column reads against. schemas resolves
// a protobuf stream's SCHEMAID.
func newDecoder(def *ast.CreateStreamStmt, schemas format.Schemas) (format.Decoder, error) {
	fmtName, _ := def.Option("FORMAT")
	if fmtName == "" {
		fmtName = "json"
	}
	opts := format.Options{Schemas: schemas}
	opts.SchemaID, _ = def.Option("SCHEMAID")
	if d, ok := def.Option("DELIMITER"); ok {
		opts.Delimiter = d
	}
	for _, f := range def.Fields {
		opts.Fields = append(opts.Fields, f.Name)
	}
	return format.New(fmtName, opts)
}

// Stop detaches the sources, lets the operators and sinks drain what they
// hold, and closes the sinks.
func (rr *running) Stop(ctx context.Context) error {
	var err error
	rr.stopOnce.Do(func() {
		// Stopping runs connector code (Close); a panic there must not
		// take the process down, nor leave Done open.
		if perr := panics.Call("stop rule "+rr.def.ID, func() { err = rr.shutdown(ctx) }); perr != nil {
			rr.logger.Error("rule stop panicked", "err", perr.Error(), "stack", string(perr.Stack))
			err = perr
		}
		rr.mu.Lock()
		close(rr.done)
		notify := rr.onDone
		rr.onDone = nil
		rr.mu.Unlock()
		for _, f := range notify {
			f()
		}
	})
	return err
}

// NotifyDone calls f once the rule has stopped (at once if it has), so that
// the rule manager watches it without a goroutine.
func (rr *running) NotifyDone(f func()) {
	rr.mu.Lock()
	select {
	case <-rr.done:
		rr.mu.Unlock()
		f()
		return
	default:
	}
	rr.onDone = append(rr.onDone, f)
	rr.mu.Unlock()
}

func (rr *running) shutdown(ctx context.Context) error {
	if rr.coord != nil {
		rr.coord.Stop()
	}
	rr.mu.Lock()
	inputs := rr.inputs
	rr.mu.Unlock()
	var errs []error
	for _, in := range inputs {
		// Released while attached: what a draining source still hands
		// over (stream.Drainer) reaches this rule, whose operators and
		// sinks then drain it with the rest.
		if err := in.release(ctx); err != nil {
			errs = append(errs, err)
		}
		in.sub.Detach(in.consumer)
	}
	if rr.lookupCancel != nil {
		rr.lookupCancel() // a lookup in flight must not hold up Stop
	}
	rr.built.Rule.Stop()
	errs = append(errs, rr.closeLookups(ctx))
	errs = append(errs, rr.closeSinks())
	return errors.Join(errs...)
}

func (rr *running) closeSinks() error {
	var errs []error
	for _, s := range rr.sinks {
		if err := s.sink.Close(context.Background()); err != nil {
			errs = append(errs, fmt.Errorf("close sink %s: %w", s.name, err))
		}
	}
	return errors.Join(errs...)
}

func (rr *running) Done() <-chan struct{} { return rr.done }

func (rr *running) Err() error {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	return rr.err
}

// Metrics returns the node metrics under eKuiper's keys, plus checkpoint
// figures.
func (rr *running) Metrics() map[string]any {
	out := map[string]any{}
	rr.mu.Lock()
	inputs := rr.inputs
	rr.mu.Unlock()
	for _, in := range inputs {
		st := in.sub.Status()
		prefix := "source_" + in.name + "_0_"
		out[prefix+"records_in_total"] = st.RecordsIn
		out[prefix+"records_out_total"] = st.RecordsIn - st.DecodeErrors
		out[prefix+"exceptions_total"] = st.DecodeErrors
		out[prefix+"connection_status"] = connStatus(st.State)
		out[prefix+"connection_last_connected_time"] = st.LastConnected
		out[prefix+"connection_last_disconnected_time"] = st.LastDisconnected
		out[prefix+"connection_last_disconnected_message"] = st.LastError
		// The last failure of the source: a record that did not decode
		// or a lost connection, whichever came last.
		exc, excTime := st.LastDecodeError, st.LastDecodeErrorTime
		if st.LastError != "" && st.LastDisconnected > excTime {
			exc, excTime = st.LastError, st.LastDisconnected
		}
		out[prefix+"last_exception"] = exc
		out[prefix+"last_exception_time"] = excTime
		if in.conn != "" {
			// eKuiper names a source on a named connection after it.
			cp := "source_" + in.conn + "_0_"
			out[cp+"connection_status"] = connStatus(st.State)
			out[cp+"connection_last_connected_time"] = st.LastConnected
			out[cp+"connection_last_disconnected_time"] = st.LastDisconnected
			out[cp+"connection_last_disconnected_message"] = st.LastError
		}
	}
	r := rr.built.Rule
	for i, op := range rr.built.Plan.Ops {
		prefix := fmt.Sprintf("op_%d_%s_0_", i+1, op.Name())
		for k, v := range r.OpMetrics[i].Snapshot() {
			out[prefix+k] = v
		}
	}
	rr.addSkipped(out, inputs)
	for i, s := range rr.sinks {
		prefix := fmt.Sprintf("sink_%s_0_", s.name)
		for k, v := range r.SinkMetrics[i].Snapshot() {
			out[prefix+k] = v
		}
		if s.conn != nil {
			state, conn, disc, msg := s.conn.Status()
			out[prefix+"connection_status"] = connStatus(state)
			out[prefix+"connection_last_connected_time"] = millisOf(conn)
			out[prefix+"connection_last_disconnected_time"] = millisOf(disc)
			out[prefix+"connection_last_disconnected_message"] = msg
		}
		if s.cache != nil {
			st := s.cache.Stats()
			// Delivered records only: taken by the sink at once or
			// replayed from the cache; cached and dropped ones are
			// counted apart below.
			out[prefix+"records_out_total"] = st.Delivered + st.Replayed
			out[prefix+"cache_records_cached_total"] = st.Cached
			out[prefix+"cache_records_replayed_total"] = st.Replayed
			out[prefix+"cache_records_dropped_total"] = st.Dropped
			out[prefix+"cache_records_failed_total"] = st.Failed
			out[prefix+"cache_length"] = int64(st.Length)
			out[prefix+"cache_memory_length"] = int64(st.MemoryLength)
			out[prefix+"cache_disk_length"] = int64(st.DiskLength)
			out[prefix+"cache_disk_bytes"] = st.DiskBytes
			out[prefix+"cache_oldest_age_ms"] = st.OldestAge.Milliseconds()
			out[prefix+"cache_disk_error"] = st.DiskError
		}
	}
	if rr.coord != nil {
		st := rr.coord.Stats()
		out["checkpoint_completed_total"] = st.Completed
		out["checkpoint_abandoned_total"] = st.Abandoned
		out["checkpoint_last_id"] = int64(st.LastID)
		out["checkpoint_last_time"] = st.LastTakenAt
		out["checkpoint_last_duration_ms"] = st.LastDuration.Milliseconds()
		out["checkpoint_last_size_bytes"] = int64(st.LastSizeBytes)
		out["checkpoint_last_error"] = st.LastError
	}
	return out
}

// addSkipped counts the deliveries the stream's index spared the rule as
// the rule would have counted them: each one preprocessed (one item in,
// one out) and then dropped by the WHERE's filter (one item in).
func (rr *running) addSkipped(out map[string]any, inputs []*input) {
	if rr.built.Plan.Index == nil {
		return
	}
	var n int64
	for _, in := range inputs {
		if !in.table {
			n += in.sub.Skipped(in.consumer)
		}
	}
	if n == 0 {
		return
	}
	ops := rr.built.Plan.Ops
	pre := fmt.Sprintf("op_1_%s_0_", ops[0].Name())
	filter := fmt.Sprintf("op_2_%s_0_", ops[1].Name())
	for _, k := range []string{pre + "records_in_total", pre + "records_out_total", filter + "records_in_total"} {
		if v, ok := out[k].(int64); ok {
			out[k] = v + n
		}
	}
}

func millisOf(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func connStatus(state string) int64 {
	switch state {
	case "connected":
		return 1
	case "connecting":
		return 0
	}
	return -1
}

var _ rulemgr.ScanTabler = (*running)(nil)

// ScanTables returns at most limit rows of the scan tables the rule's join
// holds. The join publishes its tables at each change, so this reads them
// without stopping the rule; each row is copied into a new map.
func (rr *running) ScanTables(limit int) ([]rulemgr.TableRow, error) {
	var tables []operator.TableRows
	for _, op := range rr.built.Plan.Ops {
		if j, ok := op.(*operator.Join); ok {
			tables = append(tables, j.ScanTables()...)
		}
	}
	if len(tables) == 0 {
		return nil, rulemgr.ErrNoScanTable
	}
	out := []rulemgr.TableRow{}
	for _, t := range tables {
		for _, tu := range t.Rows {
			if len(out) >= limit {
				return out, nil
			}
			m := map[string]any{}
			tu.Range("", func(name string, v any) { m[name] = v })
			out = append(out, rulemgr.TableRow{Table: t.Table, Row: m})
		}
	}
	return out, nil
}

// Topo returns the rule's graph in eKuiper's shape.
func (rr *running) Topo() map[string]any {
	var sources []any
	edges := map[string]any{}
	first := ""
	var names []string
	for i, op := range rr.built.Plan.Ops {
		names = append(names, fmt.Sprintf("op_%d_%s", i+1, op.Name()))
	}
	if len(names) > 0 {
		first = names[0]
	}
	for _, in := range rr.built.Plan.Inputs {
		name := "source_" + in.Name
		sources = append(sources, name)
		edges[name] = []any{first}
	}
	for i := 0; i+1 < len(names); i++ {
		edges[names[i]] = []any{names[i+1]}
	}
	var sinks []any
	for _, s := range rr.sinks {
		sinks = append(sinks, "sink_"+s.name)
	}
	if len(names) > 0 {
		edges[names[len(names)-1]] = sinks
	}
	return map[string]any{"sources": sources, "edges": edges}
}
