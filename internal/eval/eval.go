// Package eval compiles SQL expressions into closures evaluated against rows,
// groups and windows. Compilation resolves names (streams, aliases, columns),
// looks functions up, checks their arity and argument literals, and allocates
// analytic function state; nothing is looked up by name at run time.
// This is where a row is evaluated: the operators (internal/operator,
// e.g. filter.go and project.go) call the closures compile.go builds.
package eval

import (
	"github.com/rekuiper/rekuiper/internal/function"
	"github.com/rekuiper/rekuiper/internal/row"
)

// Expr is a compiled expression.
type Expr func(c *Ctx) (any, error)

// Ctx is the evaluation context of one row (or one group).
type Ctx struct {
	// Row is the current row; in a group context it is the group's first row.
	Row row.Row
	// Group holds the rows aggregates run over; nil outside aggregation.
	Group *row.Group
	// Window is the current window's bounds; HasWindow tells if set.
	Window    row.Window
	HasWindow bool
	// Env is handed to functions.
	Env function.Env
	// RowNumber is the 1-based position of Row in its emission (row_number()).
	RowNumber int64
	// Rule holds rule-level counters read by last_hit_count() and friends.
	Rule *RuleStats
	// self is the alias being defined (its own name refers to the column).
	self string
}

// RuleStats are the rule-level values behind last_hit_count(),
// last_hit_time(), last_agg_hit_count() and last_agg_hit_time(), and
// rule_start(). They belong to the rule and are part of its checkpoint.
type RuleStats struct {
	RuleID      string
	StartTime   int64
	HitCount    int64
	HitTime     int64
	AggHitCount int64
	AggHitTime  int64
}

// cacheGet reads an alias or analytic result cached for the current row or
// group.
func (c *Ctx) cacheGet(key string) (any, bool) {
	if c.Group != nil {
		return c.Group.Alias(key)
	}
	if c.Row == nil {
		return nil, false
	}
	return c.Row.Alias(key)
}

func (c *Ctx) cachePut(key string, v any) {
	if c.Group != nil {
		c.Group.SetAlias(key, v)
		return
	}
	if c.Row != nil {
		c.Row.SetAlias(key, v)
	}
}
