// Package userstate implements api.State, the key-value state that
// extension sources, sinks and functions keep per rule. Its contents are
// part of the rule's checkpoints: snapshotted at each barrier and restored
// with the operators.
package userstate

import (
	"fmt"
	"sync"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/value"
)

// Store is one rule's user state. It is safe for concurrent use: sinks and
// sources run on their own goroutines.
type Store struct {
	mu sync.Mutex
	m  map[string]any
}

var _ api.State = (*Store)(nil)

// New returns an empty store.
func New() *Store { return &Store{m: map[string]any{}} }

// Put stores a value; it must be JSON-like (numbers, strings, bools, bytes,
// arrays, objects).
func (s *Store) Put(key string, v any) error {
	n := value.Normalize(v)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[key] = n
	return nil
}

// Get returns the value at key and whether it exists.
func (s *Store) Get(key string) (any, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[key]
	return v, ok, nil
}

// Delete removes key.
func (s *Store) Delete(key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
	return nil
}

// Increment adds delta to the integer at key (0 when absent).
func (s *Store) Increment(key string, delta int64) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := int64(0)
	if v, ok := s.m[key]; ok {
		i, ok := v.(int64)
		if !ok {
			return 0, fmt.Errorf("increment %s: value is %s, not an integer", key, value.TypeName(v))
		}
		cur = i
	}
	cur += delta
	s.m[key] = cur
	return cur, nil
}

// Snapshot encodes the whole store.
func (s *Store) Snapshot() ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return value.AppendValue([]byte{1}, s.m), nil
}

// Restore replaces the store's contents with a snapshot.
func (s *Store) Restore(data []byte) error {
	if len(data) == 0 || data[0] != 1 {
		return fmt.Errorf("restore user state: unsupported snapshot version")
	}
	r := value.NewReader(data[1:])
	m, _ := r.Value().(map[string]any)
	if err := r.Err(); err != nil {
		return fmt.Errorf("restore user state: %w", err)
	}
	if m == nil {
		m = map[string]any{}
	}
	s.mu.Lock()
	s.m = m
	s.mu.Unlock()
	return nil
}
