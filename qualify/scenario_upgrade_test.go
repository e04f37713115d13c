package qualify

import (
	"context"
	"os"
	"testing"
	"time"
)

// upgradeBins returns REKUIPER_OLD_BIN and REKUIPER_NEW_BIN, or two builds
// of the current tree (there is no earlier tag to build yet) so the path is
// exercised in CI.
func upgradeBins(t *testing.T) (string, string, bool) {
	t.Helper()
	oldBin, newBin := os.Getenv("REKUIPER_OLD_BIN"), os.Getenv("REKUIPER_NEW_BIN")
	if oldBin != "" && newBin != "" {
		return oldBin, newBin, false
	}
	oldBin = kuiperd(t)
	newBin, err := Build(context.Background(), "..", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return oldBin, newBin, true
}

// TestUpgradeRollback runs the operations guide's upgrade and rollback
// procedure between two builds under load.
func TestUpgradeRollback(t *testing.T) {
	env := scenarioEnv(t)
	oldBin, newBin, same := upgradeBins(t)
	res, err := RunUpgrade(context.Background(), env, UpgradeParams{OldBin: oldBin, NewBin: newBin, Rate: 100, Phase: 2 * time.Second})
	skipNoBroker(t, err)
	res.SameBuild = same
	for _, s := range res.Steps {
		t.Logf("%s: start %.2fs ready %.2fs streams %v rules %v running %d", s.Name, s.StartSeconds, s.ReadySeconds, s.Streams, s.Rules, s.Running)
	}
	t.Logf("counts %+v", res.Counts)
	if len(res.Steps) != 3 {
		t.Fatalf("%d steps, want old, new, rollback", len(res.Steps))
	}
	for _, v := range res.Violations() {
		t.Error(v)
	}
}
