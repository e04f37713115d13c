package userstate

import "testing"

func TestStoreSnapshotIsACopy(t *testing.T) {
	s := New()
	if _, err := s.Increment("n", 2); err != nil {
		t.Fatal(err)
	}
	s.Put("name", "a")
	snap, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	// Later changes must not leak into the snapshot.
	s.Increment("n", 5)
	s.Delete("name")
	r := New()
	if err := r.Restore(snap); err != nil {
		t.Fatal(err)
	}
	if v, _, _ := r.Get("n"); v != int64(2) {
		t.Fatalf("n = %v, want 2", v)
	}
	if v, ok, _ := r.Get("name"); !ok || v != "a" {
		t.Fatalf("name = %v %v, want a", v, ok)
	}
	if _, err := r.Increment("name", 1); err == nil {
		t.Fatal("incrementing a string must fail")
	}
}
