package qualify

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
)

// SeqRecord is the payload the publisher sends: a sequence number, the
// publish attempt that carried it (a retried publish has attempt > 0, so a
// copy the broker received twice is told apart from a copy the pipeline
// emitted twice) and the publisher's clock in milliseconds.
type SeqRecord struct {
	Seq     int64 `json:"seq"`
	Attempt int64 `json:"attempt"`
	TS      int64 `json:"ts"`
}

// PublisherConfig says what a Publisher sends.
type PublisherConfig struct {
	Server   string
	ClientID string
	Topic    string
	Rate     float64       // records per second
	Duration time.Duration // how long to publish
}

// PublishStats is what a Publisher did.
type PublishStats struct {
	Sent     int64   `json:"sent"`            // distinct sequence numbers acknowledged by the broker
	Retries  int64   `json:"publish_retries"` // publishes repeated after a failure or timeout
	Seconds  float64 `json:"seconds"`
	MaxStall float64 `json:"max_stall_seconds"` // longest time one record waited for the broker
}

// Publisher publishes SeqRecords 0, 1, 2, ... at QoS 1 on a schedule of
// Rate per second for Duration. Each record is published until the broker
// acknowledges it: while the broker is down the publisher reconnects and
// retries the same record, and catches up with the schedule afterwards, so
// no sequence number is skipped. It owns one goroutine, started by
// StartPublisher and ended by the end of Duration or ctx.
type Publisher struct {
	cfg   PublisherConfig
	sent  atomic.Int64
	done  chan struct{}
	stats PublishStats
}

// StartPublisher starts publishing in the background.
func StartPublisher(ctx context.Context, cfg PublisherConfig) *Publisher {
	p := &Publisher{cfg: cfg, done: make(chan struct{})}
	go p.run(ctx)
	return p
}

// Sent is the number of records acknowledged so far.
func (p *Publisher) Sent() int64 { return p.sent.Load() }

// Wait blocks until the publisher finished and returns its figures.
func (p *Publisher) Wait() PublishStats {
	<-p.done
	return p.stats
}

func (p *Publisher) run(ctx context.Context) {
	defer close(p.done)
	start := time.Now()
	var client paho.Client
	defer func() {
		if client != nil {
			client.Disconnect(100)
		}
	}()
	interval := time.Duration(float64(time.Second) / p.cfg.Rate)
	for seq := int64(0); ; seq++ {
		due := start.Add(time.Duration(seq) * interval)
		if due.Sub(start) >= p.cfg.Duration {
			break
		}
		if wait := time.Until(due); wait > 0 {
			select {
			case <-ctx.Done():
				p.finish(start)
				return
			case <-time.After(wait):
			}
		}
		first := time.Now()
		for attempt := int64(0); ; attempt++ {
			if ctx.Err() != nil {
				p.finish(start)
				return
			}
			if client == nil || !client.IsConnectionOpen() {
				if client != nil {
					client.Disconnect(0)
				}
				client = p.connect()
				if client == nil {
					p.stats.Retries++
					time.Sleep(100 * time.Millisecond)
					continue
				}
			}
			payload, _ := json.Marshal(SeqRecord{Seq: seq, Attempt: attempt, TS: time.Now().UnixMilli()})
			tok := client.Publish(p.cfg.Topic, 1, false, payload)
			if tok.WaitTimeout(3*time.Second) && tok.Error() == nil {
				break
			}
			p.stats.Retries++
			client.Disconnect(0)
			client = nil
			time.Sleep(100 * time.Millisecond)
		}
		if stall := time.Since(first).Seconds(); stall > p.stats.MaxStall {
			p.stats.MaxStall = stall
		}
		p.sent.Add(1)
	}
	p.finish(start)
}

func (p *Publisher) finish(start time.Time) {
	p.stats.Sent = p.sent.Load()
	p.stats.Seconds = time.Since(start).Seconds()
}

// connect returns a connected client with a clean session, or nil.
func (p *Publisher) connect() paho.Client {
	opts := paho.NewClientOptions().AddBroker(p.cfg.Server).SetClientID(p.cfg.ClientID).
		SetCleanSession(true).SetAutoReconnect(false).SetConnectTimeout(2 * time.Second).
		SetWriteTimeout(2 * time.Second)
	c := paho.NewClient(opts)
	tok := c.Connect()
	if !tok.WaitTimeout(3*time.Second) || tok.Error() != nil {
		c.Disconnect(0)
		return nil
	}
	return c
}

// SeqCounts is the validator's account of one output stream against what
// the publisher sent.
type SeqCounts struct {
	Sent     int64 `json:"sent"`
	Received int64 `json:"received"` // rows received, every copy counted
	Unique   int64 `json:"unique"`   // distinct sequence numbers received
	Lost     int64 `json:"lost"`     // sent but never received
	// Duplicated counts extra copies of a row the pipeline (rekuiper)
	// emitted more than once.
	Duplicated int64 `json:"duplicated"`
	// PublisherDuplicates counts extra copies caused by the publisher's own
	// retries (the broker had taken a publish whose ack was lost).
	PublisherDuplicates int64 `json:"publisher_duplicates"`
	// Redelivered counts copies the broker delivered again to the
	// validator itself (DUP flag): transport, not pipeline, duplicates.
	Redelivered int64 `json:"validator_redelivered"`
	// Reordered counts first copies that arrived after a higher sequence
	// number had arrived.
	Reordered   int64   `json:"reordered"`
	Resent      int64   `json:"resent_marked"` // rows carrying the resend indicator
	Unexpected  int64   `json:"unexpected"`    // rows with a sequence number never sent
	Unreadable  int64   `json:"unreadable"`    // payloads that are not records
	FirstLost   []int64 `json:"first_lost,omitempty"`
	FirstDupes  []int64 `json:"first_duplicated,omitempty"`
	LastArrival string  `json:"last_arrival,omitempty"`
}

// Validator is an MQTT client, independent of the daemon, that subscribes
// to an output topic at QoS 1 with a persistent session (fixed client id,
// clean session off, so the broker keeps its messages across its own
// disconnects) and accounts for every sequence number it receives.
type Validator struct {
	client      paho.Client
	resentField string
	mu          sync.Mutex
	seen        map[int64]int64 // seq → attempt of the first copy
	copies      map[int64]int64 // seq → pipeline copies beyond the first
	received    int64
	pubDupes    int64
	redelivered int64
	reordered   int64
	resent      int64
	unreadable  int64
	maxSeq      int64
	last        time.Time
}

// StartValidator connects and subscribes; it returns once the
// subscription is acknowledged. resentField names the resend indicator
// ("" for none).
func StartValidator(server, clientID, topic, resentField string) (*Validator, error) {
	v := &Validator{resentField: resentField, seen: map[int64]int64{}, copies: map[int64]int64{}, maxSeq: -1}
	subscribed := make(chan error, 1)
	opts := paho.NewClientOptions().AddBroker(server).SetClientID(clientID).
		SetCleanSession(false).SetAutoReconnect(true).SetConnectRetry(true).
		SetConnectRetryInterval(200 * time.Millisecond).SetMaxReconnectInterval(time.Second).
		SetOrderMatters(true).SetDefaultPublishHandler(v.handle)
	opts.SetOnConnectHandler(func(c paho.Client) {
		tok := c.Subscribe(topic, 1, v.handle)
		go func() {
			tok.Wait()
			select {
			case subscribed <- tok.Error():
			default:
			}
		}()
	})
	v.client = paho.NewClient(opts)
	if tok := v.client.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		v.client.Disconnect(0)
		return nil, fmt.Errorf("validator connect %s: %v", server, tok.Error())
	}
	select {
	case err := <-subscribed:
		if err != nil {
			v.client.Disconnect(0)
			return nil, fmt.Errorf("validator subscribe %s: %w", topic, err)
		}
	case <-time.After(10 * time.Second):
		v.client.Disconnect(0)
		return nil, fmt.Errorf("validator subscribe %s: timeout", topic)
	}
	return v, nil
}

// Close disconnects; the broker keeps the session.
func (v *Validator) Close() { v.client.Disconnect(200) }

func (v *Validator) handle(_ paho.Client, m paho.Message) {
	rows, ok := decodeRows(m.Payload(), v.resentField)
	v.mu.Lock()
	defer v.mu.Unlock()
	v.last = time.Now()
	if !ok {
		v.unreadable++
		return
	}
	for _, r := range rows {
		v.account(r, m.Duplicate())
	}
}

type outRow struct {
	seq, attempt int64
	resent       bool
}

// decodeRows reads a JSON object or an array of objects carrying seq.
func decodeRows(payload []byte, resentField string) ([]outRow, bool) {
	var objs []map[string]any
	if err := json.Unmarshal(payload, &objs); err != nil {
		var one map[string]any
		if err := json.Unmarshal(payload, &one); err != nil {
			return nil, false
		}
		objs = []map[string]any{one}
	}
	rows := make([]outRow, 0, len(objs))
	for _, o := range objs {
		seq, ok := o["seq"].(float64)
		if !ok {
			return nil, false
		}
		att, _ := o["attempt"].(float64)
		r := outRow{seq: int64(seq), attempt: int64(att)}
		if resentField != "" {
			r.resent, _ = o[resentField].(bool)
		}
		rows = append(rows, r)
	}
	return rows, true
}

func (v *Validator) account(r outRow, redelivery bool) {
	v.received++
	if r.resent {
		v.resent++
	}
	first, seen := v.seen[r.seq]
	switch {
	case !seen:
		v.seen[r.seq] = r.attempt
		if r.seq < v.maxSeq {
			v.reordered++
		}
		if r.seq > v.maxSeq {
			v.maxSeq = r.seq
		}
	case first != r.attempt:
		v.pubDupes++
	case redelivery:
		v.redelivered++
	default:
		v.copies[r.seq]++
	}
}

// Unique is the number of distinct sequence numbers received so far.
func (v *Validator) Unique() int64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	return int64(len(v.seen))
}

// LastArrival is when the last message arrived (zero before any).
func (v *Validator) LastArrival() time.Time {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.last
}

// Counts compares what arrived with sequence numbers 0..sent-1.
func (v *Validator) Counts(sent int64) SeqCounts {
	v.mu.Lock()
	defer v.mu.Unlock()
	c := SeqCounts{Sent: sent, Received: v.received, Unique: int64(len(v.seen)),
		PublisherDuplicates: v.pubDupes, Redelivered: v.redelivered, Reordered: v.reordered,
		Resent: v.resent, Unreadable: v.unreadable}
	for seq := int64(0); seq < sent; seq++ {
		if _, ok := v.seen[seq]; !ok {
			c.Lost++
			if len(c.FirstLost) < 10 {
				c.FirstLost = append(c.FirstLost, seq)
			}
		}
	}
	for seq := range v.seen {
		if seq < 0 || seq >= sent {
			c.Unexpected++
		}
	}
	dupes := make([]int64, 0, len(v.copies))
	for seq, n := range v.copies {
		c.Duplicated += n
		dupes = append(dupes, seq)
	}
	sort.Slice(dupes, func(i, j int) bool { return dupes[i] < dupes[j] })
	if len(dupes) > 10 {
		dupes = dupes[:10]
	}
	c.FirstDupes = dupes
	if !v.last.IsZero() {
		c.LastArrival = v.last.UTC().Format(time.RFC3339Nano)
	}
	return c
}

// Drain waits until every sent record arrived, or until nothing new has
// arrived for quiet, or until limit passed; it then waits settle more so
// late duplicates are counted.
func (v *Validator) Drain(ctx context.Context, sent int64, quiet, limit, settle time.Duration) {
	deadline := time.Now().Add(limit)
	progress := time.Now()
	lastUnique := int64(-1)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		u := v.Unique()
		if u >= sent {
			break
		}
		if u != lastUnique {
			lastUnique, progress = u, time.Now()
		} else if time.Since(progress) > quiet {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	select {
	case <-ctx.Done():
	case <-time.After(settle):
	}
}
