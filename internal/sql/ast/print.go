package ast

import (
	"strconv"
	"strings"

	"github.com/rekuiper/rekuiper/internal/sql/token"
)

// QuoteIdent back-quotes an identifier when it is a keyword or is not a plain
// name, so that the printed SQL scans back to the same identifier. Inside the
// back-quotes, ` and \ are escaped with a backslash.
func QuoteIdent(s string) string {
	if s == "" {
		return "``"
	}
	plain := token.Lookup(s) == token.IDENT
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			plain = false
			break
		}
	}
	if plain {
		return s
	}
	return "`" + strings.NewReplacer("\\", "\\\\", "`", "\\`").Replace(s) + "`"
}

// QuoteString prints a string literal in double quotes with escapes the
// scanner understands.
func QuoteString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		case '\r':
			b.WriteString(`\r`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func qualified(stream, name string) string {
	if stream == "" {
		return QuoteIdent(name)
	}
	return QuoteIdent(stream) + "." + QuoteIdent(name)
}

func (e *FieldRef) String() string { return qualified(e.Stream, e.Name) }

func (e *Wildcard) String() string {
	var b strings.Builder
	if e.Stream != "" {
		b.WriteString(QuoteIdent(e.Stream) + ".")
	}
	b.WriteByte('*')
	if len(e.Except) > 0 {
		parts := make([]string, len(e.Except))
		for i, n := range e.Except {
			parts[i] = QuoteIdent(n)
		}
		b.WriteString(" EXCEPT(" + strings.Join(parts, ", ") + ")")
	}
	if len(e.Replace) > 0 {
		parts := make([]string, len(e.Replace))
		for i, f := range e.Replace {
			parts[i] = f.String()
		}
		b.WriteString(" REPLACE(" + strings.Join(parts, ", ") + ")")
	}
	return b.String()
}

func (e *IntegerLit) String() string { return strconv.FormatInt(e.Val, 10) }

func (e *NumberLit) String() string {
	if e.Raw != "" {
		return e.Raw
	}
	s := strconv.FormatFloat(e.Val, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eEn") {
		s += ".0"
	}
	return s
}

func (e *StringLit) String() string   { return QuoteString(e.Val) }
func (e *BoolLit) String() string     { return strings.ToUpper(strconv.FormatBool(e.Val)) }
func (e *NullLit) String() string     { return "NULL" }
func (e *TimeUnitLit) String() string { return e.Unit.String() }
func (e *ParenExpr) String() string   { return "(" + e.X.String() + ")" }

func (e *UnaryExpr) String() string {
	if e.Op == token.NOT {
		return "NOT " + e.X.String()
	}
	x := e.X.String()
	if strings.HasPrefix(x, "-") {
		return "- " + x // "--" would start a comment
	}
	return "-" + x
}

func (e *BinaryExpr) String() string {
	switch e.Op {
	case token.ARROW:
		return e.LHS.String() + "->" + e.RHS.String()
	case token.IN, token.NOTIN:
		return e.LHS.String() + " " + e.Op.String() + " " + e.RHS.String()
	}
	return e.LHS.String() + " " + e.Op.String() + " " + e.RHS.String()
}

func (e *BetweenRange) String() string { return e.Lo.String() + " AND " + e.Hi.String() }

func (e *ListExpr) String() string { return "(" + joinExprs(e.Items) + ")" }

func (e *IndexExpr) String() string { return e.X.String() + "[" + e.Index.String() + "]" }

func (e *SliceExpr) String() string {
	if e.Full {
		return e.X.String() + "[]"
	}
	var lo, hi string
	if e.Lo != nil {
		lo = e.Lo.String()
	}
	if e.Hi != nil {
		hi = e.Hi.String()
	}
	return e.X.String() + "[" + lo + ":" + hi + "]"
}

func (e *IsNullExpr) String() string {
	if e.Not {
		return e.X.String() + " IS NOT NULL"
	}
	return e.X.String() + " IS NULL"
}

func (e *CaseExpr) String() string {
	var b strings.Builder
	b.WriteString("CASE")
	if e.Value != nil {
		b.WriteString(" " + e.Value.String())
	}
	for _, w := range e.Whens {
		b.WriteString(" WHEN " + w.Cond.String() + " THEN " + w.Result.String())
	}
	if e.Else != nil {
		b.WriteString(" ELSE " + e.Else.String())
	}
	b.WriteString(" END")
	return b.String()
}

func (e *Call) String() string {
	s := e.Name + "(" + joinExprs(e.Args) + ")"
	if e.Over != nil {
		s += " " + e.Over.String()
	}
	return s
}

func (o *Over) String() string {
	var parts []string
	if len(o.Partition) > 0 {
		parts = append(parts, "PARTITION BY "+joinExprs(o.Partition))
	}
	if len(o.OrderBy) > 0 {
		parts = append(parts, "ORDER BY "+joinSorts(o.OrderBy))
	}
	if o.When != nil {
		parts = append(parts, "WHEN "+o.When.String())
	}
	return "OVER (" + strings.Join(parts, " ") + ")"
}

func (f Field) String() string {
	s := f.Expr.String()
	if f.Alias != "" {
		s += " AS " + QuoteIdent(f.Alias)
	}
	if f.Invisible {
		s += " INVISIBLE"
	}
	return s
}

func (w *Window) String() string {
	args := make([]string, 0, len(w.Args)+1)
	if w.Unit != token.ILLEGAL {
		args = append(args, w.Unit.String())
	}
	for _, a := range w.Args {
		args = append(args, a.String())
	}
	name := w.Name
	if name == "" {
		name = w.Type.String()
	}
	s := name + "(" + strings.Join(args, ", ") + ")"
	if w.Filter != nil {
		s += " FILTER (WHERE " + w.Filter.String() + ")"
	}
	if w.TriggerCond != nil || len(w.Partition) > 0 {
		var parts []string
		if len(w.Partition) > 0 {
			parts = append(parts, "PARTITION BY "+joinExprs(w.Partition))
		}
		if w.TriggerCond != nil {
			parts = append(parts, "WHEN "+w.TriggerCond.String())
		}
		s += " OVER (" + strings.Join(parts, " ") + ")"
	}
	return s
}

func (s SortField) String() string {
	if s.Desc {
		return s.Expr.String() + " DESC"
	}
	return s.Expr.String() + " ASC"
}

func (s *SelectStmt) String() string {
	var b strings.Builder
	fields := make([]string, len(s.Fields))
	for i, f := range s.Fields {
		fields[i] = f.String()
	}
	b.WriteString("SELECT " + strings.Join(fields, ", ") + " FROM " + QuoteIdent(s.From.Name))
	if s.From.Alias != "" {
		b.WriteString(" AS " + QuoteIdent(s.From.Alias))
	}
	for _, j := range s.Joins {
		b.WriteString(" " + j.Type.String() + " JOIN " + QuoteIdent(j.Name))
		if j.Alias != "" {
			b.WriteString(" AS " + QuoteIdent(j.Alias))
		}
		if j.On != nil {
			b.WriteString(" ON " + j.On.String())
		}
	}
	if s.Where != nil {
		b.WriteString(" WHERE " + s.Where.String())
	}
	if len(s.Dimensions) > 0 || s.Window != nil {
		dims := make([]string, 0, len(s.Dimensions)+1)
		for _, d := range s.Dimensions {
			dims = append(dims, d.String())
		}
		if s.Window != nil {
			dims = append(dims, s.Window.String())
		}
		b.WriteString(" GROUP BY " + strings.Join(dims, ", "))
	}
	if s.Having != nil {
		b.WriteString(" HAVING " + s.Having.String())
	}
	if len(s.OrderBy) > 0 {
		b.WriteString(" ORDER BY " + joinSorts(s.OrderBy))
	}
	if s.HasLimit {
		b.WriteString(" LIMIT " + strconv.FormatInt(s.Limit, 10))
	}
	return b.String()
}

func (t *DataType) String() string {
	switch t.Kind {
	case token.ARRAY:
		return "ARRAY(" + t.Elem.String() + ")"
	case token.STRUCT:
		return "STRUCT(" + joinStreamFields(t.Fields) + ")"
	}
	return t.Kind.String()
}

func (f StreamField) String() string {
	s := QuoteIdent(f.Name) + " " + f.Type.String()
	if f.Default != nil {
		s += " DEFAULT " + f.Default.String()
	}
	return s
}

func (s *CreateStreamStmt) String() string {
	var b strings.Builder
	b.WriteString("CREATE " + s.Kind.String() + " " + QuoteIdent(s.Name) + " (" + joinStreamFields(s.Fields) + ")")
	if len(s.Options) > 0 {
		opts := make([]string, len(s.Options))
		for i, o := range s.Options {
			opts[i] = o.Key + " = " + QuoteString(o.Value)
		}
		b.WriteString(" WITH (" + strings.Join(opts, ", ") + ")")
	}
	return b.String()
}

func (s *ShowStmt) String() string { return "SHOW " + s.Kind.String() + "S" }

func (s *DescribeStmt) String() string {
	verb := "DESCRIBE"
	if s.Explain {
		verb = "EXPLAIN"
	}
	return verb + " " + s.Kind.String() + " " + QuoteIdent(s.Name)
}

func (s *DropStmt) String() string { return "DROP " + s.Kind.String() + " " + QuoteIdent(s.Name) }

func joinExprs(es []Expr) string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.String()
	}
	return strings.Join(parts, ", ")
}

func joinSorts(ss []SortField) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = s.String()
	}
	return strings.Join(parts, ", ")
}

func joinStreamFields(fs []StreamField) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = f.String()
	}
	return strings.Join(parts, ", ")
}
