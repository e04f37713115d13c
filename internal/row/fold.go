package row

import "strings"

// ValueFold looks up a column as Value does and, when no column has
// exactly that name, matches it case-insensitively (kuiper.yaml
// basic.ignoreCase). Among several columns that differ only in case, the
// one whose name sorts first in byte order is read, so the result does not
// depend on map order; in a joined row the earlier stream wins, as with
// Value.
func ValueFold(r Row, stream, name string) (any, bool) {
	if v, ok := r.Value(stream, name); ok {
		return v, true
	}
	switch x := r.(type) {
	case *Tuple:
		return x.valueFold(stream, name)
	case *Joined:
		for _, t := range x.Tuples {
			if t == nil {
				continue
			}
			if v, ok := t.valueFold(stream, name); ok {
				return v, true
			}
		}
		return nil, false
	}
	var best string
	var val any
	found := false
	for k, v := range r.Columns(stream) {
		if strings.EqualFold(k, name) && (!found || k < best) {
			best, val, found = k, v, true
		}
	}
	return val, found
}

func (t *Tuple) valueFold(stream, name string) (any, bool) {
	var best string
	var val any
	found := false
	t.Range(stream, func(k string, v any) {
		if strings.EqualFold(k, name) && (!found || k < best) {
			best, val, found = k, v, true
		}
	})
	return val, found
}

// FieldFold resolves a declared column as Field does and, when no field
// has exactly that name, matches it case-insensitively, taking the first
// declared field that matches.
func (l *Layout) FieldFold(stream, name string) (Field, bool) {
	if f, ok := l.Field(stream, name); ok {
		return f, true
	}
	for _, n := range l.names {
		if strings.EqualFold(n, name) {
			return l.Field(stream, n)
		}
	}
	return Field{}, false
}
