package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/connector/connection"
)

// SourceSpec is the kafka source's property spec. The stream's DATASOURCE
// is the topic.
func SourceSpec() connector.Spec {
	return connector.Spec{Props: append(commonProps(),
		connector.Prop{Name: "datasource", Type: connector.TypeString, Required: true, Target: true, Doc: "topic"},
		connector.Prop{Name: "groupID", Type: connector.TypeString, Doc: "consumer group; offsets are committed to it every 5s and on stop, or with checkpoints (qos >= 1) when a checkpoint is committed"},
		connector.Prop{Name: "partition", Type: connector.TypeInt, Default: -1, Doc: "read only this partition (no group); -1 reads all"},
		connector.Prop{Name: "keyField", Type: connector.TypeString, Doc: "payload field whose value every record carries as its Kafka key; lets a rule grouped by it run as one task per partition in a cluster"},
		connector.Prop{Name: "maxBytes", Type: connector.TypeInt, Default: 1 << 20, Max: 256 << 20, Doc: "maximum bytes of one fetch"},
		connector.Prop{Name: "maxAttempts", Type: connector.TypeInt, Default: 3, Doc: "retries of one request"},
	), Ping: true}
}

// Source reads one topic. Without groupID it reads all partitions (or the
// fixed partition) from the earliest offset, or from the rewound offsets;
// partitions created after Connect are not read. With groupID it joins the
// group and starts from the group's committed offsets (earliest when none)
// or from the rewound offsets when they are set. It commits to the group
// the offsets of the records Read returned, every 5 s, on a rebalance and
// on Close; after CommitOnCheckpoints only in CommitOffset (see
// api.OffsetCommitter). It reads read_committed: records of aborted
// transactions are skipped.
//
// Read, Offset and Rewind are called from the engine's read loop;
// CommitOffset may be called from another goroutine. The franz-go client
// owns its goroutines (autocommit included); Close stops them.
type Source struct {
	topic     string
	group     string
	partition int32
	opts      []kgo.Opt
	base      []kgo.Opt // connection options only: no group, no consuming
	connectTO time.Duration
	logger    *slog.Logger
	reg       *connection.Registry
	key       string

	checkpointed bool // CommitOnCheckpoints: no commits of its own

	use     *connection.Use     // from the first Connect to Close
	tr      *connection.Tracker // cl's status
	buf     []*kgo.Record       // fetched, not yet returned by Read
	polled  []*kgo.Record       // returned by Read and not yet marked, then buf
	rewound bool                // Rewind while connected: Read reconnects first

	mu        sync.Mutex
	cl        *kgo.Client     // written by the read loop, read by CommitOffset
	next      map[int32]int64 // next offset per partition after the last Read
	topicJSON []byte          // the topic as a JSON string, for Offset
}

var (
	_ api.Source          = (*Source)(nil)
	_ api.OffsetCommitter = (*Source)(nil)
)

// NewSource builds a kafka source from validated props.
func NewSource(props map[string]any, deps connector.Deps) (api.Source, error) {
	opts, err := clientOpts(props)
	if err != nil {
		return nil, err
	}
	s := &Source{
		base:      slices.Clip(opts),
		topic:     connector.Get[string](props, "datasource"),
		group:     connector.Get[string](props, "groupID"),
		partition: int32(connector.Get[int64](props, "partition")),
		connectTO: connector.Get[time.Duration](props, "connectTimeout"),
		logger:    deps.Logger,
		reg:       deps.Connections,
		key:       clusterKey(props),
		next:      map[int32]int64{},
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	if s.topic == "" {
		return nil, errors.New("property \"datasource\" (topic) is empty")
	}
	if s.partition < -1 {
		return nil, fmt.Errorf("property \"partition\": %d is negative", s.partition)
	}
	if s.partition >= 0 && s.group != "" {
		return nil, errors.New("properties \"partition\" and \"groupID\" exclude each other")
	}
	maxBytes := connector.Get[int64](props, "maxBytes")
	if maxBytes <= 0 || maxBytes > 1<<30 {
		return nil, fmt.Errorf("property \"maxBytes\": %d is out of range 1..1GiB", maxBytes)
	}
	opts = append(opts,
		kgo.FetchMaxBytes(int32(maxBytes)),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.RequestRetries(int(max(connector.Get[int64](props, "maxAttempts"), 1))),
	)
	if s.group != "" {
		opts = append(opts,
			kgo.ConsumerGroup(s.group),
			kgo.ConsumeTopics(s.topic),
			kgo.AdjustFetchOffsetsFn(s.adjustOffsets),
		)
	}
	s.opts = opts
	return s, nil
}

// adjustOffsets replaces the group's committed offsets with rewound or
// already read ones, so a rebalance or restore resumes where Read stopped.
func (s *Source) adjustOffsets(_ context.Context, in map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for p := range in[s.topic] {
		if off, ok := s.next[p]; ok {
			in[s.topic][p] = kgo.NewOffset().At(off).WithEpoch(-1)
		}
	}
	return in, nil
}

// CommitOnCheckpoints turns autocommit off: offsets go to the group only
// in CommitOffset. Call it before Connect.
func (s *Source) CommitOnCheckpoints() { s.checkpointed = true }

// Connect creates the client and checks that the brokers answer and the
// topic exists.
func (s *Source) Connect(ctx context.Context) error {
	s.closeClient()
	if s.use == nil {
		s.use = s.reg.Join(s.key)
	}
	tr := s.use.Track()
	fail := func(err error) error {
		tr.Failed(err)
		tr.Close()
		return err
	}
	opts := append(slices.Clip(s.opts), kgo.WithHooks(brokerHook{tr: tr}))
	if s.group != "" {
		// Autocommit commits only what markRead marked, so never a
		// record Read has not returned yet.
		commit := kgo.AutoCommitMarks()
		if s.checkpointed {
			commit = kgo.DisableAutoCommit()
		}
		opts = append(opts, commit)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fail(fmt.Errorf("create kafka client: %w", err))
	}
	cctx, cancel := context.WithTimeout(ctx, s.connectTO)
	defer cancel()
	parts, err := topicPartitions(cctx, cl, s.topic)
	if err != nil {
		cl.Close()
		return fail(err)
	}
	s.buf, s.polled, s.rewound = nil, nil, false
	if s.group == "" {
		s.mu.Lock()
		assign := map[int32]kgo.Offset{}
		for _, p := range parts {
			if s.partition >= 0 && p != s.partition {
				continue
			}
			if off, ok := s.next[p]; ok {
				assign[p] = kgo.NewOffset().At(off)
			} else {
				assign[p] = kgo.NewOffset().AtStart()
			}
		}
		s.mu.Unlock()
		if len(assign) == 0 {
			cl.Close()
			return fail(fmt.Errorf("topic %s has no partition %d", s.topic, s.partition))
		}
		cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{s.topic: assign})
	}
	tr.Connected()
	s.mu.Lock()
	s.cl = cl
	s.mu.Unlock()
	s.tr = tr
	return nil
}

// closeClient stops the client and its tracker. Closing the client leaves
// the group, which commits the marked offsets first (franz-go's default
// revoke).
func (s *Source) closeClient() {
	if s.cl != nil {
		s.markRead()
		s.mu.Lock()
		cl := s.cl
		s.cl = nil
		s.mu.Unlock()
		cl.Close()
	}
	s.tr.Close()
	s.tr = nil
}

// markRead marks the records Read returned for the group's autocommit (a
// no-op without a group or with checkpoints). Read calls it once per
// fetch, when it returned the fetch's last record.
func (s *Source) markRead() {
	n := len(s.polled) - len(s.buf)
	if n > 0 {
		s.cl.MarkCommitRecords(s.polled[:n]...)
	}
	s.polled = s.polled[n:]
}

func topicPartitions(ctx context.Context, cl *kgo.Client, topic string) ([]int32, error) {
	md, err := kadm.NewClient(cl).Metadata(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("kafka metadata of topic %s: %w", topic, err)
	}
	td, ok := md.Topics[topic]
	if !ok {
		return nil, fmt.Errorf("kafka topic %s not found", topic)
	}
	if td.Err != nil {
		return nil, fmt.Errorf("kafka topic %s: %w", topic, td.Err)
	}
	return slices.Sorted(maps.Keys(td.Partitions)), nil
}

// Read returns the next record: Payload is the value, meta holds topic,
// partition, offset, key, headers and timestamp (milliseconds).
func (s *Source) Read(ctx context.Context) (*api.Message, error) {
	if s.cl == nil {
		return nil, errors.New("kafka source not connected")
	}
	if s.rewound {
		if err := s.Connect(ctx); err != nil {
			return nil, fmt.Errorf("seek after rewind: %w", err)
		}
	}
	for len(s.buf) == 0 {
		fs := s.cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if fs.IsClientClosed() {
			return nil, errors.New("kafka client closed")
		}
		var errs []error
		for _, fe := range fs.Errors() {
			if errors.Is(fe.Err, context.Canceled) || errors.Is(fe.Err, context.DeadlineExceeded) {
				continue
			}
			errs = append(errs, fmt.Errorf("fetch %s[%d]: %w", fe.Topic, fe.Partition, fe.Err))
		}
		s.buf = fs.Records()
		s.polled = s.buf
		if len(s.buf) == 0 && len(errs) > 0 {
			err := errors.Join(errs...)
			s.tr.Failed(err)
			return nil, err
		}
		if len(s.buf) > 0 {
			s.tr.Connected()
		}
		for _, err := range errs {
			s.logger.Warn("kafka fetch", slog.Any("error", err))
		}
	}
	r := s.buf[0]
	s.buf = s.buf[1:]
	if len(s.buf) == 0 {
		s.markRead()
	}
	s.mu.Lock()
	s.next[r.Partition] = r.Offset + 1
	s.mu.Unlock()
	meta := map[string]any{
		"topic":     r.Topic,
		"partition": int64(r.Partition),
		"offset":    r.Offset,
		"key":       string(r.Key),
		"timestamp": r.Timestamp.UnixMilli(),
	}
	if len(r.Headers) > 0 {
		h := make(map[string]any, len(r.Headers))
		for _, kv := range r.Headers {
			h[kv.Key] = string(kv.Value)
		}
		meta["headers"] = h
	}
	return &api.Message{Payload: r.Value, Meta: meta}, nil
}

// Close stops the client. In group mode it commits the offsets of the
// records Read returned (not after CommitOnCheckpoints) and leaves the
// group.
func (s *Source) Close(context.Context) error {
	s.closeClient()
	s.use.Leave()
	s.use = nil
	s.buf, s.polled, s.rewound = nil, nil, false
	return nil
}

// sourceOffset is the versioned offset encoding: {"v":1,"topic":..,
// "next":{"<partition>":<next offset>}}.
type sourceOffset struct {
	V     int              `json:"v"`
	Topic string           `json:"topic"`
	Next  map[string]int64 `json:"next"`
}

// Offset returns the next offset of every partition read so far (and of
// every rewound partition). The engine takes it after every record, so it
// is encoded by hand: the same bytes as json.Marshal of a sourceOffset
// (partitions sorted as strings), at a fraction of the cost.
func (s *Source) Offset() ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.topicJSON == nil {
		t, err := json.Marshal(s.topic)
		if err != nil {
			return nil, err
		}
		s.topicJSON = t
	}
	type part struct {
		key  string
		next int64
	}
	parts := make([]part, 0, len(s.next))
	for p, n := range s.next {
		parts = append(parts, part{strconv.Itoa(int(p)), n})
	}
	slices.SortFunc(parts, func(a, b part) int { return strings.Compare(a.key, b.key) })
	b := make([]byte, 0, 32+len(s.topicJSON)+24*len(parts))
	b = append(b, `{"v":1,"topic":`...)
	b = append(b, s.topicJSON...)
	b = append(b, `,"next":{`...)
	for i, pt := range parts {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, pt.key...)
		b = append(b, `":`...)
		b = strconv.AppendInt(b, pt.next, 10)
	}
	return append(b, "}}"...), nil
}

// Rewind makes Read continue at the offsets in b: partitions in b resume at
// their offset; the others, which had not been read when the offset was
// taken, start at the earliest offset (at the group's committed offset with
// groupID). It drops records already fetched; when connected, the next Read
// reconnects at these offsets. It is idempotent.
func (s *Source) Rewind(b []byte) error {
	next, err := s.decodeOffset(b)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.next = next
	s.mu.Unlock()
	s.buf, s.polled = nil, nil
	// A new client starts at exactly these offsets; doing it in Read keeps
	// Rewind free of I/O.
	s.rewound = s.cl != nil
	return nil
}

// decodeOffset returns the next offset per partition of an offset taken by
// Offset.
func (s *Source) decodeOffset(b []byte) (map[int32]int64, error) {
	var o sourceOffset
	if err := connector.DecodeOffset("kafka", b, &o); err != nil {
		return nil, err
	}
	if o.Topic != s.topic {
		return nil, fmt.Errorf("kafka offset is for topic %q, not %q", o.Topic, s.topic)
	}
	next := make(map[int32]int64, len(o.Next))
	for k, n := range o.Next {
		p, err := strconv.ParseInt(k, 10, 32)
		if err != nil || p < 0 || n < 0 {
			return nil, fmt.Errorf("decode kafka offset: bad partition %q or offset %d", k, n)
		}
		next[int32(p)] = n
	}
	return next, nil
}

// CommitOffset commits offset, taken by Offset, to the consumer group
// (without groupID it does nothing). It waits at most connectTimeout.
func (s *Source) CommitOffset(ctx context.Context, offset []byte) error {
	if s.group == "" {
		return nil
	}
	next, err := s.decodeOffset(offset)
	if err != nil || len(next) == 0 {
		return err
	}
	s.mu.Lock()
	cl := s.cl
	s.mu.Unlock()
	if cl == nil {
		return errors.New("commit kafka offsets: source not connected")
	}
	offs := make(map[int32]kgo.EpochOffset, len(next))
	for p, n := range next {
		offs[p] = kgo.EpochOffset{Epoch: -1, Offset: n}
	}
	ctx, cancel := context.WithTimeout(ctx, s.connectTO)
	defer cancel()
	var cerr error
	cl.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{s.topic: offs},
		func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			if err != nil {
				cerr = err
				return
			}
			cerr = commitResponseErr(resp)
		})
	if cerr != nil {
		return fmt.Errorf("commit kafka offsets of group %s: %w", s.group, cerr)
	}
	return nil
}

func commitResponseErr(resp *kmsg.OffsetCommitResponse) error {
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return fmt.Errorf("partition %d: %w", p.Partition, err)
			}
		}
	}
	return nil
}
