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
