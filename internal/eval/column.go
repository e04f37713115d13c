package eval

import "github.com/rekuiper/rekuiper/internal/row"

// column compiles a read of column name of stream ("" any stream of the
// row). A declared column of a typed stream reads its slot directly when
// the row is a tuple of that stream's layout (row.Field), with no lookup by
// name; any other row is read by name.
func (c *Compiler) column(stream, name string) Expr {
	if f, ok := c.slotField(stream, name); ok {
		return func(ctx *Ctx) (any, error) {
			v, _ := f.Get(ctx.Row)
			return v, nil
		}
	}
	if c.IgnoreCase {
		return func(ctx *Ctx) (any, error) {
			v, _ := row.ValueFold(ctx.Row, stream, name)
			return v, nil
		}
	}
	return func(ctx *Ctx) (any, error) {
		v, _ := ctx.Row.Value(stream, name)
		return v, nil
	}
}

// slotField resolves a column to its slot. An unqualified column resolves
// only when the rule reads a single stream: with a join it may come from
// either side.
func (c *Compiler) slotField(stream, name string) (row.Field, bool) {
	s := stream
	if s == "" {
		for _, st := range c.Streams {
			if s == "" {
				s = st
			} else if st != s {
				return row.Field{}, false
			}
		}
	}
	l := c.Layouts[s]
	if l == nil {
		return row.Field{}, false
	}
	if c.IgnoreCase {
		return l.FieldFold(stream, name)
	}
	return l.Field(stream, name)
}
