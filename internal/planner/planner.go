// Package planner turns a parsed rule query and the definitions of the
// streams it reads into an operator chain: preprocess → [watermark] →
// [analytic] → [filter] → [window] → [join] → [filter] → [group] →
// [having] → [order] → project. It validates the query on the way, so that
// everything that can be checked is checked at rule creation.
package planner

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rekuiper/rekuiper/internal/eval"
	"github.com/rekuiper/rekuiper/internal/function"
	"github.com/rekuiper/rekuiper/internal/operator"
	"github.com/rekuiper/rekuiper/internal/row"
	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/sql/token"
)

// Options are the rule options that shape the plan.
type Options struct {
	IsEventTime   bool
	LateTolerance time.Duration
	SendNilField  bool
	SendMeta      bool
	// IgnoreCase reads columns case-insensitively when no column has
	// exactly the name in the query (kuiper.yaml basic.ignoreCase).
	IgnoreCase bool
}

// Input is one stream or table the rule reads.
type Input struct {
	Name  string
	Def   *ast.CreateStreamStmt
	Table bool
	// Port is 0 for streams; tables are fed on their own port.
	Port int
	// Lookup marks a lookup table (KIND="lookup"): it is not read as an
	// input but queried by the plan's LookupJoin operators.
	Lookup bool
}

// Plan is a rule's operator chain and the inputs that feed it.
type Plan struct {
	Ops      []operator.Operator
	Inputs   []Input
	Analytic *eval.AnalyticStore
	// Index, when set, is the condition the rule's stream may test for it
	// (ops[0] preprocesses, ops[1] is the WHERE's filter).
	Index *IndexKey
}

// Error is a planning error, with the position of the offending node when
// there is one.
type Error struct {
	Pos token.Pos
	Msg string
}

func (e *Error) Error() string {
	if e.Pos.IsValid() {
		return e.Pos.String() + ": " + e.Msg
	}
	return e.Msg
}

func errAt(n ast.Node, format string, args ...any) error {
	var pos token.Pos
	if n != nil {
		pos = n.Pos()
	}
	return &Error{Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

type builder struct {
	stmt    *ast.SelectStmt
	opts    Options
	funcs   *function.Registry
	loc     *time.Location
	inputs  []Input
	streams map[string]string // name or alias → stream name
	comp    *eval.Compiler
	grouped bool
}

// Build plans stmt. defs maps stream and table names to their definitions.
func Build(stmt *ast.SelectStmt, defs map[string]*ast.CreateStreamStmt, opts Options, funcs *function.Registry, loc *time.Location) (*Plan, error) {
	if loc == nil {
		loc = time.UTC
	}
	b := &builder{stmt: stmt, opts: opts, funcs: funcs, loc: loc, streams: map[string]string{}}
	if err := b.resolveInputs(defs); err != nil {
		return nil, err
	}
	if err := b.checkNames(); err != nil {
		return nil, err
	}
	if err := b.checkLookups(); err != nil {
		return nil, err
	}
	if err := b.validate(); err != nil {
		return nil, err
	}
	aliases := map[string]ast.Expr{}
	for _, f := range stmt.Fields {
		if f.Alias != "" {
			aliases[f.Alias] = f.Expr
		}
	}
	b.comp = eval.NewCompiler(funcs, b.streams, aliases)
	b.comp.Layouts = layouts(b.inputs)
	b.comp.IgnoreCase = opts.IgnoreCase
	ops, err := b.chain()
	if err != nil {
		return nil, err
	}
	return &Plan{Ops: ops, Inputs: b.inputs, Analytic: b.comp.Analytic, Index: b.indexKey(ops)}, nil
}

// layouts returns the layout of every typed input, so that declared
// columns compile to slot reads.
func layouts(inputs []Input) map[string]*row.Layout {
	out := map[string]*row.Layout{}
	for _, in := range inputs {
		if l := Layout(in.Def); l != nil {
			out[in.Name] = l
		}
	}
	return out
}

// Layout returns the slot layout of a typed stream's declared fields (nil
// for a schemaless stream): the one its JSON decoder fills
// (format.NewJSONStream).
func Layout(def *ast.CreateStreamStmt) *row.Layout {
	names := make([]string, len(def.Fields))
	for i, f := range def.Fields {
		names[i] = f.Name
	}
	return row.NewLayout(names)
}

func (b *builder) resolveInputs(defs map[string]*ast.CreateStreamStmt) error {
	add := func(n ast.Node, name, alias string, port int) error {
		def, ok := defs[name]
		if !ok {
			return errAt(n, "stream %s not found", name)
		}
		table := def.Kind == ast.KindTable
		in := Input{Name: name, Def: def, Table: table, Lookup: IsLookup(def)}
		if table {
			in.Port = port
		}
		b.inputs = append(b.inputs, in)
		b.streams[name] = name
		if alias != "" {
			b.streams[alias] = name
		}
		return nil
	}
	s := b.stmt
	// Streams are fed on port 0, each table on a port of its own.
	if err := add(s, s.From.Name, s.From.Alias, len(s.Joins)+1); err != nil {
		return err
	}
	for i, j := range s.Joins {
		if err := add(s, j.Name, j.Alias, i+1); err != nil {
			return err
		}
	}
	for _, in := range b.inputs {
		if !in.Table {
			return nil
		}
	}
	return errAt(s, "a rule must read at least one stream; %s is a table", s.From.Name)
}

func (b *builder) validate() error {
	s := b.stmt
	if b.opts.SendMeta && s.Window != nil {
		return errAt(s, "option sendMetaToSink cannot be used with a window")
	}
	if len(s.Dimensions) > 0 && s.Window == nil {
		return errAt(s, "select stmt group by should be used with window")
	}
	streamsRead := 0
	for _, in := range b.inputs {
		if !in.Table {
			streamsRead++
		}
	}
	if streamsRead > 1 && s.Window == nil {
		return errAt(s, "a time window or count window is required to join multiple streams")
	}
	if b.opts.IsEventTime {
		for _, in := range b.inputs {
			if in.Table {
				continue
			}
			if _, ok := in.Def.Option("TIMESTAMP"); !ok {
				return errAt(s, "stream %s has no TIMESTAMP option, required by isEventTime", in.Name)
			}
		}
	}
	return nil
}

// unitMS converts a window time unit to milliseconds.
func unitMS(u token.Token) (int64, bool) {
	switch u {
	case token.DD:
		return 24 * 3600 * 1000, true
	case token.HH:
		return 3600 * 1000, true
	case token.MI:
		return 60 * 1000, true
	case token.SS:
		return 1000, true
	case token.MS:
		return 1, true
	}
	return 0, false
}

func intArg(w *ast.Window, i int) (int64, error) {
	if i >= len(w.Args) {
		return 0, errAt(w, "%s expects more arguments", w.Type)
	}
	lit, ok := w.Args[i].(*ast.IntegerLit)
	if !ok {
		return 0, errAt(w.Args[i], "expected an integer literal as argument %d of %s, found %s", i+2, w.Type, w.Args[i])
	}
	if lit.Val <= 0 {
		return 0, errAt(w.Args[i], "%s argument must be positive, found %d", w.Type, lit.Val)
	}
	return lit.Val, nil
}

// fieldName is f's output name; unnamed fields are numbered in order among
// the unnamed ones (kuiper_field_0, kuiper_field_1, ...), as eKuiper does,
// with *unnamed counting them.
func fieldName(f ast.Field, unnamed *int) string {
	if n := f.Name(); n != "" {
		return n
	}
	*unnamed++
	return "kuiper_field_" + strconv.Itoa(*unnamed-1)
}

func lower(s string) string { return strings.ToLower(s) }
