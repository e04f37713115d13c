package catalog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

func newCatalog(t *testing.T, s Store) *Catalog {
	t.Helper()
	c, err := New(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// memSnapshot is the Catalog's memory in Snapshot form (nil for empty).
func memSnapshot(c *Catalog) *Snapshot {
	nilIfEmpty := func(n int) bool { return n == 0 }
	snap := &Snapshot{}
	if l := c.Streams(""); !nilIfEmpty(len(l)) {
		snap.Streams = l
	}
	if l := c.Rules(); !nilIfEmpty(len(l)) {
		snap.Rules = l
	}
	if l := c.Connections(); !nilIfEmpty(len(l)) {
		snap.Connections = l
	}
	var keys []ConfKey
	for _, cat := range []ConfCategory{ConfConnection, ConfSink, ConfSource} {
		keys = append(keys, c.ConfKeys(cat, "")...)
	}
	snap.ConfKeys = keys
	if l := c.Schemas(""); !nilIfEmpty(len(l)) {
		snap.Schemas = l
	}
	if l := c.Uploads(); !nilIfEmpty(len(l)) {
		snap.Uploads = l
	}
	return snap
}

// assertMemoryMatchesDisk checks that the Catalog's view equals the store.
func assertMemoryMatchesDisk(t *testing.T, c *Catalog, s Store) {
	t.Helper()
	disk, err := s.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if mem := memSnapshot(c); !reflect.DeepEqual(mem, disk) {
		t.Errorf("memory differs from disk:\nmemory %+v\ndisk   %+v", mem, disk)
	}
}

func TestCatalogCRUD(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s, clk := b.newStore(t)
		c := newCatalog(t, s)

		st, err := c.PutStream(ctx, Stream{Name: "demo", Kind: KindStream, SQL: "CREATE STREAM demo () WITH (TYPE=\"mqtt\")"}, Create)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := c.Stream("demo"); err != nil || !reflect.DeepEqual(got, st) {
			t.Errorf("Stream = %+v %v", got, err)
		}
		if _, err := c.PutStream(ctx, Stream{Name: "demo", Kind: KindTable}, Create); !errors.Is(err, ErrConflict) {
			t.Errorf("duplicate create: %v", err)
		}
		if got, _ := c.Stream("demo"); got.Kind != KindStream {
			t.Errorf("failed create changed memory: %+v", got)
		}

		r, err := c.PutRule(ctx, Rule{ID: "r1", Definition: []byte(`{"id":"r1"}`), State: RuleRunning, Tags: []string{"site-a"}}, Create)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.PutRule(ctx, Rule{ID: "r2", Definition: []byte(`{"id":"r2"}`), State: RuleRunning, Tags: []string{"site-b"}}, Create); err != nil {
			t.Fatal(err)
		}
		if l := c.Rules("site-a"); len(l) != 1 || l[0].ID != "r1" {
			t.Errorf("Rules(site-a) = %+v", l)
		}
		clk.AdvanceTo(t0+10, nil)
		stopped, err := c.SetRuleState(ctx, "r1", RuleStopped)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := c.Rule("r1"); got.State != RuleStopped || !got.Updated.After(r.Updated) || !reflect.DeepEqual(got, stopped) {
			t.Errorf("rule after stop %+v", got)
		}
		if _, err := c.SetRuleState(ctx, "zz", RuleStopped); !errors.Is(err, ErrNotFound) {
			t.Errorf("SetRuleState(zz) = %v", err)
		}

		if _, err := c.PutConnection(ctx, Connection{ID: "c1", Type: "mqtt", Props: map[string]any{"server": "tcp://h:1883", "qos": int64(1)}}, Upsert); err != nil {
			t.Fatal(err)
		}
		if _, err := c.PutConfKey(ctx, ConfKey{Category: ConfSource, Type: "mqtt", Key: "k1", Props: map[string]any{"qos": int64(0)}}, Upsert); err != nil {
			t.Fatal(err)
		}
		if _, err := c.PutSchema(ctx, Schema{Type: "protobuf", Name: "p1", Content: "x"}, Upsert); err != nil {
			t.Fatal(err)
		}
		if _, err := c.PutUpload(ctx, Upload{Name: "u1", Path: "/u1", Size: 3}, Upsert); err != nil {
			t.Fatal(err)
		}
		assertMemoryMatchesDisk(t, c, s)

		t.Run("reads return copies", func(t *testing.T) {
			conn, _ := c.Connection("c1")
			conn.Props["server"] = "changed"
			k, _ := c.ConfKey(ConfSource, "mqtt", "k1")
			k.Props["qos"] = int64(9)
			rule, _ := c.Rule("r1")
			rule.Tags[0] = "changed"
			rule.Definition[0] = '['
			assertMemoryMatchesDisk(t, c, s)
		})
		t.Run("puts copy their input", func(t *testing.T) {
			props := map[string]any{"nested": map[string]any{"a": int64(1)}}
			if _, err := c.PutConnection(ctx, Connection{ID: "c2", Type: "kafka", Props: props}, Create); err != nil {
				t.Fatal(err)
			}
			props["nested"].(map[string]any)["a"] = int64(2)
			def := []byte(`{"id":"r3"}`)
			if _, err := c.PutRule(ctx, Rule{ID: "r3", Definition: def, State: RuleStopped}, Create); err != nil {
				t.Fatal(err)
			}
			def[0] = '['
			assertMemoryMatchesDisk(t, c, s)
		})
		t.Run("deletes", func(t *testing.T) {
			for _, del := range []func() error{
				func() error { return c.DeleteStream(ctx, "demo") },
				func() error { return c.DeleteRule(ctx, "r1") },
				func() error { return c.DeleteConnection(ctx, "c1") },
				func() error { return c.DeleteConfKey(ctx, ConfSource, "mqtt", "k1") },
				func() error { return c.DeleteSchema(ctx, "protobuf", "p1") },
				func() error { return c.DeleteUpload(ctx, "u1") },
			} {
				if err := del(); err != nil {
					t.Fatal(err)
				}
				if err := del(); !errors.Is(err, ErrNotFound) {
					t.Errorf("second delete: %v", err)
				}
			}
			for _, get := range []func() error{
				func() error { _, err := c.Stream("demo"); return err },
				func() error { _, err := c.Rule("r1"); return err },
				func() error { _, err := c.Connection("c1"); return err },
				func() error { _, err := c.ConfKey(ConfSource, "mqtt", "k1"); return err },
				func() error { _, err := c.Schema("protobuf", "p1"); return err },
				func() error { _, err := c.Upload("u1"); return err },
			} {
				if err := get(); !errors.Is(err, ErrNotFound) {
					t.Errorf("get after delete: %v", err)
				}
			}
			assertMemoryMatchesDisk(t, c, s)
		})
	})
}

func TestCatalogReloads(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		s, target := b.fresh(t)
		c := newCatalog(t, s)
		fillStore(t, &catalogStore{c})
		want := memSnapshot(c)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		c2 := newCatalog(t, b.openAt(t, target, nil))
		if got := memSnapshot(c2); !reflect.DeepEqual(got, want) {
			t.Errorf("reloaded catalog\n got %+v\nwant %+v", got, want)
		}
	})
}

// catalogStore adapts the Catalog's puts to the Store shape fillStore uses.
type catalogStore struct{ *Catalog }

func (c *catalogStore) GetStream(context.Context, string) (Stream, error) { panic("unused") }
func (c *catalogStore) ListStreams(context.Context, StreamKind) ([]Stream, error) {
	panic("unused")
}
func (c *catalogStore) GetRule(context.Context, string) (Rule, error) { panic("unused") }
func (c *catalogStore) ListRules(context.Context) ([]Rule, error)     { panic("unused") }
func (c *catalogStore) GetConnection(context.Context, string) (Connection, error) {
	panic("unused")
}
func (c *catalogStore) ListConnections(context.Context) ([]Connection, error) { panic("unused") }
func (c *catalogStore) GetConfKey(context.Context, ConfCategory, string, string) (ConfKey, error) {
	panic("unused")
}
func (c *catalogStore) ListConfKeys(context.Context, ConfCategory, string) ([]ConfKey, error) {
	panic("unused")
}
func (c *catalogStore) GetSchema(context.Context, string, string) (Schema, error) {
	panic("unused")
}
func (c *catalogStore) ListSchemas(context.Context, string) ([]Schema, error) { panic("unused") }
func (c *catalogStore) GetUpload(context.Context, string) (Upload, error)     { panic("unused") }
func (c *catalogStore) ListUploads(context.Context) ([]Upload, error)         { panic("unused") }
func (c *catalogStore) Load(context.Context) (*Snapshot, error)               { panic("unused") }
func (c *catalogStore) Close() error                                          { return nil }

var _ Store = (*catalogStore)(nil)

// fault is one real way to make the store's writes fail.
type fault struct {
	name string
	// setup opens the store the catalog uses; it may skip the test.
	setup func(t *testing.T) Store
	// inject starts the fault and returns the function that removes it.
	inject func(t *testing.T, s Store) (remove func())
	// mutations that must fail while the fault is in place.
	mutations func(ctx context.Context, c *Catalog) []namedMutation
}

type namedMutation struct {
	name string
	fn   func() error
}

// bigRule needs many new pages, so it fails on a full database or disk.
func bigRule(id string) Rule {
	return Rule{ID: id, Definition: []byte(`{"pad":"` + strings.Repeat("x", 256<<10) + `"}`), State: RuleRunning}
}

// growingMutations run in order; each succeeds once the fault is gone.
func growingMutations(ctx context.Context, c *Catalog) []namedMutation {
	return []namedMutation{
		{"create big rule", func() error { _, err := c.PutRule(ctx, bigRule("big"), Create); return err }},
		{"replace rule with big one", func() error { _, err := c.PutRule(ctx, bigRule("r1"), Replace); return err }},
		{"put big connection", func() error {
			_, err := c.PutConnection(ctx, Connection{ID: "c9", Type: "mqtt", Props: map[string]any{"pad": strings.Repeat("y", 256<<10)}}, Upsert)
			return err
		}},
	}
}

func allMutations(ctx context.Context, c *Catalog) []namedMutation {
	return append(growingMutations(ctx, c), []namedMutation{
		{"create small rule", func() error {
			_, err := c.PutRule(ctx, Rule{ID: "new", Definition: []byte("{}"), State: RuleRunning}, Create)
			return err
		}},
		{"stop rule", func() error { _, err := c.SetRuleState(ctx, "r1", RuleStopped); return err }},
		{"put conf key", func() error {
			_, err := c.PutConfKey(ctx, ConfKey{Category: ConfSink, Type: "mqtt", Key: "x"}, Upsert)
			return err
		}},
		{"delete stream", func() error { return c.DeleteStream(ctx, "demo") }},
		{"delete rule", func() error { return c.DeleteRule(ctx, "r1") }},
	}...)
}

func faults() []fault {
	ctx := context.Background()
	tempStore := func(t *testing.T) Store {
		return openStore(t, filepath.Join(t.TempDir(), DefaultFileName), Options{BusyTimeout: 100 * time.Millisecond})
	}
	return append([]fault{
		{
			name:  "sqlite: write lock held by another connection",
			setup: tempStore,
			inject: func(t *testing.T, s Store) func() {
				conn, err := rawDB(t, s.(*SQLiteStore).Path()).Conn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := conn.ExecContext(ctx, "BEGIN EXCLUSIVE"); err != nil {
					t.Fatal(err)
				}
				// The lock holder writes too, then gives up: its change must
				// never be seen.
				if _, err := conn.ExecContext(ctx, "DELETE FROM rules"); err != nil {
					t.Fatal(err)
				}
				return func() {
					if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
						t.Fatal(err)
					}
					conn.Close()
				}
			},
			mutations: allMutations,
		},
		{
			name:  "sqlite: database full (max_page_count)",
			setup: tempStore,
			inject: func(t *testing.T, st Store) func() {
				s := st.(*SQLiteStore)
				if _, err := s.writer.ExecContext(ctx, "PRAGMA max_page_count = 1"); err != nil {
					t.Fatal(err)
				}
				// SQLite never sets the limit below the current size, so
				// this pins the database at its present page count.
				var n int
				if err := s.writer.QueryRowContext(ctx, "PRAGMA max_page_count").Scan(&n); err != nil || n < 2 {
					t.Fatalf("max_page_count %d %v", n, err)
				}
				return func() {
					if _, err := s.writer.ExecContext(ctx, "PRAGMA max_page_count = 1073741823"); err != nil {
						t.Fatal(err)
					}
				}
			},
			mutations: growingMutations,
		},
		{
			name: "sqlite: disk full (size-capped tmpfs)",
			setup: func(t *testing.T) Store {
				dir := t.TempDir()
				if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", dir).CombinedOutput(); err != nil {
					t.Skipf("skipping: cannot mount a size-capped tmpfs (needs root): %v: %s", err, out)
				}
				t.Cleanup(func() {
					if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
						t.Errorf("umount %s: %v: %s", dir, err, out)
					}
				})
				return openStore(t, filepath.Join(dir, DefaultFileName), Options{BusyTimeout: 100 * time.Millisecond})
			},
			inject: func(t *testing.T, s Store) func() {
				filler := filepath.Join(filepath.Dir(s.(*SQLiteStore).Path()), "filler")
				f, err := os.Create(filler)
				if err != nil {
					t.Fatal(err)
				}
				chunk := make([]byte, 4096)
				for {
					if _, err := f.Write(chunk); err != nil {
						break // ENOSPC: the file system is full
					}
				}
				f.Close()
				return func() {
					if err := os.Remove(filler); err != nil {
						t.Fatal(err)
					}
				}
			},
			mutations: growingMutations,
		},
	}, postgresFaults()...)
}

// TestFailedWriteLeavesMemoryAndDiskUnchanged provokes real write
// failures of both stores and checks the Catalog's contract: the error is returned, memory
// and disk keep their state, and after the fault is removed writes succeed
// on an intact database.
func TestFailedWriteLeavesMemoryAndDiskUnchanged(t *testing.T) {
	ctx := context.Background()
	for _, f := range faults() {
		t.Run(f.name, func(t *testing.T) {
			s := f.setup(t)
			c := newCatalog(t, s)
			seed(t, c)
			memBefore := memSnapshot(c)
			diskBefore, err := s.Load(ctx)
			if err != nil {
				t.Fatal(err)
			}

			remove := f.inject(t, s)
			for _, m := range f.mutations(ctx, c) {
				name := m.name
				err := m.fn()
				if err == nil {
					t.Errorf("%s succeeded during the fault", name)
					continue
				}
				t.Logf("%s: %v", name, err)
				if errors.Is(err, ErrNotFound) || errors.Is(err, ErrConflict) || errors.Is(err, ErrInvalid) {
					t.Errorf("%s failed for the wrong reason: %v", name, err)
				}
				if got := memSnapshot(c); !reflect.DeepEqual(got, memBefore) {
					t.Errorf("%s: memory changed by a failed write", name)
				}
			}
			remove()

			if got := memSnapshot(c); !reflect.DeepEqual(got, memBefore) {
				t.Error("memory changed by failed writes")
			}
			diskAfter, err := s.Load(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(diskAfter, diskBefore) {
				t.Errorf("disk changed by failed writes:\n got %+v\nwant %+v", diskAfter, diskBefore)
			}
			for _, m := range f.mutations(ctx, c) {
				if err := m.fn(); err != nil {
					t.Errorf("%s after the fault was removed: %v", m.name, err)
				}
			}
			assertMemoryMatchesDisk(t, c, s)
			if s, ok := s.(*SQLiteStore); ok {
				if err := s.IntegrityCheck(ctx); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// seed puts the entities the fault mutations expect.
func seed(t *testing.T, c *Catalog) {
	t.Helper()
	ctx := context.Background()
	if _, err := c.PutStream(ctx, Stream{Name: "demo", Kind: KindStream, SQL: "CREATE STREAM demo ()"}, Create); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutRule(ctx, Rule{ID: "r1", Definition: []byte(`{"id":"r1"}`), State: RuleRunning}, Create); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutConnection(ctx, Connection{ID: "c1", Type: "mqtt", Props: map[string]any{"server": "tcp://127.0.0.1:1883"}}, Create); err != nil {
		t.Fatal(err)
	}
}

func TestCatalogConcurrentMutations(t *testing.T) {
	forEachBackend(t, testConcurrentMutations)
}

func testConcurrentMutations(t *testing.T, b backend) {
	ctx := context.Background()
	s, _ := b.fresh(t)
	c := newCatalog(t, s)
	const workers, each = 12, 20
	var wg sync.WaitGroup
	errs := make(chan error, workers*each*3)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				id := fmt.Sprintf("r%02d_%02d", w, i)
				if _, err := c.PutRule(ctx, Rule{ID: id, Definition: []byte(`{"id":"` + id + `"}`), State: RuleRunning, Tags: []string{fmt.Sprint(w)}}, Create); err != nil {
					errs <- err
				}
				if i%2 == 0 {
					if _, err := c.SetRuleState(ctx, id, RuleStopped); err != nil {
						errs <- err
					}
				}
				if _, err := c.PutConfKey(ctx, ConfKey{Category: ConfSource, Type: "mqtt", Key: "shared", Props: map[string]any{"last": id}}, Upsert); err != nil {
					errs <- err
				}
				_ = c.Rules() // readers run alongside writers
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	rules := c.Rules()
	if len(rules) != workers*each {
		t.Fatalf("%d rules in memory, want %d", len(rules), workers*each)
	}
	stopped := 0
	for _, r := range rules {
		if r.State == RuleStopped {
			stopped++
		}
	}
	if stopped != workers*each/2 {
		t.Errorf("%d stopped rules, want %d", stopped, workers*each/2)
	}
	if l := c.Rules("3"); len(l) != each {
		t.Errorf("%d rules tagged 3, want %d", len(l), each)
	}
	assertMemoryMatchesDisk(t, c, s)
	if s, ok := s.(*SQLiteStore); ok {
		if err := s.IntegrityCheck(ctx); err != nil {
			t.Error(err)
		}
	}
}

func TestCatalogBackup(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	c := newCatalog(t, s)
	fillStore(t, &catalogStore{c})
	dst := filepath.Join(t.TempDir(), "backup", "catalog.db")
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := c.Backup(ctx, dst); err != nil {
		t.Fatal(err)
	}
	b := openStore(t, dst, Options{})
	restored := newCatalog(t, b)
	if got, want := memSnapshot(restored), memSnapshot(c); !reflect.DeepEqual(got, want) {
		t.Errorf("backup catalog\n got %+v\nwant %+v", got, want)
	}
}
