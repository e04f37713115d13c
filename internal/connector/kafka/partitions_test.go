package kafka

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
)

// TestEnsureAndDeleteTopic: the internal topic of a repartitioned rule is
// created with the partitions asked for, an existing one keeps its own,
// and deleting it twice is no error.
func TestEnsureAndDeleteTopic(t *testing.T) {
	k := newCluster(t)
	in := topicName(t)
	k.createTopic(t, in, 2)
	s := newSource(t, map[string]any{"brokers": k.addr(), "datasource": in})
	ctx := context.Background()
	internal := in + "-repartition"
	for i, want := range []int{6, 6} { // created, then found
		n, err := s.EnsureTopic(ctx, internal, 6)
		if err != nil || n != want {
			t.Fatalf("ensure %d: %d partitions, %v; want %d", i, n, err, want)
		}
	}
	if n, err := s.EnsureTopic(ctx, in, 6); err != nil || n != 2 {
		t.Fatalf("ensure of an existing 2-partition topic: %d, %v; want 2 (kept)", n, err)
	}
	for range 2 {
		if err := s.DeleteTopic(ctx, internal); err != nil {
			t.Fatal(err)
		}
	}
	// A new client: kadm answers from a client's cached metadata.
	td, err := kadm.NewClient(k.client(t)).ListTopics(ctx, internal)
	if err != nil || td.Has(internal) {
		t.Fatalf("topic after delete: %v, %v", td, err)
	}
}

// TestDeleteBefore: the records before an offset taken by Offset go, in
// the partitions it names.
func TestDeleteBefore(t *testing.T) {
	k := newCluster(t)
	topic := topicName(t)
	k.createTopic(t, topic, 2)
	k.produce(t, topic, keyed(10, 0)...)
	s := newSource(t, map[string]any{"brokers": k.addr(), "datasource": topic, "partition": 1})
	connectT(t, s)
	defer s.Close(context.Background())
	readValues(t, s, 3)
	off, err := s.Offset()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteBefore(context.Background(), off); err != nil {
		t.Fatal(err)
	}
	starts, err := kadm.NewClient(k.client(t)).ListStartOffsets(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := starts.Lookup(topic, 1); o.Offset != 3 {
		t.Errorf("partition 1 starts at %d, want 3", o.Offset)
	}
	if o, _ := starts.Lookup(topic, 0); o.Offset != 0 {
		t.Errorf("partition 0 starts at %d, want 0 (not named by the offset)", o.Offset)
	}
}
