package catalog

import (
	"context"
	"errors"
	"testing"
)

func TestJSFunctions(t *testing.T) {
	forEachBackend(t, testJSFunctions)
}

func testJSFunctions(t *testing.T, b backend) {
	ctx := context.Background()
	s, target := b.fresh(t)
	c := newCatalog(t, s)
	f := JSFunction{ID: "double", Description: "twice", Script: "function double(x) { return 2 * x }", IsAgg: true}
	if _, err := c.PutJSFunction(ctx, f, Create); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutJSFunction(ctx, f, Create); !errors.Is(err, ErrConflict) {
		t.Fatalf("second create: got %v, want ErrConflict", err)
	}
	if _, err := c.PutJSFunction(ctx, JSFunction{ID: "nope"}, Replace); !errors.Is(err, ErrNotFound) {
		t.Fatalf("replace missing: got %v, want ErrNotFound", err)
	}
	if _, err := c.PutJSFunction(ctx, JSFunction{}, Upsert); !errors.Is(err, ErrInvalid) {
		t.Fatalf("empty id: got %v, want ErrInvalid", err)
	}
	s.Close()

	// Durable: a reopened store has it.
	c = newCatalog(t, b.openAt(t, target, nil))
	got, err := c.GetJSFunction(ctx, "double")
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != f.ID || got.Description != f.Description || got.Script != f.Script || got.IsAgg != f.IsAgg {
		t.Fatalf("got %+v, want %+v", got, f)
	}
	all, err := c.ListJSFunctions(ctx)
	if err != nil || len(all) != 1 {
		t.Fatalf("list: %v %v", all, err)
	}
	if err := c.DeleteJSFunction(ctx, "double"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetJSFunction(ctx, "double"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get after delete: %v", err)
	}
	if err := c.DeleteJSFunction(ctx, "double"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("delete twice: %v", err)
	}
}
