package kafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
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

// EnsureTopic creates topic with partitions partitions (and the brokers'
// default replication) unless it exists, and returns the number of
// partitions it has: the internal topic of a repartitioned rule. ctx and
// connectTimeout bound the call.
func (s *Source) EnsureTopic(ctx context.Context, topic string, partitions int) (int, error) {
	cl, err := kgo.NewClient(s.base...)
	if err != nil {
		return 0, fmt.Errorf("create kafka client: %w", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, s.connectTO)
	defer cancel()
	if parts, err := topicPartitions(ctx, cl, topic); err == nil {
		return len(parts), nil
	}
	_, err = kadm.NewClient(cl).CreateTopic(ctx, int32(partitions), -1, nil, topic)
	switch {
	case err == nil:
		return partitions, nil
	case !errors.Is(err, kerr.TopicAlreadyExists):
		return 0, fmt.Errorf("create kafka topic %s: %w", topic, err)
	}
	// Created by another node a moment ago: its metadata may lag.
	for {
		parts, err := topicPartitions(ctx, cl, topic)
		if err == nil {
			return len(parts), nil
		}
		select {
		case <-ctx.Done():
			return 0, err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// DeleteTopic deletes topic; a topic that does not exist is no error.
// ctx and connectTimeout bound the call.
func (s *Source) DeleteTopic(ctx context.Context, topic string) error {
	cl, err := kgo.NewClient(s.base...)
	if err != nil {
		return fmt.Errorf("create kafka client: %w", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, s.connectTO)
	defer cancel()
	resp, err := kadm.NewClient(cl).DeleteTopic(ctx, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.UnknownTopicOrPartition) {
		return fmt.Errorf("delete kafka topic %s: %w", topic, err)
	}
	return nil
}

// DeleteBefore deletes, in each partition that offset (taken by Offset)
// names, the records before its next offset: what a checkpoint shows
// consumed. The second stage of a repartitioned rule purges its internal
// topic with it. ctx and connectTimeout bound the call.
func (s *Source) DeleteBefore(ctx context.Context, offset []byte) error {
	next, err := s.decodeOffset(offset)
	if err != nil || len(next) == 0 {
		return err
	}
	cl, err := kgo.NewClient(s.base...)
	if err != nil {
		return fmt.Errorf("create kafka client: %w", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, s.connectTO)
	defer cancel()
	var offs kadm.Offsets
	for p, n := range next {
		offs.AddOffset(s.topic, p, n, -1)
	}
	resp, err := kadm.NewClient(cl).DeleteRecords(ctx, offs)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return fmt.Errorf("delete consumed records of kafka topic %s: %w", s.topic, err)
	}
	return nil
}
