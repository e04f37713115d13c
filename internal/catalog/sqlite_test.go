package catalog

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/clock"
)

const t0 = int64(1_700_000_000_000) // virtual start, ms

func openStore(t *testing.T, path string, opts Options) *SQLiteStore {
	t.Helper()
	s, err := Open(context.Background(), path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newStore(t *testing.T) (*SQLiteStore, *clock.Virtual) {
	t.Helper()
	clk := clock.NewVirtual(t0)
	return openStore(t, filepath.Join(t.TempDir(), "data", DefaultFileName), Options{Clock: clk}), clk
}

// kindOps drives one entity kind through the Store generically.
type kindOps struct {
	name   string
	put    func(s Store, mode PutMode, variant int) (any, error)
	get    func(s Store) (any, error)
	list   func(s Store) (int, error)
	del    func(s Store) error
	fields func(v any) any // the user-set fields, without timestamps
	times  func(v any) (created, updated time.Time)
}

func allKinds() []kindOps {
	ctx := context.Background()
	return []kindOps{
		{
			name: "stream",
			put: func(s Store, mode PutMode, n int) (any, error) {
				return s.PutStream(ctx, Stream{Name: "demo", Kind: KindStream, SQL: strings.Repeat("x", n+1)}, mode)
			},
			get:    func(s Store) (any, error) { return s.GetStream(ctx, "demo") },
			list:   func(s Store) (int, error) { l, err := s.ListStreams(ctx, KindStream); return len(l), err },
			del:    func(s Store) error { return s.DeleteStream(ctx, "demo") },
			fields: func(v any) any { x := v.(Stream); return []any{x.Name, x.Kind, x.SQL} },
			times:  func(v any) (time.Time, time.Time) { x := v.(Stream); return x.Created, x.Updated },
		},
		{
			name: "rule",
			put: func(s Store, mode PutMode, n int) (any, error) {
				def := json.RawMessage(`{"id":"r1","sql":"SELECT * FROM demo","n":` + string(rune('0'+n)) + `}`)
				return s.PutRule(ctx, Rule{ID: "r1", Definition: def, State: RuleRunning, Version: "v1", Tags: []string{"a", "b"}}, mode)
			},
			get:  func(s Store) (any, error) { return s.GetRule(ctx, "r1") },
			list: func(s Store) (int, error) { l, err := s.ListRules(ctx); return len(l), err },
			del:  func(s Store) error { return s.DeleteRule(ctx, "r1") },
			fields: func(v any) any {
				x := v.(Rule)
				return []any{x.ID, string(x.Definition), x.State, x.Version, x.Tags}
			},
			times: func(v any) (time.Time, time.Time) { x := v.(Rule); return x.Created, x.Updated },
		},
		{
			name: "connection",
			put: func(s Store, mode PutMode, n int) (any, error) {
				return s.PutConnection(ctx, Connection{ID: "c1", Type: "mqtt", Props: map[string]any{
					"server": "tcp://127.0.0.1:1883", "qos": int64(n), "ratio": 0.5, "tls": map[string]any{"on": true}, "list": []any{"a", int64(1)},
				}}, mode)
			},
			get:    func(s Store) (any, error) { return s.GetConnection(ctx, "c1") },
			list:   func(s Store) (int, error) { l, err := s.ListConnections(ctx); return len(l), err },
			del:    func(s Store) error { return s.DeleteConnection(ctx, "c1") },
			fields: func(v any) any { x := v.(Connection); return []any{x.ID, x.Type, x.Props} },
			times:  func(v any) (time.Time, time.Time) { x := v.(Connection); return x.Created, x.Updated },
		},
		{
			name: "confKey",
			put: func(s Store, mode PutMode, n int) (any, error) {
				return s.PutConfKey(ctx, ConfKey{Category: ConfSource, Type: "mqtt", Key: "demo_conf", Props: map[string]any{"qos": int64(n)}}, mode)
			},
			get:    func(s Store) (any, error) { return s.GetConfKey(ctx, ConfSource, "mqtt", "demo_conf") },
			list:   func(s Store) (int, error) { l, err := s.ListConfKeys(ctx, ConfSource, "mqtt"); return len(l), err },
			del:    func(s Store) error { return s.DeleteConfKey(ctx, ConfSource, "mqtt", "demo_conf") },
			fields: func(v any) any { x := v.(ConfKey); return []any{x.Category, x.Type, x.Key, x.Props} },
			times:  func(v any) (time.Time, time.Time) { x := v.(ConfKey); return x.Created, x.Updated },
		},
		{
			name: "schema",
			put: func(s Store, mode PutMode, n int) (any, error) {
				return s.PutSchema(ctx, Schema{Type: "protobuf", Name: "s1", Content: "syntax = \"proto3\";", File: "f", Version: string(rune('0' + n))}, mode)
			},
			get:    func(s Store) (any, error) { return s.GetSchema(ctx, "protobuf", "s1") },
			list:   func(s Store) (int, error) { l, err := s.ListSchemas(ctx, "protobuf"); return len(l), err },
			del:    func(s Store) error { return s.DeleteSchema(ctx, "protobuf", "s1") },
			fields: func(v any) any { x := v.(Schema); return []any{x.Type, x.Name, x.Content, x.File, x.SoFile, x.Version} },
			times:  func(v any) (time.Time, time.Time) { x := v.(Schema); return x.Created, x.Updated },
		},
		{
			name: "upload",
			put: func(s Store, mode PutMode, n int) (any, error) {
				return s.PutUpload(ctx, Upload{Name: "a.csv", Path: "/data/uploads/a.csv", Size: int64(n), SHA256: "abc"}, mode)
			},
			get:    func(s Store) (any, error) { return s.GetUpload(ctx, "a.csv") },
			list:   func(s Store) (int, error) { l, err := s.ListUploads(ctx); return len(l), err },
			del:    func(s Store) error { return s.DeleteUpload(ctx, "a.csv") },
			fields: func(v any) any { x := v.(Upload); return []any{x.Name, x.Path, x.Size, x.SHA256} },
			times:  func(v any) (time.Time, time.Time) { x := v.(Upload); return x.Created, x.Updated },
		},
	}
}

func TestStoreCRUD(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		for _, k := range allKinds() {
			t.Run(k.name, func(t *testing.T) {
				s, clk := b.newStore(t)
				if _, err := k.get(s); !errors.Is(err, ErrNotFound) {
					t.Fatalf("get before put: %v, want ErrNotFound", err)
				}
				if _, err := k.put(s, Replace, 1); !errors.Is(err, ErrNotFound) {
					t.Fatalf("replace of missing: %v, want ErrNotFound", err)
				}
				created, err := k.put(s, Create, 1)
				if err != nil {
					t.Fatal(err)
				}
				got, err := k.get(s)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, created) {
					t.Errorf("get after create:\n got %#v\nwant %#v", got, created)
				}
				if c, u := k.times(got); c.UnixMilli() != t0 || u.UnixMilli() != t0 {
					t.Errorf("timestamps %v %v, want %d", c, u, t0)
				}
				if _, err := k.put(s, Create, 2); !errors.Is(err, ErrConflict) {
					t.Fatalf("second create: %v, want ErrConflict", err)
				}
				clk.AdvanceTo(t0+1000, nil)
				replaced, err := k.put(s, Replace, 2)
				if err != nil {
					t.Fatal(err)
				}
				got, err = k.get(s)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, replaced) || reflect.DeepEqual(k.fields(got), k.fields(created)) {
					t.Errorf("get after replace:\n got %#v\nwant %#v", got, replaced)
				}
				if c, u := k.times(got); c.UnixMilli() != t0 || u.UnixMilli() != t0+1000 {
					t.Errorf("after replace created %d updated %d", c.UnixMilli(), u.UnixMilli())
				}
				if _, err := k.put(s, Upsert, 3); err != nil {
					t.Fatal(err)
				}
				if n, err := k.list(s); err != nil || n != 1 {
					t.Errorf("list: %d %v", n, err)
				}
				if err := k.del(s); err != nil {
					t.Fatal(err)
				}
				if err := k.del(s); !errors.Is(err, ErrNotFound) {
					t.Errorf("second delete: %v, want ErrNotFound", err)
				}
				if n, err := k.list(s); err != nil || n != 0 {
					t.Errorf("list after delete: %d %v", n, err)
				}
			})
		}
	})
}

func TestStoreErrorsAreWrapped(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		s, _ := b.newStore(t)
		ctx := context.Background()
		_, err := s.GetRule(ctx, "r9")
		if err == nil || err.Error() != "get rule r9: not found" {
			t.Errorf("error %q", err)
		}
		_, err = s.PutStream(ctx, Stream{Name: "x", Kind: KindTable}, Create)
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.PutStream(ctx, Stream{Name: "x", Kind: KindTable}, Create)
		if err == nil || err.Error() != "put stream x: already exists" {
			t.Errorf("error %q", err)
		}
	})
}

func TestStoreValidation(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s, _ := b.newStore(t)
		tests := []struct {
			name string
			put  func() error
		}{
			{"stream empty name", func() error { _, err := s.PutStream(ctx, Stream{Kind: KindStream}, Upsert); return err }},
			{"stream bad kind", func() error { _, err := s.PutStream(ctx, Stream{Name: "a", Kind: "view"}, Upsert); return err }},
			{"rule empty id", func() error {
				_, err := s.PutRule(ctx, Rule{Definition: []byte("{}"), State: RuleRunning}, Upsert)
				return err
			}},
			{"rule bad json", func() error {
				_, err := s.PutRule(ctx, Rule{ID: "r", Definition: []byte("{"), State: RuleRunning}, Upsert)
				return err
			}},
			{"rule bad state", func() error {
				_, err := s.PutRule(ctx, Rule{ID: "r", Definition: []byte("{}"), State: "paused"}, Upsert)
				return err
			}},
			{"rule set bad state", func() error { _, err := s.SetRuleState(ctx, "r", "paused"); return err }},
			{"connection no type", func() error { _, err := s.PutConnection(ctx, Connection{ID: "c"}, Upsert); return err }},
			{"connection bad props", func() error {
				_, err := s.PutConnection(ctx, Connection{ID: "c", Type: "mqtt", Props: map[string]any{"f": func() {}}}, Upsert)
				return err
			}},
			{"conf key bad category", func() error {
				_, err := s.PutConfKey(ctx, ConfKey{Category: "x", Type: "t", Key: "k"}, Upsert)
				return err
			}},
			{"conf key no key", func() error { _, err := s.PutConfKey(ctx, ConfKey{Category: ConfSink, Type: "t"}, Upsert); return err }},
			{"schema no name", func() error { _, err := s.PutSchema(ctx, Schema{Type: "protobuf"}, Upsert); return err }},
			{"upload no name", func() error { _, err := s.PutUpload(ctx, Upload{}, Upsert); return err }},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				if err := tt.put(); !errors.Is(err, ErrInvalid) {
					t.Errorf("error %v, want ErrInvalid", err)
				}
			})
		}
		snap, err := s.Load(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(snap.Streams) + len(snap.Rules) + len(snap.Connections) + len(snap.ConfKeys) + len(snap.Schemas) + len(snap.Uploads); n != 0 {
			t.Errorf("invalid puts stored %d entities", n)
		}
	})
}

func TestStoreRuleStateAndFilters(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s, clk := b.newStore(t)
		if _, err := s.SetRuleState(ctx, "nope", RuleStopped); !errors.Is(err, ErrNotFound) {
			t.Errorf("state of missing rule: %v", err)
		}
		if _, err := s.PutRule(ctx, Rule{ID: "r1", Definition: []byte(`{"id":"r1"}`), State: RuleRunning}, Create); err != nil {
			t.Fatal(err)
		}
		clk.AdvanceTo(t0+5, nil)
		r, err := s.SetRuleState(ctx, "r1", RuleStopped)
		if err != nil {
			t.Fatal(err)
		}
		if r.State != RuleStopped || r.Updated.UnixMilli() != t0+5 || r.Created.UnixMilli() != t0 || string(r.Definition) != `{"id":"r1"}` {
			t.Errorf("rule after SetRuleState: %+v", r)
		}
		if got, _ := s.GetRule(ctx, "r1"); !reflect.DeepEqual(got, r) {
			t.Errorf("get %+v, want %+v", got, r)
		}
		for _, st := range []Stream{{Name: "b", Kind: KindTable}, {Name: "a", Kind: KindStream}, {Name: "c", Kind: KindStream}} {
			if _, err := s.PutStream(ctx, st, Create); err != nil {
				t.Fatal(err)
			}
		}
		names := func(l []Stream) (out []string) {
			for _, st := range l {
				out = append(out, st.Name)
			}
			return out
		}
		for _, tc := range []struct {
			kind StreamKind
			want []string
		}{{"", []string{"a", "b", "c"}}, {KindStream, []string{"a", "c"}}, {KindTable, []string{"b"}}} {
			l, err := s.ListStreams(ctx, tc.kind)
			if err != nil || !reflect.DeepEqual(names(l), tc.want) {
				t.Errorf("ListStreams(%q) = %v %v, want %v", tc.kind, names(l), err, tc.want)
			}
		}
		for _, k := range []ConfKey{{Category: ConfSource, Type: "mqtt", Key: "a"}, {Category: ConfSource, Type: "http", Key: "b"}, {Category: ConfSink, Type: "mqtt", Key: "c"}} {
			if _, err := s.PutConfKey(ctx, k, Create); err != nil {
				t.Fatal(err)
			}
		}
		if l, err := s.ListConfKeys(ctx, ConfSource, ""); err != nil || len(l) != 2 || l[0].Type != "http" {
			t.Errorf("ListConfKeys(source, all) = %+v %v", l, err)
		}
		if l, err := s.ListConfKeys(ctx, ConfSink, "mqtt"); err != nil || len(l) != 1 || l[0].Key != "c" {
			t.Errorf("ListConfKeys(sink, mqtt) = %+v %v", l, err)
		}
	})
}

// fillStore puts one entity of every kind (and a few more) into s.
func fillStore(t *testing.T, s Store) {
	t.Helper()
	for _, k := range allKinds() {
		if _, err := k.put(s, Create, 1); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	if _, err := s.PutStream(ctx, Stream{Name: "t1", Kind: KindTable, SQL: "CREATE TABLE t1 () WITH (TYPE=\"memory\")"}, Create); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutRule(ctx, Rule{ID: "r2", Definition: []byte(`{"id":"r2"}`), State: RuleStopped}, Create); err != nil {
		t.Fatal(err)
	}
}

func TestStoreReopen(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s, target := b.fresh(t)
		fillStore(t, s)
		before, err := s.Load(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetRule(ctx, "r1"); !errors.Is(err, ErrClosed) {
			t.Errorf("get after close: %v, want ErrClosed", err)
		}
		if _, err := s.PutRule(ctx, Rule{ID: "x", Definition: []byte("{}"), State: RuleRunning}, Upsert); !errors.Is(err, ErrClosed) {
			t.Errorf("put after close: %v, want ErrClosed", err)
		}
		s2 := b.openAt(t, target, nil)
		after, err := s2.Load(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(before, after) {
			t.Errorf("after reopen:\n got %+v\nwant %+v", after, before)
		}
		if len(after.Rules) != 2 || len(after.Streams) != 2 {
			t.Errorf("reopened catalog has %d rules, %d streams", len(after.Rules), len(after.Streams))
		}
		if v, err := core(t, s2).SchemaVersion(ctx); err != nil || v != latestVersion() {
			t.Errorf("schema version %d %v", v, err)
		}
		// fillStore made 8 writes; each moved the version once.
		if v, err := core(t, s2).Version(ctx); err != nil || v != 8 {
			t.Errorf("catalog version %d %v, want 8", v, err)
		}
	})
}

func TestSQLitePragmas(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	var mode string
	if err := s.reader.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal mode %q %v", mode, err)
	}
	var sync int
	if err := s.writer.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync); err != nil || sync != 2 {
		t.Errorf("synchronous %d %v, want 2 (FULL)", sync, err)
	}
	var fk int
	if err := s.writer.QueryRowContext(ctx, "PRAGMA foreign_keys").Scan(&fk); err != nil || fk != 1 {
		t.Errorf("foreign_keys %d %v", fk, err)
	}
}

func TestStoreRefusesNewerSchema(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		s, target := b.fresh(t)
		execRaw(t, s, `INSERT INTO schema_version (version, name, applied_at) VALUES (?, 'future', 0)`, latestVersion()+1)
		s.Close()
		if _, err := b.open(context.Background(), target, nil); err == nil || !strings.Contains(err.Error(), "newer") {
			t.Errorf("open of newer schema: %v", err)
		}
	})
}

func TestMigrationsMatch(t *testing.T) {
	pg := postgresMigrations()
	ms := sqliteMigrations()
	if len(pg) != len(ms) {
		t.Fatalf("%d PostgreSQL migrations, %d SQLite ones", len(pg), len(ms))
	}
	for i, m := range ms {
		if m.version != i+1 {
			t.Errorf("migration %d has version %d", i, m.version)
		}
		if len(pg[i]) != len(m.stmts) {
			t.Errorf("migration %d (%s): %d PostgreSQL statements, %d SQLite ones", m.version, m.name, len(pg[i]), len(m.stmts))
		}
	}
}

func TestStoreBackup(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	fillStore(t, s)
	want, err := s.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "backup.db")
	if err := s.Backup(ctx, dst); err != nil {
		t.Fatal(err)
	}
	if err := s.Backup(ctx, dst); !errors.Is(err, fs.ErrExist) {
		t.Errorf("backup over existing file: %v", err)
	}
	if _, err := os.Stat(dst + ".tmp"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("temporary file left: %v", err)
	}
	b := openStore(t, dst, Options{})
	got, err := b.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("backup holds\n %+v\nwant %+v", got, want)
	}
	if err := b.IntegrityCheck(ctx); err != nil {
		t.Error(err)
	}
}

func TestOpenRejectsQueryInPath(t *testing.T) {
	_, err := Open(context.Background(), filepath.Join(t.TempDir(), "a?mode=ro"), Options{})
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("error %v", err)
	}
}

// rawDB opens a plain second connection to path, outside the store.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(50)")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}
