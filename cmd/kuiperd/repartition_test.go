package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rekuiper/rekuiper/internal/testwait"
)

// unkeyed puts a record in a random partition under a random key: the
// records of one device are in every partition.
func unkeyed(int) (int32, []byte) {
	return rand.Int32N(partTopicPartitions), fmt.Appendf(nil, "%x", rand.Uint64())
}

// stages counts, in a status, the running tasks of each stage per node.
func stages(st map[string]any) (repart, own map[string]int) {
	repart, own = map[string]int{}, map[string]int{}
	tasks, _ := st["tasks"].([]any)
	for _, x := range tasks {
		m, _ := x.(map[string]any)
		if m["status"] != "running" {
			continue
		}
		if m["stage"] == "repartition" {
			repart[fmt.Sprint(m["node"])]++
		} else {
			own[fmt.Sprint(m["node"])]++
		}
	}
	return repart, own
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// TestClusterRepartitionedRule: a windowed GROUP BY rule over a
// 6-partition Kafka topic whose producers key records at random runs on
// two nodes as six tasks re-keying the stream by device into the internal
// topic and six tasks reading its partitions, and writes, at qos 2,
// exactly the windows the same rule writes on a single node. Once a node
// is killed, its tasks of both stages resume on the other node: every
// window is still exact, and none is written twice. Deleting the rule
// deletes the internal topic.
func TestClusterRepartitionedRule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs kuiperd")
	}
	// No keyField: the records are not keyed by device.
	k, whole, a, b := startPartRuns(t, "", 2)

	var repart, own map[string]int
	testwait.Within(t, 60*time.Second, "six repartitioning tasks and six tasks of the rule running, six on each node", func() bool {
		repart, own = stages(ruleStatus(b.daemon))
		return total(repart) == partTopicPartitions && total(own) == partTopicPartitions &&
			repart[a.id]+own[a.id] == partTopicPartitions && repart[b.id]+own[b.id] == partTopicPartitions
	})
	t.Logf("repartitioning tasks per node %v, the rule's %v", repart, own)
	if st := ruleStatus(whole); st["tasks"] != nil || st["status"] != "running" {
		t.Fatalf("single node: status %v, tasks %v: want running whole", st["status"], st["tasks"])
	}

	n1 := k.produce(t, partBase, false, unkeyed)
	testwait.Within(t, 30*time.Second, "the single node read the records", func() bool { return recordsIn(ruleStatus(whole)) == int64(n1) })
	// The rule's status counts the records its own tasks read from the
	// internal topic, not those of the repartitioning stage.
	testwait.Within(t, 60*time.Second, "the rule's tasks read every record through the internal topic", func() bool {
		return recordsIn(ruleStatus(a.daemon))+recordsIn(ruleStatus(b.daemon)) == int64(n1)
	})
	k.produce(t, partBase+3_600_000, true, unkeyed)
	want := partDevices * partWindows
	_, single := sameWindows(t, k, 60*time.Second, "phase 1", want, false)
	checkWindows(t, single, partBase)

	// kill -9 a node once its tasks completed two more checkpoints: its
	// tasks of both stages resume on the other node from their shared
	// checkpoints, the first stage's open transactions aborted.
	victim, survivor := a, b
	waitCheckpoints(t, victim, 2)
	survivorRead := recordsIn(ruleStatus(survivor.daemon))
	killed := victim.kill9(t)
	testwait.Within(t, 60*time.Second, "every task of both stages running on the survivor", func() bool {
		repart, own = stages(ruleStatus(survivor.daemon))
		return repart[survivor.id] == partTopicPartitions && own[survivor.id] == partTopicPartitions
	})
	t.Logf("tasks of %s running on %s %s after kill -9 (lease time %s)", victim.id, survivor.id, time.Since(killed).Round(100*time.Millisecond), testLeaseTime)
	n2 := k.produce(t, partBase+3_600_000+1000, false, unkeyed)
	testwait.Within(t, 30*time.Second, "the single node read phase 2", func() bool {
		return recordsIn(ruleStatus(whole)) == int64(n1+partDevices+n2)
	})
	// The first-stage tasks run apart: a flush record one of them writes
	// before another wrote its phase 2 records would make those late.
	testwait.Within(t, 60*time.Second, "the rule's tasks read phase 2", func() bool {
		return recordsIn(ruleStatus(survivor.daemon))-survivorRead >= int64(n2)
	})
	k.produce(t, partBase+7_200_000, true, unkeyed)
	want = partDevices*partWindows*2 + partDevices
	split, _ := sameWindows(t, k, 60*time.Second, "phase 2", want, true)
	if len(split) != want {
		t.Fatalf("after the kill: %d windows written twice (want 0 at qos 2)", len(split)-want)
	}

	adm := func() *kadm.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(k.addr))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return kadm.NewClient(cl)
	}
	const internal = "rekuiper-agg-repartition"
	td, err := adm().ListTopics(context.Background(), internal)
	if err != nil || !td.Has(internal) || len(td[internal].Partitions) != partTopicPartitions {
		t.Fatalf("internal topic %s: %v, %v (want %d partitions)", internal, td, err, partTopicPartitions)
	}
	if _, err := survivor.daemon.c.DeleteRule(context.Background(), "agg"); err != nil {
		t.Fatal(err)
	}
	testwait.Within(t, 30*time.Second, "the internal topic deleted with the rule", func() bool {
		td, err := adm().ListTopics(context.Background(), internal)
		return err == nil && !td.Has(internal)
	})
}

// minus returns the rows of a that are not in b.
func minus(a, b []string) []string {
	var out []string
	for _, r := range a {
		if !slices.Contains(b, r) {
			out = append(out, r)
		}
	}
	return out
}
