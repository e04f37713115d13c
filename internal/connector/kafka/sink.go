package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/connector/connection"
	"github.com/rekuiper/rekuiper/internal/output"
	"github.com/rekuiper/rekuiper/internal/value"
)

// SinkSpec is the kafka sink's property spec.
func SinkSpec() connector.Spec {
	return connector.Spec{Props: append(commonProps(),
		connector.Prop{Name: "topic", Type: connector.TypeString, Required: true, Target: true, Doc: "topic; may be a template over the first row"},
		connector.Prop{Name: "key", Type: connector.TypeString, Doc: "record key: a template over the first row, or the name of a field of it, or a literal"},
		connector.Prop{Name: "headers", Type: connector.TypeMap, Doc: "record headers; values may be templates"},
		connector.Prop{Name: "compression", Type: connector.TypeString, Default: "none", Enum: []any{"none", "gzip", "snappy", "lz4", "zstd"}, Doc: "Kafka batch compression"},
		connector.Prop{Name: "requiredACKs", Type: connector.TypeInt, Default: 1, Enum: []any{0, 1, -1}, Doc: "0 none, 1 leader, -1 all in-sync replicas (forced with transactionalID)"},
		connector.Prop{Name: "batchSize", Type: connector.TypeInt, Default: 1, Max: connector.MaxBatchSize, Doc: "records sent before Write waits for acknowledgements; 1 waits for each"},
		connector.Prop{Name: "lingerInterval", Type: connector.TypeDuration, Default: 0, Max: "1h", Doc: "how long the client waits to fill a batch"},
		connector.Prop{Name: "maxAttempts", Type: connector.TypeInt, Default: 3, Doc: "produce retries of one record"},
		connector.Prop{Name: "transactionalID", Type: connector.TypeString, Doc: "write in transactions committed with checkpoints (qos 2); the engine sets a rule-derived id"},
		connector.Prop{Name: "transactionTimeout", Type: connector.TypeDuration, Default: "60s", Doc: "broker-side timeout of an open transaction"},
		connector.Prop{Name: "checkpointTopic", Type: connector.TypeString, Default: DefaultCheckpointTopic, Doc: "bookkeeping topic of transactional sinks: each transaction records its checkpoint id there (created compacted when missing)"},
	), Ping: true}
}

// Sink produces one record per SinkMessage (the payload is the value).
//
// Without transactionalID, batchSize 1 makes Write wait for the broker's
// acknowledgement; batchSize n > 1 makes Write hand the record to the client
// and wait for acknowledgements every n records, returning any failure of
// the batch then (the failed records themselves are not kept by the sink
// cache: at-least-once holds only with batchSize 1). With transactionalID
// the sink is transactional (see the package documentation): Write only
// buffers; PreCommit, Commit and Abort report the failures. Each transaction
// also records its checkpoint id in the checkpoint topic, which Connect
// reads back for LastCommitted, and a checkpoint at or below LastCommitted
// (a replay) is aborted instead of committed.
//
// Transient failures (timeouts, broker errors Kafka marks retriable, lost
// connections, a cancelled Write) wrap api.ErrRetryable. All methods may be
// called from different goroutines; a mutex serialises them. The client's
// goroutines stop in Close.
type Sink struct {
	topic     *output.PropTemplate
	key       *output.PropTemplate
	keyRaw    string
	headers   map[string]*output.PropTemplate
	batchSize int
	txnID     string
	ckTopic   string
	opts      []kgo.Opt
	base      []kgo.Opt // connection options only (checkpoint topic reader)
	connectTO time.Duration
	txnTO     time.Duration
	logger    *slog.Logger
	reg       *connection.Registry
	connKey   string

	mu  sync.Mutex
	use *connection.Use     // from the first Connect to Close
	tr  *connection.Tracker // cl's status
	// link is this sink's connection status (Status), kept across failed
	// connects.
	link      *connection.Link
	cl        *kgo.Client
	unflushed int

	// errMu guards asyncErr: promises may run inside Produce, with mu held.
	errMu    sync.Mutex
	asyncErr error
	// transactional state
	inTxn   bool
	pending *uint64       // checkpoint that PreCommit prepared
	held    []*kgo.Record // written after PreCommit, produced after Commit
	last    uint64        // last checkpoint committed under txnID
	book    bookkeeping   // how far the checkpoint topic was read
}

var (
	_ api.Sink                = (*Sink)(nil)
	_ connector.Transactional = (*Sink)(nil)
)

// NewSink builds a kafka sink from validated props.
func NewSink(props map[string]any, deps connector.Deps) (api.Sink, error) {
	opts, err := clientOpts(props)
	if err != nil {
		return nil, err
	}
	s := &Sink{
		link:      connection.NewLink(deps.Clock),
		batchSize: int(connector.Get[int64](props, "batchSize")),
		keyRaw:    connector.Get[string](props, "key"),
		txnID:     connector.Get[string](props, "transactionalID"),
		ckTopic:   connector.Get[string](props, "checkpointTopic"),
		base:      slices.Clip(opts),
		connectTO: connector.Get[time.Duration](props, "connectTimeout"),
		txnTO:     connector.Get[time.Duration](props, "transactionTimeout"),
		logger:    deps.Logger,
		reg:       deps.Connections,
		connKey:   clusterKey(props),
		headers:   map[string]*output.PropTemplate{},
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	if s.batchSize < 1 {
		return nil, fmt.Errorf("property \"batchSize\": %d is less than 1", s.batchSize)
	}
	if s.topic, err = output.NewPropTemplate("topic", connector.Get[string](props, "topic")); err != nil {
		return nil, err
	}
	if s.topic.String() == "" {
		return nil, errors.New("property \"topic\" is empty")
	}
	if s.txnID != "" && s.ckTopic == "" {
		return nil, errors.New("property \"checkpointTopic\" is empty")
	}
	if s.txnID != "" && s.topic.Static() && s.topic.String() == s.ckTopic {
		return nil, fmt.Errorf("property \"checkpointTopic\": %s is the sink's topic", s.ckTopic)
	}
	if s.key, err = output.NewPropTemplate("key", s.keyRaw); err != nil {
		return nil, err
	}
	for k, v := range connector.Get[map[string]any](props, "headers") {
		t, err := output.NewPropTemplate("headers."+k, value.ToString(v))
		if err != nil {
			return nil, err
		}
		s.headers[k] = t
	}
	switch connector.Get[string](props, "compression") {
	case "gzip":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.GzipCompression()))
	case "snappy":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.SnappyCompression()))
	case "lz4":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.Lz4Compression()))
	case "zstd":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.ZstdCompression()))
	default:
		opts = append(opts, kgo.ProducerBatchCompression(kgo.NoCompression()))
	}
	opts = append(opts,
		kgo.ProducerLinger(connector.Get[time.Duration](props, "lingerInterval")),
		kgo.RecordRetries(int(max(connector.Get[int64](props, "maxAttempts"), 1))),
		kgo.RecordDeliveryTimeout(30*time.Second),
	)
	if s.txnID != "" {
		opts = append(opts, kgo.TransactionalID(s.txnID), kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.TransactionTimeout(s.txnTO))
	} else {
		switch connector.Get[int64](props, "requiredACKs") {
		case 0:
			opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
		case 1:
			opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
		default:
			opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
		}
	}
	s.opts = opts
	return s, nil
}

// Connect creates the client and checks that a broker answers. A
// transactional sink also initialises its producer id, which fences and
// aborts any transaction a previous instance left open, creates the
// checkpoint topic when missing and reads it (LastCommitted). The read may
// wait behind another producer's open transaction in that topic: it is
// bounded by connectTimeout plus transactionTimeout, the rest by
// connectTimeout.
func (s *Sink) Connect(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closeClientLocked()
	if s.use == nil {
		s.use = s.reg.Join(s.connKey)
	}
	tr := s.use.Track()
	fail := func(err error) error {
		tr.Failed(err)
		s.link.Failed(err)
		tr.Close()
		return err
	}
	cl, err := kgo.NewClient(append(s.opts, kgo.WithHooks(brokerHook{tr, s.link}))...)
	if err != nil {
		return fail(fmt.Errorf("create kafka client: %w", err))
	}
	cctx, cancel := context.WithTimeout(ctx, s.connectTO)
	defer cancel()
	if err := cl.Ping(cctx); err != nil {
		cl.Close()
		return fail(fmt.Errorf("connect to kafka: %w", err))
	}
	s.cl, s.inTxn, s.pending, s.held, s.unflushed = cl, false, nil, nil, 0
	if s.txnID != "" {
		if err := s.initTransactionsLocked(cctx, ctx); err != nil {
			cl.Close()
			s.cl = nil
			return fail(err)
		}
	}
	tr.Connected()
	s.link.Connected()
	s.tr = tr
	return nil
}

// Status reports the connection status (stream.ConnStatus).
func (s *Sink) Status() (state string, lastConnected, lastDisconnected time.Time, lastErr string) {
	return s.link.Status()
}

// report records the outcome of an operation on the client's tracker and
// on the link, and returns err.
func (s *Sink) report(err error) error {
	s.link.Report(err)
	return s.tr.Report(err)
}

// initTransactionsLocked initialises the transactional producer (ctx), then
// makes sure the checkpoint topic exists and reads it (parent, bounded
// here). mu is held and s.cl set.
func (s *Sink) initTransactionsLocked(ctx, parent context.Context) error {
	if _, _, err := s.cl.ProducerID(ctx); err != nil {
		return fmt.Errorf("init kafka transactional producer %s: %w", s.txnID, err)
	}
	created, err := s.ensureCheckpointTopicLocked(ctx)
	if err != nil {
		return err
	}
	if created {
		clear(s.book.next)
		return nil
	}
	sctx, cancel := context.WithTimeout(parent, s.connectTO+s.txnTO)
	defer cancel()
	return s.scanLocked(sctx)
}

// closeClientLocked stops the client and its tracker; mu is held.
func (s *Sink) closeClientLocked() {
	if s.cl != nil {
		s.cl.Close()
		s.cl = nil
	}
	s.tr.Close()
	s.tr = nil
}

// record builds the record of msg; templates render over its first row.
func (s *Sink) record(msg *api.SinkMessage) (*kgo.Record, error) {
	var row map[string]any
	if len(msg.Rows) > 0 {
		row = msg.Rows[0]
	}
	topic, err := s.topic.Render(row)
	if err != nil {
		return nil, fmt.Errorf("render kafka topic: %w", err)
	}
	r := &kgo.Record{Topic: topic, Value: msg.Payload}
	if s.keyRaw != "" {
		var key string
		if v, ok := row[s.keyRaw]; ok && s.key.Static() {
			key = value.ToString(v)
		} else if key, err = s.key.Render(row); err != nil {
			return nil, fmt.Errorf("render kafka key: %w", err)
		}
		r.Key = []byte(key)
	}
	for _, k := range slices.Sorted(maps.Keys(s.headers)) {
		v, err := s.headers[k].Render(row)
		if err != nil {
			return nil, fmt.Errorf("render kafka header %s: %w", k, err)
		}
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: k, Value: []byte(v)})
	}
	return r, nil
}

// Write produces msg; see Sink for when it waits.
func (s *Sink) Write(ctx context.Context, msg *api.SinkMessage) error {
	r, err := s.record(msg)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cl == nil {
		return api.Retryable(errors.New("kafka sink not connected"))
	}
	if s.txnID != "" {
		if s.pending != nil {
			s.held = append(s.held, r)
			return nil
		}
		return s.produceInTxn(ctx, r)
	}
	if s.batchSize == 1 {
		if err := s.cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			return s.report(classify(fmt.Errorf("produce to kafka topic %s: %w", r.Topic, err)))
		}
		return s.report(nil)
	}
	// The record outlives this call's ctx: Flush or the next Write reports it.
	s.cl.Produce(context.WithoutCancel(ctx), r, s.promise)
	s.unflushed++
	if s.unflushed < s.batchSize {
		return nil
	}
	return s.flushLocked(ctx)
}

func (s *Sink) promise(r *kgo.Record, err error) {
	if err == nil {
		return
	}
	s.errMu.Lock()
	defer s.errMu.Unlock()
	if s.asyncErr == nil {
		s.asyncErr = fmt.Errorf("produce to kafka topic %s: %w", r.Topic, err)
	}
}

// flushLocked waits for all buffered records and returns the first failure
// since the last flush; mu is held.
func (s *Sink) flushLocked(ctx context.Context) error {
	s.unflushed = 0
	err := s.cl.Flush(ctx)
	s.errMu.Lock()
	if err == nil {
		err = s.asyncErr
	}
	s.asyncErr = nil
	s.errMu.Unlock()
	return s.report(classify(err))
}

func (s *Sink) produceInTxn(ctx context.Context, r *kgo.Record) error {
	if !s.inTxn {
		if err := s.cl.BeginTransaction(); err != nil {
			return fmt.Errorf("begin kafka transaction: %w", err)
		}
		s.inTxn = true
	}
	// A cancelled record would fail the whole transaction: it lives until
	// PreCommit or Abort instead.
	s.cl.Produce(context.WithoutCancel(ctx), r, s.promise)
	return nil
}

// PreCommit flushes the open transaction. Records written after a failed
// checkpoint's PreCommit join the transaction now.
func (s *Sink) PreCommit(ctx context.Context, checkpointID uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.txnID == "" {
		if s.cl == nil {
			return nil
		}
		return s.flushLocked(ctx)
	}
	if s.cl == nil {
		return api.Retryable(errors.New("kafka sink not connected"))
	}
	for _, r := range s.held {
		if err := s.produceInTxn(ctx, r); err != nil {
			return err
		}
	}
	s.held = nil
	id := checkpointID
	if s.inTxn {
		// Committed with the records, or aborted with them.
		s.cl.Produce(context.WithoutCancel(ctx), &kgo.Record{Topic: s.ckTopic, Key: []byte(s.txnID), Value: encodeMarker(checkpointID)}, s.promise)
	}
	if err := s.flushLocked(ctx); err != nil {
		return fmt.Errorf("flush kafka transaction for checkpoint %d: %w", checkpointID, err)
	}
	s.pending = &id
	return nil
}

// Commit commits the transaction prepared by PreCommit(checkpointID) and
// produces the records held back since then in a new transaction. A Commit
// of an older checkpoint than the prepared one does nothing.
func (s *Sink) Commit(ctx context.Context, checkpointID uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.txnID == "" {
		return nil
	}
	if s.pending == nil || checkpointID < *s.pending {
		return nil
	}
	if checkpointID > *s.pending {
		return fmt.Errorf("commit checkpoint %d: prepared checkpoint is %d", checkpointID, *s.pending)
	}
	if s.cl == nil {
		return api.Retryable(errors.New("kafka sink not connected"))
	}
	if s.inTxn {
		if err := s.cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			return s.report(classify(fmt.Errorf("commit kafka transaction for checkpoint %d: %w", checkpointID, err)))
		}
		s.inTxn = false
		s.last = checkpointID
	}
	s.pending = nil
	held := s.held
	s.held = nil
	for _, r := range held {
		if err := s.produceInTxn(ctx, r); err != nil {
			return err
		}
	}
	return nil
}

// Abort aborts the open transaction and drops held records.
func (s *Sink) Abort(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending, s.held = nil, nil
	s.errMu.Lock()
	s.asyncErr = nil
	s.errMu.Unlock()
	if s.txnID == "" || s.cl == nil || !s.inTxn {
		return nil
	}
	return s.abortTxnLocked(ctx)
}

// abortTxnLocked aborts the open transaction; mu is held.
func (s *Sink) abortTxnLocked(ctx context.Context) error {
	s.inTxn = false
	if err := s.cl.AbortBufferedRecords(ctx); err != nil {
		return fmt.Errorf("abort kafka records: %w", err)
	}
	s.errMu.Lock()
	s.asyncErr = nil
	s.errMu.Unlock()
	if err := s.cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
		return fmt.Errorf("abort kafka transaction: %w", err)
	}
	return nil
}

// Close flushes (non-transactional) or aborts the open transaction
// (transactional: uncommitted results are replayed from the checkpoint) and
// stops the client.
func (s *Sink) Close(ctx context.Context) error {
	var err error
	if s.txnID != "" {
		err = s.Abort(ctx)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	defer func() {
		s.use.Leave()
		s.use = nil
	}()
	if s.cl == nil {
		return err
	}
	if s.txnID == "" {
		fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err = s.flushLocked(fctx)
		cancel()
	}
	s.closeClientLocked()
	return err
}
