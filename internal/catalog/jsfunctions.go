package catalog

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// JSFunction is a JavaScript user-defined function (eKuiper's
// /udf/javascript): Script defines a function named ID.
type JSFunction struct {
	ID          string
	Description string
	Script      string
	// IsAgg: the function is an aggregate; each argument is the array of
	// that argument's values over the group.
	IsAgg            bool
	Created, Updated time.Time
}

// JSFunctionStore is the part of a Store that keeps JavaScript functions.
// It is separate from Store so that stores without it still satisfy Store;
// the Catalog answers ErrInvalid for them.
type JSFunctionStore interface {
	PutJSFunction(ctx context.Context, f JSFunction, mode PutMode) (JSFunction, error)
	GetJSFunction(ctx context.Context, id string) (JSFunction, error)
	ListJSFunctions(ctx context.Context) ([]JSFunction, error)
	DeleteJSFunction(ctx context.Context, id string) error
}

var _ JSFunctionStore = (*SQLiteStore)(nil)

var errNoJSStore = fmt.Errorf("%w: this catalog store keeps no javascript functions", ErrInvalid)

func (c *Catalog) jsStore() (JSFunctionStore, error) {
	if s, ok := c.store.(JSFunctionStore); ok {
		return s, nil
	}
	return nil, errNoJSStore
}

// PutJSFunction stores f (see PutMode). JavaScript functions are read from
// the store, not kept in memory: they are few and read only when a rule is
// planned or the REST API asks.
func (c *Catalog) PutJSFunction(ctx context.Context, f JSFunction, mode PutMode) (JSFunction, error) {
	s, err := c.jsStore()
	if err != nil {
		return JSFunction{}, err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return s.PutJSFunction(ctx, f, mode)
}

// GetJSFunction returns one JavaScript function or ErrNotFound.
func (c *Catalog) GetJSFunction(ctx context.Context, id string) (JSFunction, error) {
	s, err := c.jsStore()
	if err != nil {
		return JSFunction{}, err
	}
	return s.GetJSFunction(ctx, id)
}

// ListJSFunctions lists every JavaScript function ordered by id.
func (c *Catalog) ListJSFunctions(ctx context.Context) ([]JSFunction, error) {
	s, err := c.jsStore()
	if err != nil {
		return nil, err
	}
	return s.ListJSFunctions(ctx)
}

// DeleteJSFunction deletes one JavaScript function or answers ErrNotFound.
func (c *Catalog) DeleteJSFunction(ctx context.Context, id string) error {
	s, err := c.jsStore()
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return s.DeleteJSFunction(ctx, id)
}

// PutJSFunction stores f according to mode.
func (s *sqlStore) PutJSFunction(ctx context.Context, f JSFunction, mode PutMode) (JSFunction, error) {
	if f.ID == "" {
		return JSFunction{}, fmt.Errorf("put javascript function: %w: empty id", ErrInvalid)
	}
	c, u, err := s.put(ctx, mode, ch(ChangeJSFunction, f.ID), `SELECT created_at FROM js_functions WHERE id = ?`, []any{f.ID},
		func(tx stmts, c, u int64) error {
			_, err := tx.ExecContext(ctx, upsertSQL("js_functions", 1, "id", "description", "script", "is_agg", "created_at", "updated_at"),
				f.ID, f.Description, f.Script, jsAggFlag(f.IsAgg), c, u)
			return err
		})
	if err != nil {
		return JSFunction{}, fmt.Errorf("put javascript function %s: %w", f.ID, err)
	}
	f.Created, f.Updated = fromMilli(c), fromMilli(u)
	return f, nil
}

func jsAggFlag(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

const jsFunctionCols = `id, description, script, is_agg, created_at, updated_at`

func scanJSFunction(r rowScanner) (JSFunction, error) {
	var f JSFunction
	var agg, c, u int64
	if err := r.Scan(&f.ID, &f.Description, &f.Script, &agg, &c, &u); err != nil {
		return JSFunction{}, err
	}
	f.IsAgg = agg != 0
	f.Created, f.Updated = fromMilli(c), fromMilli(u)
	return f, nil
}

// GetJSFunction returns one JavaScript function.
func (s *sqlStore) GetJSFunction(ctx context.Context, id string) (JSFunction, error) {
	f, err := getOne(ctx, s, scanJSFunction, `SELECT `+jsFunctionCols+` FROM js_functions WHERE id = ?`, id)
	if err != nil {
		return JSFunction{}, fmt.Errorf("get javascript function %s: %w", id, err)
	}
	return f, nil
}

// ListJSFunctions lists JavaScript functions ordered by id.
func (s *sqlStore) ListJSFunctions(ctx context.Context) ([]JSFunction, error) {
	out, err := list(ctx, s, scanJSFunction, `SELECT `+jsFunctionCols+` FROM js_functions ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("list javascript functions: %w", err)
	}
	return out, nil
}

// DeleteJSFunction deletes one JavaScript function.
func (s *sqlStore) DeleteJSFunction(ctx context.Context, id string) error {
	if err := s.del(ctx, ch(ChangeJSFunction, id), `DELETE FROM js_functions WHERE id = ?`, id); err != nil {
		if errors.Is(err, ErrNotFound) {
			return fmt.Errorf("javascript function %s: %w", id, err)
		}
		return fmt.Errorf("delete javascript function %s: %w", id, err)
	}
	return nil
}
