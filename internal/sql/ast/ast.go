// Package ast declares the syntax tree of the rekuiper SQL dialect. Every node
// carries the position of its first token and prints back (String) to SQL
// that parses to the same tree.
package ast

import (
	"github.com/rekuiper/rekuiper/internal/sql/token"
)

// Node is any syntax tree node.
type Node interface {
	// Pos is the position of the node's first token.
	Pos() token.Pos
	// String prints the node as SQL.
	String() string
}

// Expr is an expression node.
type Expr interface {
	Node
	exprNode()
}

// Statement is a top-level statement.
type Statement interface {
	Node
	stmtNode()
}

// FieldRef names a column, optionally qualified by its stream: `s.col`, `col`.
// A reference to an alias of the SELECT list is also a FieldRef; the analyzer
// decides which it is.
type FieldRef struct {
	P      token.Pos
	Stream string // "" when unqualified
	Name   string
}

// Wildcard is `*` or `s.*`, with optional EXCEPT and REPLACE lists.
type Wildcard struct {
	P       token.Pos
	Stream  string
	Except  []string
	Replace []Field
}

// IntegerLit is an integer literal.
type IntegerLit struct {
	P   token.Pos
	Val int64
}

// NumberLit is a floating-point literal. Raw keeps the source spelling.
type NumberLit struct {
	P   token.Pos
	Val float64
	Raw string
}

// StringLit is a string literal (double or single quoted).
type StringLit struct {
	P   token.Pos
	Val string
}

// BoolLit is TRUE or FALSE.
type BoolLit struct {
	P   token.Pos
	Val bool
}

// NullLit is NULL (a rekuiper extension; eKuiper has no NULL literal).
type NullLit struct {
	P token.Pos
}

// TimeUnitLit is one of DD, HH, MI, SS, MS (the first argument of a window).
type TimeUnitLit struct {
	P    token.Pos
	Unit token.Token
}

// ParenExpr is an expression in parentheses.
type ParenExpr struct {
	P token.Pos
	X Expr
}

// UnaryExpr is `-x` or `NOT x`.
type UnaryExpr struct {
	P  token.Pos
	Op token.Token // SUB or NOT
	X  Expr
}

// BinaryExpr is `lhs op rhs` for arithmetic, bitwise, comparison, logical,
// LIKE, IN (RHS is a *ListExpr or any array expression), BETWEEN (RHS is a
// *BetweenRange) and `->` (RHS is a *FieldRef naming the key).
type BinaryExpr struct {
	P   token.Pos
	Op  token.Token
	LHS Expr
	RHS Expr
}

// BetweenRange is the `lo AND hi` part of BETWEEN.
type BetweenRange struct {
	P  token.Pos
	Lo Expr
	Hi Expr
}

// ListExpr is a parenthesised list of values, the right side of IN.
type ListExpr struct {
	P     token.Pos
	Items []Expr
}

// IndexExpr is `x[i]`.
type IndexExpr struct {
	P     token.Pos
	X     Expr
	Index Expr
}

// SliceExpr is `x[lo:hi]`, `x[:hi]`, `x[lo:]` or `x[]` (Lo and Hi nil, Full set).
type SliceExpr struct {
	P    token.Pos
	X    Expr
	Lo   Expr
	Hi   Expr
	Full bool // `x[]`
}

// IsNullExpr is `x IS NULL` or `x IS NOT NULL`.
type IsNullExpr struct {
	P   token.Pos
	X   Expr
	Not bool
}

// WhenClause is one `WHEN cond THEN result` of a CASE.
type WhenClause struct {
	P      token.Pos
	Cond   Expr
	Result Expr
}

// CaseExpr is `CASE [value] WHEN ... THEN ... [ELSE ...] END`. Value is nil
// for the searched form.
type CaseExpr struct {
	P     token.Pos
	Value Expr
	Whens []WhenClause
	Else  Expr
}

// Call is a function call. Args may contain a *Wildcard for `f(*)`. Over is
// set for analytic and window functions: `lag(x) OVER (PARTITION BY k WHEN c)`.
// meta(...) and mqtt(...) are calls whose argument is a FieldRef, a Wildcard
// or an arrow chain naming metadata keys.
type Call struct {
	P    token.Pos
	Name string // as written; built-ins resolve case-insensitively
	Args []Expr
	Over *Over
}

// Over is the OVER clause of an analytic or window function.
type Over struct {
	P         token.Pos
	Partition []Expr
	When      Expr
	OrderBy   []SortField
}

// Field is one entry of the SELECT list.
type Field struct {
	P         token.Pos
	Expr      Expr   // *Wildcard for `*` / `s.*`
	Alias     string // "" when none
	Invisible bool
}

// Name is the output name of the field: the alias, the column name of a plain
// field reference, or the function name of a call; "" means the engine picks
// `kuiper_field_<n>`.
func (f Field) Name() string {
	if f.Alias != "" {
		return f.Alias
	}
	switch e := f.Expr.(type) {
	case *FieldRef:
		return e.Name
	case *Call:
		return e.Name
	}
	return ""
}

// Source is the FROM item: a stream or table with an optional alias.
type Source struct {
	P     token.Pos
	Name  string
	Alias string
}

// JoinType is the kind of a JOIN.
type JoinType int

const (
	InnerJoin JoinType = iota
	LeftJoin
	RightJoin
	FullJoin
	CrossJoin
)

func (t JoinType) String() string {
	return [...]string{"INNER", "LEFT", "RIGHT", "FULL", "CROSS"}[t]
}

// Join is one `<type> JOIN name [AS alias] [ON cond]`.
type Join struct {
	P     token.Pos
	Type  JoinType
	Name  string
	Alias string
	On    Expr // nil for CROSS JOIN
}

// WindowType is the kind of a window in GROUP BY.
type WindowType int

const (
	NoWindow WindowType = iota
	TumblingWindow
	HoppingWindow
	SlidingWindow
	SessionWindow
	CountWindow
	StateWindow
)

func (t WindowType) String() string {
	return [...]string{"", "TUMBLINGWINDOW", "HOPPINGWINDOW", "SLIDINGWINDOW", "SESSIONWINDOW", "COUNTWINDOW", "STATEWINDOW"}[t]
}

// Window is the window function of a GROUP BY, with its FILTER and OVER
// clauses.
//
// Args holds the arguments after the time unit as written: tumbling (size),
// hopping (size, hop), sliding (size[, delay]), session (maxDuration,
// timeout), count (n[, step]), state (beginCond[, emitCond]).
type Window struct {
	P           token.Pos
	Type        WindowType
	Name        string      // as written, e.g. "TumblingWindow"
	Unit        token.Token // DD, HH, MI, SS, MS; ILLEGAL for count and state windows
	Args        []Expr
	Filter      Expr   // FILTER (WHERE expr)
	TriggerCond Expr   // OVER (WHEN expr)
	Partition   []Expr // OVER (PARTITION BY ...)
}

// SortField is one `expr [ASC|DESC]` of ORDER BY.
type SortField struct {
	P    token.Pos
	Expr Expr
	Desc bool
}

// SelectStmt is a rule's query.
type SelectStmt struct {
	P          token.Pos
	Fields     []Field
	From       Source
	Joins      []Join
	Where      Expr
	Dimensions []Expr  // GROUP BY expressions other than the window
	Window     *Window // nil when there is none
	Having     Expr
	OrderBy    []SortField
	Limit      int64 // valid when HasLimit
	HasLimit   bool
}

// StreamKind tells streams from tables.
type StreamKind int

const (
	KindStream StreamKind = iota
	KindTable
)

func (k StreamKind) String() string {
	if k == KindTable {
		return "TABLE"
	}
	return "STREAM"
}

// DataType is a column type of CREATE STREAM.
type DataType struct {
	P      token.Pos
	Kind   token.Token   // BIGINT, FLOAT, STRINGTYPE, DATETIME, BOOLEAN, BYTEA, ARRAY, STRUCT
	Elem   *DataType     // element type of ARRAY
	Fields []StreamField // fields of STRUCT
}

// StreamField is one column of CREATE STREAM.
type StreamField struct {
	P       token.Pos
	Name    string
	Type    *DataType
	Default Expr // literal, nil when absent
}

// Option is one `KEY = "value"` of a WITH clause, in source order.
type Option struct {
	P     token.Pos
	Key   string // upper-cased: DATASOURCE, FORMAT, ...
	Value string
}

// CreateStreamStmt is CREATE STREAM|TABLE. Fields is empty for a schemaless
// stream.
type CreateStreamStmt struct {
	P       token.Pos
	Kind    StreamKind
	Name    string
	Fields  []StreamField
	Options []Option
}

// Option returns the value of a WITH option by upper-case key.
func (s *CreateStreamStmt) Option(key string) (string, bool) {
	for _, o := range s.Options {
		if o.Key == key {
			return o.Value, true
		}
	}
	return "", false
}

// ShowStmt is SHOW STREAMS|TABLES.
type ShowStmt struct {
	P    token.Pos
	Kind StreamKind
}

// DescribeStmt is DESCRIBE STREAM|TABLE name (Explain for EXPLAIN ...).
type DescribeStmt struct {
	P       token.Pos
	Kind    StreamKind
	Name    string
	Explain bool
}

// DropStmt is DROP STREAM|TABLE name.
type DropStmt struct {
	P    token.Pos
	Kind StreamKind
	Name string
}

func (e *FieldRef) Pos() token.Pos     { return e.P }
func (e *Wildcard) Pos() token.Pos     { return e.P }
func (e *IntegerLit) Pos() token.Pos   { return e.P }
func (e *NumberLit) Pos() token.Pos    { return e.P }
func (e *StringLit) Pos() token.Pos    { return e.P }
func (e *BoolLit) Pos() token.Pos      { return e.P }
func (e *NullLit) Pos() token.Pos      { return e.P }
func (e *TimeUnitLit) Pos() token.Pos  { return e.P }
func (e *ParenExpr) Pos() token.Pos    { return e.P }
func (e *UnaryExpr) Pos() token.Pos    { return e.P }
func (e *BinaryExpr) Pos() token.Pos   { return e.P }
func (e *BetweenRange) Pos() token.Pos { return e.P }
func (e *ListExpr) Pos() token.Pos     { return e.P }
func (e *IndexExpr) Pos() token.Pos    { return e.P }
func (e *SliceExpr) Pos() token.Pos    { return e.P }
func (e *IsNullExpr) Pos() token.Pos   { return e.P }
func (e *CaseExpr) Pos() token.Pos     { return e.P }
func (e *Call) Pos() token.Pos         { return e.P }

func (*FieldRef) exprNode()     {}
func (*Wildcard) exprNode()     {}
func (*IntegerLit) exprNode()   {}
func (*NumberLit) exprNode()    {}
func (*StringLit) exprNode()    {}
func (*BoolLit) exprNode()      {}
func (*NullLit) exprNode()      {}
func (*TimeUnitLit) exprNode()  {}
func (*ParenExpr) exprNode()    {}
func (*UnaryExpr) exprNode()    {}
func (*BinaryExpr) exprNode()   {}
func (*BetweenRange) exprNode() {}
func (*ListExpr) exprNode()     {}
func (*IndexExpr) exprNode()    {}
func (*SliceExpr) exprNode()    {}
func (*IsNullExpr) exprNode()   {}
func (*CaseExpr) exprNode()     {}
func (*Call) exprNode()         {}

func (s *SelectStmt) Pos() token.Pos       { return s.P }
func (s *CreateStreamStmt) Pos() token.Pos { return s.P }
func (s *ShowStmt) Pos() token.Pos         { return s.P }
func (s *DescribeStmt) Pos() token.Pos     { return s.P }
func (s *DropStmt) Pos() token.Pos         { return s.P }

func (*SelectStmt) stmtNode()       {}
func (*CreateStreamStmt) stmtNode() {}
func (*ShowStmt) stmtNode()         {}
func (*DescribeStmt) stmtNode()     {}
func (*DropStmt) stmtNode()         {}

// Walk calls fn for e and every expression below it, depth first, stopping
// descent into a node when fn returns false.
func Walk(e Expr, fn func(Expr) bool) {
	if e == nil || !fn(e) {
		return
	}
	switch n := e.(type) {
	case *Wildcard:
		for _, f := range n.Replace {
			Walk(f.Expr, fn)
		}
	case *ParenExpr:
		Walk(n.X, fn)
	case *UnaryExpr:
		Walk(n.X, fn)
	case *BinaryExpr:
		Walk(n.LHS, fn)
		Walk(n.RHS, fn)
	case *BetweenRange:
		Walk(n.Lo, fn)
		Walk(n.Hi, fn)
	case *ListExpr:
		for _, x := range n.Items {
			Walk(x, fn)
		}
	case *IndexExpr:
		Walk(n.X, fn)
		Walk(n.Index, fn)
	case *SliceExpr:
		Walk(n.X, fn)
		Walk(n.Lo, fn)
		Walk(n.Hi, fn)
	case *IsNullExpr:
		Walk(n.X, fn)
	case *CaseExpr:
		Walk(n.Value, fn)
		for _, w := range n.Whens {
			Walk(w.Cond, fn)
			Walk(w.Result, fn)
		}
		Walk(n.Else, fn)
	case *Call:
		for _, a := range n.Args {
			Walk(a, fn)
		}
		if n.Over != nil {
			for _, p := range n.Over.Partition {
				Walk(p, fn)
			}
			for _, o := range n.Over.OrderBy {
				Walk(o.Expr, fn)
			}
			Walk(n.Over.When, fn)
		}
	}
}
