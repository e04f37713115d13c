package catalog

import (
	"context"
	"fmt"
)

// This file holds confKeys, schemas, uploads and Load.

func validConfKey(k ConfKey) error {
	switch k.Category {
	case ConfSource, ConfSink, ConfConnection:
	default:
		return fmt.Errorf("%w: category %q, want source, sink or connection", ErrInvalid, k.Category)
	}
	if k.Type == "" || k.Key == "" {
		return fmt.Errorf("%w: empty type or key", ErrInvalid)
	}
	return nil
}

func confKeyName(category ConfCategory, typ, key string) string {
	return string(category) + "/" + typ + "/" + key
}

// PutConfKey stores k according to mode.
func (s *sqlStore) PutConfKey(ctx context.Context, k ConfKey, mode PutMode) (ConfKey, error) {
	name := confKeyName(k.Category, k.Type, k.Key)
	if err := validConfKey(k); err != nil {
		return ConfKey{}, fmt.Errorf("put conf key %s: %w", name, err)
	}
	props, err := encodeProps(k.Props)
	if err != nil {
		return ConfKey{}, fmt.Errorf("put conf key %s: %w", name, err)
	}
	c, u, err := s.put(ctx, mode, ch(ChangeConfKey, string(k.Category), k.Type, k.Key), `SELECT created_at FROM conf_keys WHERE category = ? AND type = ? AND key = ?`,
		[]any{string(k.Category), k.Type, k.Key},
		func(tx stmts, c, u int64) error {
			_, err := tx.ExecContext(ctx, upsertSQL("conf_keys", 3, "category", "type", "key", "props", "created_at", "updated_at"),
				string(k.Category), k.Type, k.Key, props, c, u)
			return err
		})
	if err != nil {
		return ConfKey{}, fmt.Errorf("put conf key %s: %w", name, err)
	}
	if k.Props, err = decodeProps(props); err != nil {
		return ConfKey{}, fmt.Errorf("put conf key %s: %w", name, err)
	}
	k.Created, k.Updated = fromMilli(c), fromMilli(u)
	return k, nil
}

const confKeyCols = `category, type, key, props, created_at, updated_at`

func scanConfKey(r rowScanner) (ConfKey, error) {
	var k ConfKey
	var cat, props string
	var c, u int64
	if err := r.Scan(&cat, &k.Type, &k.Key, &props, &c, &u); err != nil {
		return ConfKey{}, err
	}
	k.Category = ConfCategory(cat)
	var err error
	if k.Props, err = decodeProps(props); err != nil {
		return ConfKey{}, fmt.Errorf("conf key %s: %w", confKeyName(k.Category, k.Type, k.Key), err)
	}
	k.Created, k.Updated = fromMilli(c), fromMilli(u)
	return k, nil
}

// GetConfKey returns one confKey.
func (s *sqlStore) GetConfKey(ctx context.Context, category ConfCategory, typ, key string) (ConfKey, error) {
	k, err := getOne(ctx, s, scanConfKey, `SELECT `+confKeyCols+` FROM conf_keys WHERE category = ? AND type = ? AND key = ?`,
		string(category), typ, key)
	if err != nil {
		return ConfKey{}, fmt.Errorf("get conf key %s: %w", confKeyName(category, typ, key), err)
	}
	return k, nil
}

// ListConfKeys lists the confKeys of category and typ ("" for every type),
// ordered by type and key.
func (s *sqlStore) ListConfKeys(ctx context.Context, category ConfCategory, typ string) ([]ConfKey, error) {
	out, err := list(ctx, s, scanConfKey, `SELECT `+confKeyCols+` FROM conf_keys WHERE category = ? AND (CAST(? AS TEXT) = '' OR type = ?) ORDER BY type, key`,
		string(category), typ, typ)
	if err != nil {
		return nil, fmt.Errorf("list conf keys %s/%s: %w", category, typ, err)
	}
	return out, nil
}

// DeleteConfKey deletes one confKey.
func (s *sqlStore) DeleteConfKey(ctx context.Context, category ConfCategory, typ, key string) error {
	if err := s.del(ctx, ch(ChangeConfKey, string(category), typ, key), `DELETE FROM conf_keys WHERE category = ? AND type = ? AND key = ?`, string(category), typ, key); err != nil {
		return fmt.Errorf("delete conf key %s: %w", confKeyName(category, typ, key), err)
	}
	return nil
}

// PutSchema stores sc according to mode.
func (s *sqlStore) PutSchema(ctx context.Context, sc Schema, mode PutMode) (Schema, error) {
	name := sc.Type + "/" + sc.Name
	if sc.Type == "" || sc.Name == "" {
		return Schema{}, fmt.Errorf("put schema %s: %w: empty type or name", name, ErrInvalid)
	}
	c, u, err := s.put(ctx, mode, ch(ChangeSchema, sc.Type, sc.Name), `SELECT created_at FROM schemas WHERE type = ? AND name = ?`, []any{sc.Type, sc.Name},
		func(tx stmts, c, u int64) error {
			_, err := tx.ExecContext(ctx, upsertSQL("schemas", 2, "type", "name", "content", "file", "so_file", "version", "created_at", "updated_at"),
				sc.Type, sc.Name, sc.Content, sc.File, sc.SoFile, sc.Version, c, u)
			return err
		})
	if err != nil {
		return Schema{}, fmt.Errorf("put schema %s: %w", name, err)
	}
	sc.Created, sc.Updated = fromMilli(c), fromMilli(u)
	return sc, nil
}

const schemaCols = `type, name, content, file, so_file, version, created_at, updated_at`

func scanSchema(r rowScanner) (Schema, error) {
	var sc Schema
	var c, u int64
	if err := r.Scan(&sc.Type, &sc.Name, &sc.Content, &sc.File, &sc.SoFile, &sc.Version, &c, &u); err != nil {
		return Schema{}, err
	}
	sc.Created, sc.Updated = fromMilli(c), fromMilli(u)
	return sc, nil
}

// GetSchema returns one schema.
func (s *sqlStore) GetSchema(ctx context.Context, typ, name string) (Schema, error) {
	sc, err := getOne(ctx, s, scanSchema, `SELECT `+schemaCols+` FROM schemas WHERE type = ? AND name = ?`, typ, name)
	if err != nil {
		return Schema{}, fmt.Errorf("get schema %s/%s: %w", typ, name, err)
	}
	return sc, nil
}

// ListSchemas lists schemas of typ ("" for all) ordered by type and name.
func (s *sqlStore) ListSchemas(ctx context.Context, typ string) ([]Schema, error) {
	out, err := list(ctx, s, scanSchema, `SELECT `+schemaCols+` FROM schemas WHERE CAST(? AS TEXT) = '' OR type = ? ORDER BY type, name`, typ, typ)
	if err != nil {
		return nil, fmt.Errorf("list schemas: %w", err)
	}
	return out, nil
}

// DeleteSchema deletes one schema.
func (s *sqlStore) DeleteSchema(ctx context.Context, typ, name string) error {
	if err := s.del(ctx, ch(ChangeSchema, typ, name), `DELETE FROM schemas WHERE type = ? AND name = ?`, typ, name); err != nil {
		return fmt.Errorf("delete schema %s/%s: %w", typ, name, err)
	}
	return nil
}

// PutUpload stores up according to mode.
func (s *sqlStore) PutUpload(ctx context.Context, up Upload, mode PutMode) (Upload, error) {
	if up.Name == "" {
		return Upload{}, fmt.Errorf("put upload: %w: empty name", ErrInvalid)
	}
	c, u, err := s.put(ctx, mode, ch(ChangeUpload, up.Name), `SELECT created_at FROM uploads WHERE name = ?`, []any{up.Name},
		func(tx stmts, c, u int64) error {
			_, err := tx.ExecContext(ctx, upsertSQL("uploads", 1, "name", "path", "size", "sha256", "created_at", "updated_at"),
				up.Name, up.Path, up.Size, up.SHA256, c, u)
			return err
		})
	if err != nil {
		return Upload{}, fmt.Errorf("put upload %s: %w", up.Name, err)
	}
	up.Created, up.Updated = fromMilli(c), fromMilli(u)
	return up, nil
}

const uploadCols = `name, path, size, sha256, created_at, updated_at`

func scanUpload(r rowScanner) (Upload, error) {
	var up Upload
	var c, u int64
	if err := r.Scan(&up.Name, &up.Path, &up.Size, &up.SHA256, &c, &u); err != nil {
		return Upload{}, err
	}
	up.Created, up.Updated = fromMilli(c), fromMilli(u)
	return up, nil
}

// GetUpload returns one upload record.
func (s *sqlStore) GetUpload(ctx context.Context, name string) (Upload, error) {
	up, err := getOne(ctx, s, scanUpload, `SELECT `+uploadCols+` FROM uploads WHERE name = ?`, name)
	if err != nil {
		return Upload{}, fmt.Errorf("get upload %s: %w", name, err)
	}
	return up, nil
}

// ListUploads lists upload records ordered by name.
func (s *sqlStore) ListUploads(ctx context.Context) ([]Upload, error) {
	out, err := list(ctx, s, scanUpload, `SELECT `+uploadCols+` FROM uploads ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list uploads: %w", err)
	}
	return out, nil
}

// DeleteUpload deletes one upload record (not the file).
func (s *sqlStore) DeleteUpload(ctx context.Context, name string) error {
	if err := s.del(ctx, ch(ChangeUpload, name), `DELETE FROM uploads WHERE name = ?`, name); err != nil {
		return fmt.Errorf("delete upload %s: %w", name, err)
	}
	return nil
}

// Load reads every table in one read transaction.
func (s *sqlStore) Load(ctx context.Context) (*Snapshot, error) {
	if _, err := s.readDB(); err != nil {
		return nil, fmt.Errorf("load catalog: %w", err)
	}
	opts := s.d.readTx
	sqlTx, err := s.reader.BeginTx(ctx, &opts)
	if err != nil {
		return nil, fmt.Errorf("load catalog: %w", err)
	}
	defer sqlTx.Rollback() //nolint:errcheck // read-only
	tx := stmts{q: sqlTx, dollar: s.d.postgres}
	var snap Snapshot
	steps := []func() error{
		func() (err error) {
			snap.Streams, err = queryAll(ctx, tx, scanStream, `SELECT `+streamCols+` FROM streams ORDER BY name`)
			return err
		},
		func() (err error) {
			snap.Rules, err = queryAll(ctx, tx, scanRule, `SELECT `+ruleCols+` FROM rules ORDER BY id`)
			return err
		},
		func() (err error) {
			snap.Connections, err = queryAll(ctx, tx, scanConnection, `SELECT `+connectionCols+` FROM connections ORDER BY id`)
			return err
		},
		func() (err error) {
			snap.ConfKeys, err = queryAll(ctx, tx, scanConfKey, `SELECT `+confKeyCols+` FROM conf_keys ORDER BY category, type, key`)
			return err
		},
		func() (err error) {
			snap.Schemas, err = queryAll(ctx, tx, scanSchema, `SELECT `+schemaCols+` FROM schemas ORDER BY type, name`)
			return err
		},
		func() (err error) {
			snap.Uploads, err = queryAll(ctx, tx, scanUpload, `SELECT `+uploadCols+` FROM uploads ORDER BY name`)
			return err
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, fmt.Errorf("load catalog: %w", err)
		}
	}
	return &snap, nil
}
