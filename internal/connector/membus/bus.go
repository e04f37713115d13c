// Package membus is rekuiper's in-process publish/subscribe bus for memory
// topics: the memory sink publishes rows, memory sources and lookup tables
// subscribe with MQTT-style topic filters. The daemon creates one Bus and
// hands it to connectors; there is no global bus.
package membus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// ErrClosed is returned by Receive after the subscription was closed.
var ErrClosed = errors.New("subscription closed")

// Message is one published row, or several rows published together (a
// sink result of several rows, as eKuiper's memory topics carry a list).
type Message struct {
	// Topic is the concrete topic it was published to.
	Topic string
	// Data is the row. Subscribers share it and must treat it as read-only.
	Data map[string]any
	// Rows, when not nil, are the rows of a message of several rows (Data
	// is then nil), read-only as Data. Rowkind and Key are then unset.
	Rows []map[string]any
	// Rowkind is the change kind for updatable consumers such as lookup
	// tables: "insert", "update", "upsert", "delete", or "" (insert).
	Rowkind string
	// Key, when not nil, is the row's key value for updates and deletes.
	Key any
}

// Split returns the message as messages of one row each: itself when it
// has one row, one message per row of Rows otherwise.
func (m Message) Split() []Message {
	if m.Rows == nil {
		return []Message{m}
	}
	out := make([]Message, len(m.Rows))
	for i, r := range m.Rows {
		out[i] = Message{Topic: m.Topic, Data: r}
	}
	return out
}

// Bus routes messages from publishers to matching subscribers. Delivery is
// in publish order per publisher. Publish blocks while a matching
// subscriber's buffer is full (backpressure); nothing is dropped except
// messages for topics nobody subscribes to. It is safe for concurrent use.
type Bus struct {
	mu   sync.RWMutex
	subs map[*Subscription]struct{}
}

// New returns an empty bus.
func New() *Bus { return &Bus{subs: map[*Subscription]struct{}{}} }

// Subscription receives the messages whose topic matches its filter. Its
// owner must call Close; one goroutine should call Receive.
type Subscription struct {
	bus    *Bus
	filter string
	levels []string
	ch     chan Message
	done   chan struct{}
	once   sync.Once
}

// Subscribe registers a subscriber for filter with a buffer of buffer
// messages (at least 1). filter uses MQTT wildcards: "+" matches one level,
// "#" (last level only) matches any number of remaining levels.
func (b *Bus) Subscribe(filter string, buffer int) (*Subscription, error) {
	if err := ValidFilter(filter); err != nil {
		return nil, err
	}
	if buffer < 1 {
		buffer = 1
	}
	s := &Subscription{
		bus:    b,
		filter: filter,
		levels: strings.Split(filter, "/"),
		ch:     make(chan Message, buffer),
		done:   make(chan struct{}),
	}
	b.mu.Lock()
	b.subs[s] = struct{}{}
	b.mu.Unlock()
	return s, nil
}

// Publish delivers msg to every subscriber whose filter matches msg.Topic.
// It blocks while a matching subscriber's buffer is full, until there is
// room, that subscriber closes, or ctx is done (then it returns ctx.Err();
// subscribers already served keep the message).
func (b *Bus) Publish(ctx context.Context, msg Message) error {
	if err := ValidTopic(msg.Topic); err != nil {
		return err
	}
	topic := strings.Split(msg.Topic, "/")
	b.mu.RLock()
	var targets []*Subscription
	for s := range b.subs {
		if Match(s.levels, topic) {
			targets = append(targets, s)
		}
	}
	b.mu.RUnlock()
	for _, s := range targets {
		select {
		case s.ch <- msg:
			continue
		default:
		}
		select {
		case s.ch <- msg:
		case <-s.done:
		case <-ctx.Done():
			return fmt.Errorf("publish to %s: %w", msg.Topic, ctx.Err())
		}
	}
	return nil
}

// Subscribers returns how many subscriptions are open (for tests and
// metrics).
func (b *Bus) Subscribers() int {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return len(b.subs)
}

// Filter returns the subscription's topic filter.
func (s *Subscription) Filter() string { return s.filter }

// Receive blocks until a message arrives, ctx is done (ctx.Err()) or the
// subscription is closed (ErrClosed).
func (s *Subscription) Receive(ctx context.Context) (Message, error) {
	select {
	case m := <-s.ch:
		return m, nil
	default:
	}
	select {
	case m := <-s.ch:
		return m, nil
	case <-ctx.Done():
		return Message{}, ctx.Err()
	case <-s.done:
		return Message{}, ErrClosed
	}
}

// Close unsubscribes and releases publishers blocked on this subscriber.
// It is idempotent.
func (s *Subscription) Close() {
	s.once.Do(func() {
		s.bus.mu.Lock()
		delete(s.bus.subs, s)
		s.bus.mu.Unlock()
		close(s.done)
	})
}

// ValidFilter checks an MQTT-style topic filter.
func ValidFilter(filter string) error {
	if filter == "" {
		return errors.New("empty topic filter")
	}
	levels := strings.Split(filter, "/")
	for i, l := range levels {
		switch {
		case l == "#":
			if i != len(levels)-1 {
				return fmt.Errorf("topic filter %q: # must be the last level", filter)
			}
		case l == "+":
		case strings.ContainsAny(l, "+#"):
			return fmt.Errorf("topic filter %q: wildcards must occupy a whole level", filter)
		}
	}
	return nil
}

// ValidTopic checks a topic name for publishing: non-empty, no wildcards.
func ValidTopic(topic string) error {
	if topic == "" {
		return errors.New("empty topic")
	}
	if strings.ContainsAny(topic, "+#") {
		return fmt.Errorf("topic %q: wildcards are not allowed when publishing", topic)
	}
	return nil
}

// Match reports whether topic levels match filter levels.
func Match(filter, topic []string) bool {
	for i, f := range filter {
		if f == "#" {
			return true
		}
		if i >= len(topic) {
			return false
		}
		if f != "+" && f != topic[i] {
			return false
		}
	}
	return len(filter) == len(topic)
}

// MatchString is Match on "/"-separated strings.
func MatchString(filter, topic string) bool {
	return Match(strings.Split(filter, "/"), strings.Split(topic, "/"))
}
