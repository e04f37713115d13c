package catalog

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// dbNowMilli is the database's clock in Unix milliseconds: lease expiry is
// decided by it alone, so nodes' clocks may differ.
const dbNowMilli = `(extract(epoch from clock_timestamp()) * 1000)::bigint`

// Lease is one rule's lease row: the node that may run the rule, the
// fencing token of its grant and the status summary the holder publishes.
type Lease struct {
	Rule  string
	Node  string
	Token int64
	// Live: not expired by the database's clock.
	Live    bool
	Summary RuleSummary
}

// RuleSummary is a rule's status as the node that runs it publishes it
// with its lease, for the other nodes to answer status requests.
type RuleSummary struct {
	State   string
	Message string
	// LastStart and LastStop are Unix milliseconds, 0 when unset.
	LastStart, LastStop int64
}

// Leaser is implemented by the shared store: leases on rules, granted and
// expired by the database's clock. Each grant takes a token from a
// sequence, so a later grant of any lease has a larger token than every
// earlier one (a fencing token).
type Leaser interface {
	AcquireLease(ctx context.Context, rule, node string, ttl time.Duration) (token int64, ok bool, err error)
	RenewLeases(ctx context.Context, node string, ttl time.Duration, held map[string]int64, sums map[string]RuleSummary) (map[string]int64, error)
	ReleaseLease(ctx context.Context, rule, node string, token int64) error
	Leases(ctx context.Context) ([]Lease, error)
	LeaseCurrent(ctx context.Context, rule, node string, token int64) (bool, error)
}

var _ Leaser = (*PostgresStore)(nil)

// leaseDB returns the pool without taking the catalog's write mutex: a
// lease renewal must not wait behind a catalog write.
func (s *PostgresStore) leaseDB() (*sql.DB, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	return s.reader, nil
}

// AcquireLease grants node the lease on rule for ttl when nobody holds it,
// its holder let it expire, or node itself holds it (a restarted node
// takes its leases back at once). It returns the new token, or ok false
// when another node holds a live lease.
func (s *PostgresStore) AcquireLease(ctx context.Context, rule, node string, ttl time.Duration) (int64, bool, error) {
	db, err := s.leaseDB()
	if err != nil {
		return 0, false, fmt.Errorf("acquire lease of rule %s: %w", rule, err)
	}
	rows, err := queryAll(ctx, stmts{q: db, dollar: true}, scanInt64, `INSERT INTO rule_leases (rule_id, node_id, token, expires_at)
		VALUES (?, ?, DEFAULT, `+dbNowMilli+` + ?)
		ON CONFLICT (rule_id) DO UPDATE SET node_id = excluded.node_id, token = excluded.token, expires_at = excluded.expires_at,
			state = '', message = '', last_start = 0, last_stop = 0
		WHERE rule_leases.expires_at <= `+dbNowMilli+` OR rule_leases.node_id = excluded.node_id
		RETURNING token`, rule, node, ttl.Milliseconds())
	if err != nil {
		return 0, false, fmt.Errorf("acquire lease of rule %s: %w", rule, classifyPostgres(err))
	}
	if len(rows) == 0 {
		return 0, false, nil
	}
	return rows[0], true, nil
}

// RenewLeases extends, in one transaction, node's live leases among held
// (rule → token) by ttl from the database's clock, and stores the status
// summaries of sums with the renewed ones. It returns the leases renewed;
// one of held missing from it is lost (expired, or granted to another
// node).
func (s *PostgresStore) RenewLeases(ctx context.Context, node string, ttl time.Duration, held map[string]int64, sums map[string]RuleSummary) (map[string]int64, error) {
	out := map[string]int64{}
	if len(held) == 0 {
		return out, nil
	}
	db, err := s.leaseDB()
	if err != nil {
		return nil, fmt.Errorf("renew leases: %w", err)
	}
	err = func() error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback() //nolint:errcheck // no-op after commit
		st := stmts{q: tx, dollar: true}
		args := []any{ttl.Milliseconds(), node}
		pairs := make([]string, 0, len(held))
		for r, tok := range held {
			pairs = append(pairs, "(?, ?)")
			args = append(args, r, tok)
		}
		type renewed struct {
			rule  string
			token int64
		}
		rows, err := queryAll(ctx, st, func(r rowScanner) (renewed, error) {
			var x renewed
			return x, r.Scan(&x.rule, &x.token)
		}, `UPDATE rule_leases SET expires_at = `+dbNowMilli+` + ?
			WHERE node_id = ? AND expires_at > `+dbNowMilli+` AND (rule_id, token) IN (`+strings.Join(pairs, ", ")+`)
			RETURNING rule_id, token`, args...)
		if err != nil {
			return err
		}
		for _, x := range rows {
			out[x.rule] = x.token
		}
		for r, sum := range sums {
			tok, ok := out[r]
			if !ok {
				continue
			}
			if _, err := st.ExecContext(ctx, `UPDATE rule_leases SET state = ?, message = ?, last_start = ?, last_stop = ?
				WHERE rule_id = ? AND token = ?`, sum.State, sum.Message, sum.LastStart, sum.LastStop, r, tok); err != nil {
				return err
			}
		}
		return tx.Commit()
	}()
	if err != nil {
		return nil, fmt.Errorf("renew leases: %w", classifyPostgres(err))
	}
	return out, nil
}

// ReleaseLease gives up node's lease on rule, if it still holds it with
// token.
func (s *PostgresStore) ReleaseLease(ctx context.Context, rule, node string, token int64) error {
	db, err := s.leaseDB()
	if err == nil {
		_, err = stmts{q: db, dollar: true}.ExecContext(ctx, `DELETE FROM rule_leases WHERE rule_id = ? AND node_id = ? AND token = ?`, rule, node, token)
	}
	if err != nil {
		return fmt.Errorf("release lease of rule %s: %w", rule, classifyPostgres(err))
	}
	return nil
}

// Leases lists every lease row by rule, live or expired.
func (s *PostgresStore) Leases(ctx context.Context) ([]Lease, error) {
	out, err := list(ctx, s.sqlStore, func(r rowScanner) (Lease, error) {
		var l Lease
		return l, r.Scan(&l.Rule, &l.Node, &l.Token, &l.Live, &l.Summary.State, &l.Summary.Message, &l.Summary.LastStart, &l.Summary.LastStop)
	}, `SELECT rule_id, node_id, token, expires_at > `+dbNowMilli+`, state, message, last_start, last_stop
		FROM rule_leases ORDER BY rule_id`)
	if err != nil {
		return nil, fmt.Errorf("list leases: %w", err)
	}
	return out, nil
}

// LeaseCurrent reports whether node holds a live lease on rule with token:
// the fencing check before a commit.
func (s *PostgresStore) LeaseCurrent(ctx context.Context, rule, node string, token int64) (bool, error) {
	db, err := s.leaseDB()
	if err != nil {
		return false, fmt.Errorf("check lease of rule %s: %w", rule, err)
	}
	n, err := queryAll(ctx, stmts{q: db, dollar: true}, scanInt64, `SELECT count(*) FROM rule_leases
		WHERE rule_id = ? AND node_id = ? AND token = ? AND expires_at > `+dbNowMilli, rule, node, token)
	if err != nil {
		return false, fmt.Errorf("check lease of rule %s: %w", rule, classifyPostgres(err))
	}
	return len(n) == 1 && n[0] == 1, nil
}
