package checkpoint

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/runtime"
)

func sample(id uint64) *Checkpoint {
	return &Checkpoint{
		ID: id, RuleID: "r/1", Fingerprint: "fp",
		Ops:     map[string][]byte{"3:window": {1, 2, 3}},
		State:   map[string][]byte{"analytic": {4}},
		Offsets: map[string][]byte{"s": []byte(`{"v":1,"i":7}`)},
		TakenAt: 1700000000000,
	}
}

func TestStoreRoundTripAndPrune(t *testing.T) {
	s := &Store{Dir: t.TempDir(), Keep: 2}
	for id := uint64(1); id <= 4; id++ {
		if _, err := s.Save(sample(id)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Latest("r/1", "fp")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, sample(4)) {
		t.Fatalf("got %+v, want %+v", got, sample(4))
	}
	if ids := s.ids(s.ruleDir("r/1")); !reflect.DeepEqual(ids, []uint64{4, 3}) {
		t.Fatalf("kept %v, want [4 3]", ids)
	}
}

// TestStoreFence: a checkpoint the fence refuses is not written; the
// error says why and the previous checkpoint stays the latest.
func TestStoreFence(t *testing.T) {
	errFenced := errors.New("fenced")
	fenced := false
	s := &Store{Dir: t.TempDir(), Fence: func(id string) error {
		if id != "r/1" {
			t.Errorf("fence asked about %q", id)
		}
		if fenced {
			return errFenced
		}
		return nil
	}}
	if _, err := s.Save(sample(1)); err != nil {
		t.Fatal(err)
	}
	fenced = true
	if _, err := s.Save(sample(2)); !errors.Is(err, errFenced) {
		t.Fatalf("save while fenced: %v", err)
	}
	if got, err := s.Latest("r/1", "fp"); err != nil || got.ID != 1 {
		t.Fatalf("latest after a fenced save: %v %v; want 1", got, err)
	}
}

func TestStoreSkipsCorruptNewest(t *testing.T) {
	s := &Store{Dir: t.TempDir()}
	for id := uint64(1); id <= 2; id++ {
		if _, err := s.Save(sample(id)); err != nil {
			t.Fatal(err)
		}
	}
	newest := filepath.Join(s.ruleDir("r/1"), "ckpt-00000000000000000002.bin")
	data, _ := os.ReadFile(newest)
	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(newest, data, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := s.Latest("r/1", "fp")
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != 1 {
		t.Fatalf("restored checkpoint %d, want the previous complete one (1)", got.ID)
	}
}

func TestStoreTornWriteLeavesPrevious(t *testing.T) {
	s := &Store{Dir: t.TempDir()}
	if _, err := s.Save(sample(1)); err != nil {
		t.Fatal(err)
	}
	// A crash between write and rename leaves a tmp file behind.
	tmp := filepath.Join(s.ruleDir("r/1"), "ckpt-00000000000000000002.bin.tmp")
	if err := os.WriteFile(tmp, []byte("RKCP\x01garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := s.Latest("r/1", "fp")
	if err != nil || got.ID != 1 {
		t.Fatalf("got %v, %v; want checkpoint 1", got, err)
	}
}

func TestStoreRefusesOtherDefinition(t *testing.T) {
	s := &Store{Dir: t.TempDir()}
	if _, err := s.Save(sample(1)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Latest("r/1", "other"); !errors.Is(err, ErrMismatch) {
		t.Fatalf("err = %v, want ErrMismatch", err)
	}
	if err := s.Delete("r/1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Latest("r/1", "fp"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after delete: err = %v, want ErrNotFound", err)
	}
}

type injector struct {
	c   *Coordinator
	key string
	mu  sync.Mutex
	ids []uint64
}

func (i *injector) InjectBarrier(id uint64) {
	i.mu.Lock()
	i.ids = append(i.ids, id)
	i.mu.Unlock()
	i.c.SourceReady(id, i.key, []byte{byte(id)})
}

type committed struct {
	mu  sync.Mutex
	ids []uint64
}

func (c *committed) CheckpointCommitted(cp *Checkpoint) error {
	c.mu.Lock()
	c.ids = append(c.ids, cp.ID)
	c.mu.Unlock()
	return nil
}

func TestCoordinatorCompletesAndAbandons(t *testing.T) {
	vc := clock.NewVirtual(0)
	store := &Store{Dir: t.TempDir()}
	com := &committed{}
	c := NewCoordinator(Config{RuleID: "r", Fingerprint: "fp", Interval: time.Second, Store: store, Clock: vc, Sinks: 1, Committers: []Committer{com}})
	inj := &injector{c: c, key: "src"}
	c.cfg.Sources = map[string]Injector{"src": inj}
	c.Start()

	vc.AdvanceTo(1000, nil) // barrier 1 injected
	c.OnSnapshot(&runtime.Snapshot{ID: 1, Ops: map[string][]byte{"0:window": {9}}, State: map[string][]byte{}})
	if st := c.Stats(); st.Completed != 0 {
		t.Fatalf("completed before the sink acknowledged: %+v", st)
	}
	c.OnSinkAck(1, 0)
	if st := c.Stats(); st.Completed != 1 || st.LastID != 1 {
		t.Fatalf("stats %+v, want checkpoint 1 completed", st)
	}
	cp, err := store.Latest("r", "fp")
	if err != nil || cp.ID != 1 || cp.Offsets["src"][0] != 1 {
		t.Fatalf("stored %+v, %v", cp, err)
	}

	vc.AdvanceTo(2000, nil) // barrier 2: the sink never acknowledges
	c.OnSnapshot(&runtime.Snapshot{ID: 2, Ops: map[string][]byte{}, State: map[string][]byte{}})
	vc.AdvanceTo(3000, nil) // barrier 3 abandons 2
	if st := c.Stats(); st.Abandoned != 1 {
		t.Fatalf("stats %+v, want one abandoned checkpoint", st)
	}
	c.OnSnapshot(&runtime.Snapshot{ID: 3, Ops: map[string][]byte{}, State: map[string][]byte{}})
	c.OnSinkAck(2, 0) // late ack of the abandoned checkpoint is ignored
	c.OnSinkAck(3, 0)
	if st := c.Stats(); st.Completed != 2 || st.LastID != 3 {
		t.Fatalf("stats %+v, want checkpoint 3 completed", st)
	}
	if !reflect.DeepEqual(com.ids, []uint64{1, 3}) {
		t.Fatalf("committed %v, want [1 3]", com.ids)
	}
	if id, ok := store.Committed("r"); !ok || id != 3 {
		t.Fatalf("committed marker = %d %v, want 3", id, ok)
	}
	c.Stop()
}

// failing refuses to commit the checkpoints listed in fail.
type failing struct {
	fail map[uint64]bool
}

func (f *failing) CheckpointCommitted(cp *Checkpoint) error {
	if f.fail[cp.ID] {
		return errors.New("commit refused")
	}
	return nil
}

// markSeen records, when a follower is called, which checkpoint the store
// had marked committed at that moment.
type markSeen struct {
	store *Store
	saw   []uint64
}

func (m *markSeen) CheckpointCommitted(cp *Checkpoint) error {
	id, _ := m.store.Committed("r")
	m.saw = append(m.saw, cp.ID*1000+id)
	return nil
}

// TestFollowersOnlyAfterCommit: followers (source log truncation) hear of a
// checkpoint only once every committer succeeded and the store marked it
// committed; a checkpoint a committer refused never reaches them, since a
// restore may go back behind it.
func TestFollowersOnlyAfterCommit(t *testing.T) {
	vc := clock.NewVirtual(0)
	store := &Store{Dir: t.TempDir()}
	follower := &markSeen{store: store}
	c := NewCoordinator(Config{RuleID: "r", Fingerprint: "fp", Interval: time.Second, Store: store, Clock: vc, Sinks: 1})
	inj := &injector{c: c, key: "src"}
	c.SetSources(map[string]Injector{"src": inj}, []Committer{&failing{fail: map[uint64]bool{2: true}}}, []Committer{follower})
	c.Start()
	defer c.Stop()
	for id := uint64(1); id <= 3; id++ {
		vc.AdvanceTo(int64(id)*1000, nil)
		c.OnSnapshot(&runtime.Snapshot{ID: id, Ops: map[string][]byte{}, State: map[string][]byte{}})
		c.OnSinkAck(id, 0)
	}
	// 1 and 3 reached the follower with the marker already at their id;
	// 2 (refused) did not.
	if !reflect.DeepEqual(follower.saw, []uint64{1001, 3003}) {
		t.Fatalf("follower saw %v, want [1001 3003]", follower.saw)
	}
}
