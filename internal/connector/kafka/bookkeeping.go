package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rekuiper/rekuiper/api"
)

// DefaultCheckpointTopic is the default bookkeeping topic of transactional
// sinks (property checkpointTopic).
const DefaultCheckpointTopic = "rekuiper_checkpoints"

// markerVersion is the version of the bookkeeping record's value.
const markerVersion = 1

// marker is the value of a bookkeeping record: the checkpoint whose
// transaction the record belongs to. Its key is the transactional id.
type marker struct {
	V          int    `json:"v"`
	Checkpoint uint64 `json:"checkpoint"`
}

func encodeMarker(id uint64) []byte {
	b, _ := json.Marshal(marker{V: markerVersion, Checkpoint: id})
	return b
}

// decodeMarker returns the checkpoint id of a bookkeeping record's value;
// ok is false for a value this version does not understand.
func decodeMarker(b []byte) (id uint64, ok bool) {
	var m marker
	if err := json.Unmarshal(b, &m); err != nil || m.V != markerVersion {
		return 0, false
	}
	return m.Checkpoint, true
}

// bookkeeping is how far a transactional sink has read its checkpoint
// topic: a later scan reads only what was appended since.
type bookkeeping struct {
	next map[int32]int64 // next offset to read, per partition
}

// ensureCheckpointTopicLocked creates the checkpoint topic when it does not
// exist: one partition, the broker's default replication, compacted (the
// latest record of each transactional id is all LastCommitted needs). A
// broker that refuses the compaction config gets a plain topic, noted in
// the log; a topic that exists is used as it is (also when this client may
// not create topics). created reports that this call made the (empty)
// topic; mu is held.
//
// It asks to create before looking: the client caches an unknown topic for
// admin requests, which would hide the topic just created.
func (s *Sink) ensureCheckpointTopicLocked(ctx context.Context) (created bool, err error) {
	adm := kadm.NewClient(s.cl)
	compact := "compact"
	_, err = adm.CreateTopic(ctx, 1, -1, map[string]*string{"cleanup.policy": &compact}, s.ckTopic)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, kerr.TopicAlreadyExists):
		return false, nil
	}
	_, plainErr := adm.CreateTopic(ctx, 1, -1, nil, s.ckTopic)
	switch {
	case plainErr == nil:
		s.logger.Warn("kafka checkpoint topic created without compaction; it grows by two records per transaction",
			"topic", s.ckTopic, "err", err)
		return true, nil
	case errors.Is(plainErr, kerr.TopicAlreadyExists):
		return false, nil
	}
	if td, lerr := adm.ListTopics(ctx, s.ckTopic); lerr == nil && td.Has(s.ckTopic) && td[s.ckTopic].Err == nil {
		return false, nil
	}
	return false, classify(fmt.Errorf("create kafka checkpoint topic %s: %w", s.ckTopic, err))
}

// scanLocked reads the checkpoint topic read_committed from where the last
// scan stopped up to the end offsets it had when the scan started, and
// raises s.last to the highest checkpoint recorded for s.txnID. A
// transaction still open in the topic (another sink's, up to its
// transaction timeout) holds the scan back until it ends: the records
// behind it are not readable before. mu is held; ctx bounds the scan.
func (s *Sink) scanLocked(ctx context.Context) error {
	adm := kadm.NewClient(s.cl)
	ends, err := adm.ListEndOffsets(ctx, s.ckTopic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return classify(fmt.Errorf("list end offsets of kafka checkpoint topic %s: %w", s.ckTopic, err))
	}
	if s.book.next == nil {
		s.book.next = map[int32]int64{}
	}
	// A partition that shrank or vanished means the topic was recreated or
	// truncated: read it all again.
	for p, next := range s.book.next {
		if e, ok := ends.Lookup(s.ckTopic, p); !ok || e.Offset < next {
			clear(s.book.next)
			break
		}
	}
	from := map[int32]kgo.Offset{}
	want := map[int32]int64{} // end offset per partition still to reach
	ends.Each(func(e kadm.ListedOffset) {
		if next := s.book.next[e.Partition]; next < e.Offset {
			from[e.Partition] = kgo.NewOffset().At(next)
			want[e.Partition] = e.Offset
		}
	})
	if len(want) == 0 {
		return nil
	}
	// Control records are kept: every transaction ends with one, so the
	// position reaches the end offset even when the last records belong to
	// an aborted transaction.
	cl, err := kgo.NewClient(append(slices.Clip(s.base),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{s.ckTopic: from}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())...)
	if err != nil {
		return fmt.Errorf("create kafka client for checkpoint topic %s: %w", s.ckTopic, err)
	}
	defer cl.Close()
	for len(want) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return classify(fmt.Errorf("read kafka checkpoint topic %s: %w", s.ckTopic, err))
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return classify(fmt.Errorf("read kafka checkpoint topic %s: %w", s.ckTopic, errs[0].Err))
		}
		fs.EachRecord(func(r *kgo.Record) {
			s.book.next[r.Partition] = r.Offset + 1
			if end, ok := want[r.Partition]; ok && r.Offset+1 >= end {
				delete(want, r.Partition)
			}
			if r.Attrs.IsControl() || string(r.Key) != s.txnID {
				return
			}
			if id, ok := decodeMarker(r.Value); ok && id > s.last {
				s.last = id
			}
		})
	}
	return nil
}

// LastCommitted returns the id of the last checkpoint whose transaction
// this sink's transactional id committed (0 when none, and always 0
// without a transactionalID): what Connect read from the checkpoint topic,
// raised by the sink's own commits since. It does no I/O: Connect read the
// topic after initialising the producer, which fenced every earlier
// instance, so no other producer commits under the id afterwards (one
// that does fences this sink, whose commits then fail).
func (s *Sink) LastCommitted(context.Context) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.txnID == "" {
		return 0, nil
	}
	if s.cl == nil {
		return 0, api.Retryable(errors.New("kafka sink not connected"))
	}
	return s.last, nil
}
