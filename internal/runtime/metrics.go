package runtime

import (
	"sync"
	"sync/atomic"
)

// Metrics are one node's counters, named as eKuiper names them. Counters are
// written by the node's goroutine and read concurrently by status calls.
type Metrics struct {
	RecordsIn      atomic.Int64
	RecordsOut     atomic.Int64
	Exceptions     atomic.Int64
	ProcessLatency atomic.Int64 // µs, of a recent item (see timed)
	LastInvocation atomic.Int64 // ms
	BufferLength   func() int64

	// calls counts invocations, for timed; the node's goroutine only.
	calls uint32

	mu            sync.Mutex
	lastException string
	lastExcTime   int64
}

// latencySample is how often an invocation is timed for ProcessLatency:
// reading the clock twice per row would cost more than a simple filter.
const latencySample = 16

// timed reports whether this invocation is to be timed: the first one and
// then every latencySample-th. The node's goroutine only.
func (m *Metrics) timed() bool {
	t := m.calls%latencySample == 0
	m.calls++
	return t
}

// RecordException counts an error and remembers it.
func (m *Metrics) RecordException(msg string, nowMS int64) {
	m.Exceptions.Add(1)
	m.mu.Lock()
	m.lastException = msg
	m.lastExcTime = nowMS
	m.mu.Unlock()
}

// LastException returns the last error text and its time (ms).
func (m *Metrics) LastException() (string, int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lastException, m.lastExcTime
}

// Snapshot returns the metrics under eKuiper's names.
func (m *Metrics) Snapshot() map[string]any {
	exc, excTime := m.LastException()
	out := map[string]any{
		"records_in_total":    m.RecordsIn.Load(),
		"records_out_total":   m.RecordsOut.Load(),
		"exceptions_total":    m.Exceptions.Load(),
		"process_latency_us":  m.ProcessLatency.Load(),
		"last_invocation":     m.LastInvocation.Load(),
		"last_exception":      exc,
		"last_exception_time": excTime,
		"buffer_length":       int64(0),
	}
	if m.BufferLength != nil {
		out["buffer_length"] = m.BufferLength()
	}
	return out
}
