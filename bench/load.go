package bench

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"
)

// Keys is the number of distinct deviceId values in the published
// messages unless a scenario sets its own; message seq has deviceId
// "d<seq%Keys>" and temperature seq%Keys + 0.5.
const Keys = 100

// Payload returns the JSON message number seq sent at ts (Unix ns): four
// fields, seq, ts, deviceId and temperature.
func Payload(seq, ts int64) []byte { return PayloadKeys(seq, ts, Keys) }

// PayloadKeys is Payload with keys distinct deviceId values.
func PayloadKeys(seq, ts, keys int64) []byte {
	b := make([]byte, 0, 80)
	b = append(b, `{"seq":`...)
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, `,"ts":`...)
	b = strconv.AppendInt(b, ts, 10)
	b = append(b, `,"deviceId":"d`...)
	b = strconv.AppendInt(b, seq%keys, 10)
	b = append(b, `","temperature":`...)
	b = strconv.AppendInt(b, seq%keys, 10)
	b = append(b, `.5}`...)
	return b
}

func connect(url, clientID string) (mqtt.Client, error) {
	opts := mqtt.NewClientOptions().AddBroker(url).SetClientID(clientID).
		SetCleanSession(true).SetAutoReconnect(false).SetKeepAlive(60 * time.Second).
		SetConnectTimeout(10 * time.Second).SetWriteTimeout(30 * time.Second)
	c := mqtt.NewClient(opts)
	tok := c.Connect()
	if !tok.WaitTimeout(10 * time.Second) {
		return nil, fmt.Errorf("connect %s as %s: timeout", url, clientID)
	}
	if err := tok.Error(); err != nil {
		return nil, fmt.Errorf("connect %s as %s: %w", url, clientID, err)
	}
	return c, nil
}

// PublisherConfig describes a paced load.
type PublisherConfig struct {
	URL      string
	Topic    string
	Rate     int           // messages per second, all clients together
	Duration time.Duration // the load sends Rate*Duration messages
	Clients  int           // MQTT connections; client i sends seq i, i+Clients, ...
	QoS      byte          // publish QoS (0 or 1); QoS 1 publishes are pipelined
	Keys     int           // distinct deviceId values (0: Keys)
}

// PublishStats is what a paced load did.
type PublishStats struct {
	Sent    int64         // messages handed to the clients (seq 0..Sent-1)
	Errors  int64         // publishes the client reported as failed
	Elapsed time.Duration // from the first publish to the last
	MaxLag  int64         // most messages any client was behind its schedule
}

// Publish sends Rate*Duration messages at cfg.QoS on Topic, paced: every
// millisecond each client sends what its schedule (Rate/Clients per
// second since the start) says is due, so ticker jitter does not change
// the rate. It returns when every message is sent or ctx ends.
func Publish(ctx context.Context, cfg PublisherConfig) (PublishStats, error) {
	if cfg.Clients < 1 {
		cfg.Clients = 1
	}
	total := int64(float64(cfg.Rate) * cfg.Duration.Seconds())
	keys := int64(cfg.Keys)
	if keys <= 0 {
		keys = Keys
	}
	clients := make([]mqtt.Client, cfg.Clients)
	for i := range clients {
		c, err := connect(cfg.URL, fmt.Sprintf("kuiperbench-pub-%d-%d", i, time.Now().UnixNano()))
		if err != nil {
			for _, c := range clients[:i] {
				c.Disconnect(100)
			}
			return PublishStats{}, err
		}
		clients[i] = c
	}
	defer func() {
		for _, c := range clients {
			c.Disconnect(250)
		}
	}()
	var sent, errs, maxLag atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for i, c := range clients {
		// Client i owns seq = i + k*Clients for k in [0, n).
		n := (total - int64(i) + int64(cfg.Clients) - 1) / int64(cfg.Clients)
		rate := float64(n) / cfg.Duration.Seconds()
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(time.Millisecond)
			defer tick.Stop()
			// QoS 1 publishes still awaiting PUBACK: waited for before
			// the client disconnects, which would drop them.
			var pending []mqtt.Token
			defer func() {
				for _, tok := range pending {
					if !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
						errs.Add(1)
					}
				}
			}()
			var k int64
			for k < n {
				select {
				case <-ctx.Done():
					return
				case now := <-tick.C:
					due := min(int64(now.Sub(start).Seconds()*rate), n)
					if lag := due - k; lag > maxLag.Load() {
						maxLag.Store(lag)
					}
					for ; k < due; k++ {
						seq := int64(i) + k*int64(cfg.Clients)
						tok := c.Publish(cfg.Topic, cfg.QoS, false, PayloadKeys(seq, time.Now().UnixNano(), keys))
						select {
						case <-tok.Done():
							if tok.Error() != nil {
								errs.Add(1)
								continue
							}
						default:
							if cfg.QoS > 0 {
								pending = append(pending, tok)
							}
							if len(pending) >= 4096 {
								pending = slices.DeleteFunc(pending, func(t mqtt.Token) bool {
									select {
									case <-t.Done():
										if t.Error() != nil {
											errs.Add(1)
										}
										return true
									default:
										return false
									}
								})
							}
						}
						sent.Add(1)
					}
				}
			}
		}()
	}
	wg.Wait()
	st := PublishStats{Sent: sent.Load(), Errors: errs.Load(), Elapsed: time.Since(start), MaxLag: maxLag.Load()}
	return st, ctx.Err()
}

// Subscriber is an independent MQTT client on the output topics. It
// tallies what arrives (see tally) and follows the broker's
// dropped-message counter.
type Subscriber struct {
	*tally
	client mqtt.Client
}

// NewSubscriber connects and subscribes at QoS 0 to filter. window
// selects window mode. It also follows the broker's dropped-message
// counter.
func NewSubscriber(url, filter string, window bool) (*Subscriber, error) {
	c, err := connect(url, fmt.Sprintf("kuiperbench-sub-%d", time.Now().UnixNano()))
	if err != nil {
		return nil, err
	}
	s := &Subscriber{tally: newTally(window), client: c}
	tok := c.Subscribe(filter, 0, func(_ mqtt.Client, m mqtt.Message) { s.record(m.Topic(), m.Payload()) })
	if !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		c.Disconnect(100)
		return nil, fmt.Errorf("subscribe %s: %v", filter, tok.Error())
	}
	tok = c.Subscribe("$SYS/broker/publish/messages/dropped", 0, func(_ mqtt.Client, m mqtt.Message) {
		if v, err := strconv.ParseInt(string(m.Payload()), 10, 64); err == nil {
			s.mu.Lock()
			s.dropped = v
			s.mu.Unlock()
		}
	})
	if !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		c.Disconnect(100)
		return nil, fmt.Errorf("subscribe $SYS: %v", tok.Error())
	}
	return s, nil
}

// Close disconnects.
func (s *Subscriber) Close() { s.client.Disconnect(250) }

// tally records, per topic, the distinct sequence numbers of the output
// messages, and the latency of every message: receive time minus the
// payload's send timestamp ("ts", Unix ns), or in window mode receive time
// minus the window end ("we", Unix ms), summing the window counts ("c").
// It is safe for concurrent use.
type tally struct {
	window bool

	mu        sync.Mutex
	seen      []bool
	perTopic  map[string]int64
	dups      int64
	malformed int64
	lat       []int64 // ns
	at        []int64 // Unix ns each latency refers to (send time or window end)
	windowSum int64
	windows   int64
	last      time.Time
	dropped   int64 // mosquitto's $SYS/broker/publish/messages/dropped
}

func newTally(window bool) *tally { return &tally{window: window, perTopic: map[string]int64{}} }

// record tallies one output message received now on topic.
func (s *tally) record(topic string, p []byte) {
	now := time.Now().UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last = time.Now()
	if s.window {
		c, ok1 := IntField(p, "c")
		we, ok2 := IntField(p, "we")
		if !ok1 || !ok2 {
			s.malformed++
			return
		}
		s.windows++
		s.windowSum += c
		s.lat = append(s.lat, now-we*int64(time.Millisecond))
		s.at = append(s.at, we*int64(time.Millisecond))
		return
	}
	seq, ok1 := IntField(p, "seq")
	ts, ok2 := IntField(p, "ts")
	if !ok1 || !ok2 || seq < 0 {
		s.malformed++
		return
	}
	for int64(len(s.seen)) <= seq {
		s.seen = append(s.seen, make([]bool, max(len(s.seen), 1<<16))...)
	}
	if s.seen[seq] {
		s.dups++
		return
	}
	s.seen[seq] = true
	s.perTopic[topic]++
	s.lat = append(s.lat, now-ts)
	s.at = append(s.at, ts)
}

// SubscriberStats is a snapshot of what the subscriber received.
type SubscriberStats struct {
	PerTopic   map[string]int64 // distinct messages per topic
	Unique     int64
	Duplicates int64
	Malformed  int64
	Windows    int64 // window mode: window results received
	WindowSum  int64 // window mode: sum of their counts
	Latencies  []int64
	At         []int64   // the reference time of each latency (Unix ns)
	Last       time.Time // when the last message arrived
	Dropped    int64     // broker's dropped-message counter
}

// Stats returns a snapshot; Latencies is a copy.
func (s *tally) Stats() SubscriberStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := SubscriberStats{PerTopic: map[string]int64{}, Duplicates: s.dups, Malformed: s.malformed,
		Windows: s.windows, WindowSum: s.windowSum, Last: s.last, Dropped: s.dropped}
	for k, v := range s.perTopic {
		st.PerTopic[k] = v
		st.Unique += v
	}
	st.Latencies = append([]int64(nil), s.lat...)
	st.At = append([]int64(nil), s.at...)
	return st
}

// Missing returns up to limit seqs below n that want(seq) says should have
// arrived and did not, in order (for the single-output scenarios).
func (s *tally) Missing(n int64, want func(seq int64) bool, limit int) []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int64
	for seq := int64(0); seq < n && len(out) < limit; seq++ {
		if want(seq) && (seq >= int64(len(s.seen)) || !s.seen[seq]) {
			out = append(out, seq)
		}
	}
	return out
}

// Received is the number of distinct messages (or, in window mode, the
// sum of window counts) so far.
func (s *tally) Received() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.window {
		return s.windowSum
	}
	var n int64
	for _, v := range s.perTopic {
		n += v
	}
	return n
}

// LastReceive is when the last message arrived (zero before any).
func (s *tally) LastReceive() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// IntField returns the integer value of the top-level JSON member key in
// a flat object such as the engine's output, without a full decode (the
// subscriber shares the machine with the engine). It accepts an optional
// fraction ".0" and whitespace around the colon.
func IntField(b []byte, key string) (int64, bool) {
	pat := `"` + key + `"`
	for i := 0; i+len(pat) <= len(b); i++ {
		if b[i] != '"' || string(b[i:i+len(pat)]) != pat {
			continue
		}
		j := i + len(pat)
		for j < len(b) && (b[j] == ' ' || b[j] == '\t') {
			j++
		}
		if j >= len(b) || b[j] != ':' {
			continue
		}
		j++
		for j < len(b) && (b[j] == ' ' || b[j] == '\t') {
			j++
		}
		neg := false
		if j < len(b) && b[j] == '-' {
			neg = true
			j++
		}
		start := j
		var v int64
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			v = v*10 + int64(b[j]-'0')
			j++
		}
		if j == start {
			return 0, false
		}
		if neg {
			v = -v
		}
		return v, true
	}
	return 0, false
}
