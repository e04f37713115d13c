package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
)

// This file holds streams, rules and connections; sqlstore_meta.go the rest.

func validStream(s Stream) error {
	if s.Name == "" {
		return fmt.Errorf("%w: empty name", ErrInvalid)
	}
	if s.Kind != KindStream && s.Kind != KindTable {
		return fmt.Errorf("%w: kind %q, want stream or table", ErrInvalid, s.Kind)
	}
	return nil
}

// PutStream stores s according to mode.
func (s *sqlStore) PutStream(ctx context.Context, st Stream, mode PutMode) (Stream, error) {
	if err := validStream(st); err != nil {
		return Stream{}, fmt.Errorf("put stream %s: %w", st.Name, err)
	}
	c, u, err := s.put(ctx, mode, ch(ChangeStream, st.Name), `SELECT created_at FROM streams WHERE name = ?`, []any{st.Name},
		func(tx stmts, c, u int64) error {
			_, err := tx.ExecContext(ctx, upsertSQL("streams", 1, "name", "kind", "sql", "created_at", "updated_at"),
				st.Name, string(st.Kind), st.SQL, c, u)
			return err
		})
	if err != nil {
		return Stream{}, fmt.Errorf("put stream %s: %w", st.Name, err)
	}
	st.Created, st.Updated = fromMilli(c), fromMilli(u)
	return st, nil
}

const streamCols = `name, kind, sql, created_at, updated_at`

func scanStream(r rowScanner) (Stream, error) {
	var st Stream
	var kind string
	var c, u int64
	if err := r.Scan(&st.Name, &kind, &st.SQL, &c, &u); err != nil {
		return Stream{}, err
	}
	st.Kind, st.Created, st.Updated = StreamKind(kind), fromMilli(c), fromMilli(u)
	return st, nil
}

// GetStream returns the stream or table named name.
func (s *sqlStore) GetStream(ctx context.Context, name string) (Stream, error) {
	st, err := getOne(ctx, s, scanStream, `SELECT `+streamCols+` FROM streams WHERE name = ?`, name)
	if err != nil {
		return Stream{}, fmt.Errorf("get stream %s: %w", name, err)
	}
	return st, nil
}

// ListStreams lists streams of kind ("" for all) ordered by name.
func (s *sqlStore) ListStreams(ctx context.Context, kind StreamKind) ([]Stream, error) {
	out, err := list(ctx, s, scanStream, `SELECT `+streamCols+` FROM streams WHERE CAST(? AS TEXT) = '' OR kind = ? ORDER BY name`, string(kind), string(kind))
	if err != nil {
		return nil, fmt.Errorf("list streams: %w", err)
	}
	return out, nil
}

// DeleteStream deletes the stream or table named name.
func (s *sqlStore) DeleteStream(ctx context.Context, name string) error {
	if err := s.del(ctx, ch(ChangeStream, name), `DELETE FROM streams WHERE name = ?`, name); err != nil {
		return fmt.Errorf("delete stream %s: %w", name, err)
	}
	return nil
}

func validRule(r Rule) error {
	if r.ID == "" {
		return fmt.Errorf("%w: empty id", ErrInvalid)
	}
	if r.State != RuleRunning && r.State != RuleStopped {
		return fmt.Errorf("%w: state %q, want running or stopped", ErrInvalid, r.State)
	}
	if !json.Valid(r.Definition) {
		return fmt.Errorf("%w: definition is not valid JSON", ErrInvalid)
	}
	return nil
}

// PutRule stores r according to mode.
func (s *sqlStore) PutRule(ctx context.Context, r Rule, mode PutMode) (Rule, error) {
	if err := validRule(r); err != nil {
		return Rule{}, fmt.Errorf("put rule %s: %w", r.ID, err)
	}
	tags := r.Tags
	if tags == nil {
		tags = []string{}
	}
	tagJSON, err := json.Marshal(tags)
	if err != nil {
		return Rule{}, fmt.Errorf("put rule %s: %w", r.ID, err)
	}
	c, u, err := s.put(ctx, mode, ch(ChangeRule, r.ID), `SELECT created_at FROM rules WHERE id = ?`, []any{r.ID},
		func(tx stmts, c, u int64) error {
			_, err := tx.ExecContext(ctx, upsertSQL("rules", 1, "id", "definition", "state", "version", "tags", "created_at", "updated_at"),
				r.ID, string(r.Definition), string(r.State), r.Version, string(tagJSON), c, u)
			return err
		})
	if err != nil {
		return Rule{}, fmt.Errorf("put rule %s: %w", r.ID, err)
	}
	r.Definition = slices.Clone(r.Definition)
	r.Tags = slices.Clone(r.Tags)
	if len(r.Tags) == 0 {
		r.Tags = nil
	}
	r.Created, r.Updated = fromMilli(c), fromMilli(u)
	return r, nil
}

const ruleCols = `id, definition, state, version, tags, created_at, updated_at`

func scanRule(row rowScanner) (Rule, error) {
	var r Rule
	var def, state, tags string
	var c, u int64
	if err := row.Scan(&r.ID, &def, &state, &r.Version, &tags, &c, &u); err != nil {
		return Rule{}, err
	}
	if err := json.Unmarshal([]byte(tags), &r.Tags); err != nil {
		return Rule{}, fmt.Errorf("decode tags of rule %s: %w", r.ID, err)
	}
	if len(r.Tags) == 0 {
		r.Tags = nil
	}
	r.Definition = json.RawMessage(def)
	r.State, r.Created, r.Updated = RuleState(state), fromMilli(c), fromMilli(u)
	return r, nil
}

// GetRule returns the rule with id.
func (s *sqlStore) GetRule(ctx context.Context, id string) (Rule, error) {
	r, err := getOne(ctx, s, scanRule, `SELECT `+ruleCols+` FROM rules WHERE id = ?`, id)
	if err != nil {
		return Rule{}, fmt.Errorf("get rule %s: %w", id, err)
	}
	return r, nil
}

// ListRules lists rules ordered by id.
func (s *sqlStore) ListRules(ctx context.Context) ([]Rule, error) {
	out, err := list(ctx, s, scanRule, `SELECT `+ruleCols+` FROM rules ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("list rules: %w", err)
	}
	return out, nil
}

// DeleteRule deletes the rule with id.
func (s *sqlStore) DeleteRule(ctx context.Context, id string) error {
	if err := s.del(ctx, ch(ChangeRule, id), `DELETE FROM rules WHERE id = ?`, id); err != nil {
		return fmt.Errorf("delete rule %s: %w", id, err)
	}
	return nil
}

// SetRuleState sets the wanted state of rule id and returns the rule.
func (s *sqlStore) SetRuleState(ctx context.Context, id string, state RuleState) (Rule, error) {
	if state != RuleRunning && state != RuleStopped {
		return Rule{}, fmt.Errorf("set state of rule %s: %w: state %q, want running or stopped", id, ErrInvalid, state)
	}
	var r Rule
	err := s.write(ctx, ch(ChangeRule, id), func(tx stmts) error {
		res, err := tx.ExecContext(ctx, `UPDATE rules SET state = ?, updated_at = ? WHERE id = ?`, string(state), s.nowMilli(), id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			if err == nil {
				err = ErrNotFound
			}
			return err
		}
		all, err := queryAll(ctx, tx, scanRule, `SELECT `+ruleCols+` FROM rules WHERE id = ?`, id)
		if err != nil {
			return err
		}
		r = all[0]
		return nil
	})
	if err != nil {
		return Rule{}, fmt.Errorf("set state of rule %s: %w", id, err)
	}
	return r, nil
}

func validConnection(c Connection) error {
	if c.ID == "" {
		return fmt.Errorf("%w: empty id", ErrInvalid)
	}
	if c.Type == "" {
		return fmt.Errorf("%w: empty type", ErrInvalid)
	}
	return nil
}

// PutConnection stores conn according to mode.
func (s *sqlStore) PutConnection(ctx context.Context, conn Connection, mode PutMode) (Connection, error) {
	if err := validConnection(conn); err != nil {
		return Connection{}, fmt.Errorf("put connection %s: %w", conn.ID, err)
	}
	props, err := encodeProps(conn.Props)
	if err != nil {
		return Connection{}, fmt.Errorf("put connection %s: %w", conn.ID, err)
	}
	c, u, err := s.put(ctx, mode, ch(ChangeConnection, conn.ID), `SELECT created_at FROM connections WHERE id = ?`, []any{conn.ID},
		func(tx stmts, c, u int64) error {
			_, err := tx.ExecContext(ctx, upsertSQL("connections", 1, "id", "type", "props", "created_at", "updated_at"),
				conn.ID, conn.Type, props, c, u)
			return err
		})
	if err != nil {
		return Connection{}, fmt.Errorf("put connection %s: %w", conn.ID, err)
	}
	if conn.Props, err = decodeProps(props); err != nil {
		return Connection{}, fmt.Errorf("put connection %s: %w", conn.ID, err)
	}
	conn.Created, conn.Updated = fromMilli(c), fromMilli(u)
	return conn, nil
}

const connectionCols = `id, type, props, created_at, updated_at`

func scanConnection(r rowScanner) (Connection, error) {
	var conn Connection
	var props string
	var c, u int64
	if err := r.Scan(&conn.ID, &conn.Type, &props, &c, &u); err != nil {
		return Connection{}, err
	}
	var err error
	if conn.Props, err = decodeProps(props); err != nil {
		return Connection{}, fmt.Errorf("connection %s: %w", conn.ID, err)
	}
	conn.Created, conn.Updated = fromMilli(c), fromMilli(u)
	return conn, nil
}

// GetConnection returns the connection with id.
func (s *sqlStore) GetConnection(ctx context.Context, id string) (Connection, error) {
	c, err := getOne(ctx, s, scanConnection, `SELECT `+connectionCols+` FROM connections WHERE id = ?`, id)
	if err != nil {
		return Connection{}, fmt.Errorf("get connection %s: %w", id, err)
	}
	return c, nil
}

// ListConnections lists connections ordered by id.
func (s *sqlStore) ListConnections(ctx context.Context) ([]Connection, error) {
	out, err := list(ctx, s, scanConnection, `SELECT `+connectionCols+` FROM connections ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("list connections: %w", err)
	}
	return out, nil
}

// DeleteConnection deletes the connection with id.
func (s *sqlStore) DeleteConnection(ctx context.Context, id string) error {
	if err := s.del(ctx, ch(ChangeConnection, id), `DELETE FROM connections WHERE id = ?`, id); err != nil {
		return fmt.Errorf("delete connection %s: %w", id, err)
	}
	return nil
}
