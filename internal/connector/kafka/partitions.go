package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Partitions returns the number of partitions the source's topic has now,
// asking the brokers on a client of its own that it closes before
// returning; ctx and connectTimeout bound the call. A cluster splits a
// partitioned rule into that many tasks.
func (s *Source) Partitions(ctx context.Context) (int, error) {
	cl, err := kgo.NewClient(s.base...)
	if err != nil {
		return 0, fmt.Errorf("create kafka client: %w", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, s.connectTO)
	defer cancel()
	parts, err := topicPartitions(ctx, cl, s.topic)
	if err != nil {
		return 0, err
	}
	return len(parts), nil
}
