package planner

import (
	"strings"

	"github.com/rekuiper/rekuiper/internal/eval"
	"github.com/rekuiper/rekuiper/internal/operator"
	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/sql/token"
)

// Bounds of window sizes: a time window longer than a year, or a count
// window longer than a million rows, is refused at creation (it would hold
// rows for that long, and the length in milliseconds must not overflow).
const (
	MaxWindowMS    = 366 * 24 * 3600 * 1000
	MaxCountWindow = 1_000_000
)

func (b *builder) window() (*operator.Window, error) {
	w := b.stmt.Window
	spec := operator.WindowSpec{EventTime: b.opts.IsEventTime, Unit: 1}
	var err error
	unit := int64(0)
	switch w.Type {
	case ast.TumblingWindow, ast.HoppingWindow, ast.SlidingWindow, ast.SessionWindow:
		u, ok := unitMS(w.Unit)
		if !ok {
			return nil, errAt(w, "the first argument of %s must be a time unit (DD, HH, MI, SS or MS)", w.Type)
		}
		unit = u
		spec.Unit = u
	}
	arg := func(i int) (int64, error) {
		v, err := intArg(w, i)
		if err != nil {
			return 0, err
		}
		if v > MaxWindowMS/max(unit, 1) {
			return 0, errAt(w.Args[i], "%s argument %d %s exceeds the limit of 366 days", w.Type, v, w.Unit)
		}
		return v * max(unit, 1), nil
	}
	switch w.Type {
	case ast.TumblingWindow:
		spec.Kind = operator.Tumbling
		if spec.Size, err = arg(0); err != nil {
			return nil, err
		}
	case ast.HoppingWindow:
		spec.Kind = operator.Hopping
		if spec.Size, err = arg(0); err != nil {
			return nil, err
		}
		if spec.Hop, err = arg(1); err != nil {
			return nil, err
		}
	case ast.SlidingWindow:
		spec.Kind = operator.Sliding
		if spec.Size, err = arg(0); err != nil {
			return nil, err
		}
		if len(w.Args) > 1 {
			if spec.Delay, err = arg(1); err != nil {
				return nil, err
			}
		}
	case ast.SessionWindow:
		spec.Kind = operator.Session
		if spec.Size, err = arg(0); err != nil {
			return nil, err
		}
		if spec.Timeout, err = arg(1); err != nil {
			return nil, err
		}
	case ast.CountWindow:
		spec.Kind = operator.Count
		n, err := intArg(w, 0)
		if err != nil {
			return nil, err
		}
		if n > MaxCountWindow {
			return nil, errAt(w.Args[0], "COUNTWINDOW length %d exceeds the limit of %d rows", n, MaxCountWindow)
		}
		spec.Length = int(n)
		if len(w.Args) > 1 {
			step, err := intArg(w, 1)
			if err != nil {
				return nil, err
			}
			if step > n {
				return nil, errAt(w, "the step of COUNTWINDOW must not be larger than its length")
			}
			spec.Step = int(step)
		}
	case ast.StateWindow:
		spec.Kind = operator.State
		if len(w.Args) == 0 || len(w.Args) > 2 {
			return nil, errAt(w, "STATEWINDOW expects one or two conditions")
		}
		if spec.Begin, err = b.comp.Compile(w.Args[0]); err != nil {
			return nil, err
		}
		if len(w.Args) == 2 {
			if spec.EmitCond, err = b.comp.Compile(w.Args[1]); err != nil {
				return nil, err
			}
		}
	default:
		return nil, errAt(w, "unknown window %s", w.Name)
	}
	if w.Filter != nil {
		if spec.Filter, err = b.comp.Compile(w.Filter); err != nil {
			return nil, err
		}
	}
	if w.TriggerCond != nil {
		if spec.Trigger, err = b.comp.Compile(w.TriggerCond); err != nil {
			return nil, err
		}
	}
	for _, p := range w.Partition {
		x, err := b.comp.Compile(p)
		if err != nil {
			return nil, err
		}
		spec.Partition = append(spec.Partition, x)
	}
	return &operator.Window{Spec: spec}, nil
}

func (b *builder) preprocess() *operator.Preprocess {
	p := &operator.Preprocess{Schemas: map[string]*operator.StreamSchema{}, Location: b.loc}
	used := b.usedColumns()
	for _, in := range b.inputs {
		s := &operator.StreamSchema{Fields: map[string]*ast.DataType{}}
		for _, f := range in.Def.Fields {
			s.Fields[f.Name] = f.Type
		}
		if v, ok := in.Def.Option("STRICT_VALIDATION"); ok && strings.EqualFold(v, "true") && len(in.Def.Fields) > 0 {
			s.Strict = true
			for _, f := range in.Def.Fields {
				if !(used.all[in.Name] || used.all[""] || used.cols[f.Name] || used.qualified[in.Name+"."+f.Name]) {
					continue
				}
				if f.Type != nil && f.Type.Kind == token.STRUCT {
					// As in eKuiper, a STRUCT column is validated only
					// through the fields the rule reads from it (info.n,
					// info->n): those must be present and of their type;
					// a column read only whole is passed as it is.
					sub := structFields(f.Type, used.sub[f.Name])
					if sub == nil {
						if len(used.sub[f.Name]) == 0 {
							continue
						}
						// Only keys the type does not declare are read
						// (info->other): the column must still be there
						// and be an object, as in eKuiper
						// (diff_schema/struct_undeclared_key).
						sub = &ast.DataType{P: f.Type.P, Kind: token.STRUCT}
					}
					s.Fields[f.Name] = sub
				}
				s.Check = append(s.Check, f.Name)
			}
		}
		if b.opts.IsEventTime && !in.Table {
			s.TimestampField, _ = in.Def.Option("TIMESTAMP")
		}
		p.Schemas[in.Name] = s
	}
	return p
}

type columnUse struct {
	cols      map[string]bool            // unqualified names
	qualified map[string]bool            // stream.name
	all       map[string]bool            // stream ("" = every stream) read with *
	sub       map[string]map[string]bool // column -> keys read from it (col.key, col->key)
}

// structFields is the STRUCT type dt cut down to the fields the rule reads,
// paths like "a" or "a.b" (info.a, info.a.b, info->a->b); nil when paths
// name none of them. A nested STRUCT field read whole keeps no fields of
// its own: it must be an object, its contents are not checked.
func structFields(dt *ast.DataType, paths map[string]bool) *ast.DataType {
	var fs []ast.StreamField
	for _, f := range dt.Fields {
		used, sub := false, map[string]bool{}
		for p := range paths {
			if p == f.Name {
				used = true
			} else if rest, ok := strings.CutPrefix(p, f.Name+"."); ok {
				used = true
				sub[rest] = true
			}
		}
		if !used {
			continue
		}
		if f.Type != nil && f.Type.Kind == token.STRUCT {
			t := structFields(f.Type, sub)
			if t == nil {
				t = &ast.DataType{P: f.Type.P, Kind: token.STRUCT}
			}
			f.Type = t
		}
		fs = append(fs, f)
	}
	if fs == nil {
		return nil
	}
	return &ast.DataType{P: dt.P, Kind: dt.Kind, Fields: fs}
}

// keyPath splits a chain of -> and . over a column, info.a->b, into the
// column reference and the keys read ("a.b"); nil when e is not such a
// chain.
func (b *builder) keyPath(e ast.Expr) (*ast.FieldRef, string) {
	switch x := e.(type) {
	case *ast.FieldRef:
		return x, ""
	case *ast.BinaryExpr:
		k, ok := x.RHS.(*ast.FieldRef)
		if (x.Op != token.ARROW && x.Op != token.DOT) || !ok || k.Stream != "" {
			return nil, ""
		}
		root, path := b.keyPath(x.LHS)
		if root == nil {
			return nil, ""
		}
		if path != "" {
			path += "."
		}
		return root, path + k.Name
	}
	return nil, ""
}

// usedColumns finds the columns the query reads, to validate only those.
func (b *builder) usedColumns() columnUse {
	u := columnUse{cols: map[string]bool{}, qualified: map[string]bool{}, all: map[string]bool{}, sub: map[string]map[string]bool{}}
	addSub := func(col, key string) {
		if u.sub[col] == nil {
			u.sub[col] = map[string]bool{}
		}
		u.sub[col][key] = true
	}
	ref := func(x *ast.FieldRef) {
		if s, ok := b.streams[x.Stream]; ok && x.Stream != "" {
			u.qualified[s+"."+x.Name] = true
		} else if x.Stream != "" {
			u.cols[x.Stream] = true
			addSub(x.Stream, x.Name)
		} else {
			u.cols[x.Name] = true
		}
	}
	visit := func(e ast.Expr) {
		ast.Walk(e, func(n ast.Expr) bool {
			switch x := n.(type) {
			case *ast.BinaryExpr:
				// col->key, col.key, col.a.b read keys of a column.
				if root, path := b.keyPath(x); root != nil && path != "" {
					ref(root)
					if root.Stream != "" && b.streams[root.Stream] == "" {
						path = root.Name + "." + path
						root = &ast.FieldRef{Name: root.Stream}
					}
					addSub(root.Name, path)
					return false
				}
			case *ast.FieldRef:
				ref(x)
			case *ast.Wildcard:
				u.all[b.streams[x.Stream]] = true
			case *ast.Call:
				if n := lower(x.Name); n == "meta" || n == "mqtt" {
					return false
				}
			}
			return true
		})
	}
	b.eachClause(visit)
	if w := b.stmt.Window; w != nil {
		for _, a := range w.Args {
			visit(a)
		}
		visit(w.Filter)
		visit(w.TriggerCond)
	}
	return u
}

var _ = eval.Truthy
