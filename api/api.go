// Package api is rekuiper's public extension API: the contracts between the
// engine and sources, sinks, lookup sources and their state. It depends on the standard
// library only.
//
// Lifecycle of every connector: construct from validated properties,
// Connect, use, Close. Close must work after a failed Connect. The engine,
// not the connector, owns read loops, retries and restarts.
package api

import (
	"context"
	"errors"
	"time"
)

// Message is one record read from a source. Either Payload (raw bytes that
// the engine decodes with the stream's FORMAT) or Data (an already decoded
// record, for sources such as memory or simulator) is set.
type Message struct {
	Payload []byte
	Data    map[string]any
	// Meta is source metadata (meta(topic), meta(qos), ...).
	Meta map[string]any
	// Time is when the source received the record; zero means now.
	Time time.Time
	// Ack, when set, is called by the engine once the record is durably
	// handed over (for qos >= 1, after it is in the source log). Sources
	// that need no acknowledgement leave it nil.
	Ack func()
}

// Source reads records. Read is called from one goroutine only, the
// engine's read loop, which injects checkpoint barriers between two Reads
// and records the source's offset at that point.
type Source interface {
	// Connect establishes the connection. ctx covers only the connect phase.
	Connect(ctx context.Context) error
	// Read blocks until a record is available, ctx is done (return
	// ctx.Err()), or the source ends (return io.EOF for bounded sources).
	// Any other error makes the engine reconnect with backoff.
	Read(ctx context.Context) (*Message, error)
	// Close releases the connection.
	Close(ctx context.Context) error
}

// Rewindable sources can resume from an offset recorded in a checkpoint.
// Offsets are opaque, versioned bytes; Rewind is idempotent.
type Rewindable interface {
	// Offset returns the position after the last record returned by Read.
	Offset() ([]byte, error)
	// Rewind makes the next Read return the record after offset.
	Rewind(offset []byte) error
}

// OffsetCommitter is a Rewindable source that also keeps its position
// upstream, where monitoring watches it and where a start without a
// checkpoint resumes (a Kafka consumer group's committed offsets).
//
// Left alone, the source commits the position of the records Read returned
// by itself, periodically and on Close: nothing rewinds it, and several
// rules may share it (qos 0). For a rule with checkpoints the engine calls
// CommitOnCheckpoints before Connect; from then on the source commits only
// in CommitOffset, which the engine calls from a goroutine of its own (one
// commit at a time; while one is in flight only the newest offset waits),
// with the source's offset of checkpoints that no restore can go back
// behind. CommitOffset may be called after Close; it then fails.
type OffsetCommitter interface {
	Rewindable
	// CommitOnCheckpoints turns the source's own commits off.
	CommitOnCheckpoints()
	// CommitOffset commits offset, a value returned by Offset. It bounds
	// its own I/O. A failure is only reported: the next checkpoint's
	// commit supersedes it.
	CommitOffset(ctx context.Context, offset []byte) error
}

// SinkMessage is one delivery to a sink: the rows of one emission (or one
// row when sendSingle is on) and their encoded payload.
type SinkMessage struct {
	Rows    []map[string]any
	Payload []byte
	// Resent marks a record replayed from the sink cache.
	Resent bool
}

// Sink writes results.
type Sink interface {
	// Connect establishes the connection. ctx covers only the connect phase.
	Connect(ctx context.Context) error
	// Write delivers one message. Return an error wrapping ErrRetryable when
	// the failure is transient (connection lost, timeout, 5xx), so the sink
	// cache keeps the message and retries; any other error is permanent.
	Write(ctx context.Context, msg *SinkMessage) error
	// Close flushes and releases the connection.
	Close(ctx context.Context) error
}

// LookupSource serves a lookup table (CREATE TABLE ... KIND="lookup"):
// rows are fetched by key when a rule joins the table, instead of being
// streamed. A rule that joins the table connects its own lookup source
// when it starts and closes it when it stops. The table's cache
// properties (cache, cacheTtl, ...) are the engine's: it caches in front
// of Lookup.
type LookupSource interface {
	// Connect establishes the connection. ctx covers only the connect phase.
	Connect(ctx context.Context) error
	// Lookup returns the rows whose fields equal every entry of keys (none
	// is no error). ctx covers this call only. The returned rows are owned
	// by the caller, which may change them: return copies of any rows the
	// source keeps.
	Lookup(ctx context.Context, keys map[string]any) ([]map[string]any, error)
	// Close releases the connection. It must work after a failed Connect.
	Close(ctx context.Context) error
}

// PayloadOnly is an optional interface of a Sink. When PayloadOnly reports
// true, Write reads only msg.Payload and msg.Resent and keeps neither msg
// nor its Payload after it returns. The engine may then pass messages
// without Rows and reuse the Payload's memory for the next message, which
// saves building a map per row and a buffer per message. The engine asks
// once, after construction and before Connect; the answer must not change.
type PayloadOnly interface {
	PayloadOnly() bool
}

// ErrRetryable marks transient sink failures (test with errors.Is).
var ErrRetryable = errors.New("retryable")

// Retryable wraps err so that errors.Is(err, ErrRetryable) holds.
func Retryable(err error) error {
	if err == nil {
		return nil
	}
	return retryable{err}
}

type retryable struct{ err error }

func (r retryable) Error() string   { return r.err.Error() }
func (r retryable) Unwrap() []error { return []error{r.err, ErrRetryable} }

// State is the user state of an extension (source, sink or function): a
// key-value store whose contents are included in the rule's checkpoints and
// restored with them. Values must be JSON-encodable.
type State interface {
	Put(key string, value any) error
	Get(key string) (any, bool, error)
	Delete(key string) error
	// Increment adds delta to the integer at key (0 when absent) and returns
	// the new value.
	Increment(key string, delta int64) (int64, error)
}

// Status reports a connector's connection state to rule status and metrics.
type Status interface {
	Connected()
	Connecting()
	Disconnected(err error)
}
