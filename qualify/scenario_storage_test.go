package qualify

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestStorageFaults fills kuiperd's data folder (a size-capped tmpfs):
// catalog writes answer 500, reads answer 200, running rules keep running,
// writes succeed once space returns, integrity_check says ok, and a daemon
// started on an online backup of the catalog finds every stream and rule.
func TestStorageFaults(t *testing.T) {
	env := scenarioEnv(t)
	res, err := RunStorage(context.Background(), env, StorageParams{Rate: 100, Duration: 6 * time.Second})
	if errors.Is(err, ErrNoTmpfs) {
		t.Skip(err)
	}
	skipNoBroker(t, err)
	t.Logf("%+v", res)
	if res.FillerBytes == 0 {
		t.Error("the filler wrote nothing: the data folder was not filled")
	}
	for _, v := range res.Violations() {
		t.Error(v)
	}
}
