package function

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rekuiper/rekuiper/internal/value"
)

// jsonPathExpr is a node of a filter expression; eval returns a value of the
// value model (comparisons and logic give bool, a path gives its value or
// nil when it selects nothing).
type jsonPathExpr interface {
	eval(root, current any) any
}

type (
	jsonPathLit struct{ v any }
	jsonPathRef struct {
		path     *jsonPath
		relative bool
	}
	jsonPathNot  struct{ x jsonPathExpr }
	jsonPathBool struct {
		and  bool
		l, r jsonPathExpr
	}
	jsonPathCmp struct {
		op   value.Op
		l, r jsonPathExpr
	}
)

func (l jsonPathLit) eval(_, _ any) any { return l.v }

func (r jsonPathRef) eval(root, current any) any {
	doc := root
	if r.relative {
		doc = current
	}
	v, found := r.path.eval(doc)
	if !found {
		return nil
	}
	return v
}

func (n jsonPathNot) eval(root, current any) any {
	return !jsonPathTruthy(n.x.eval(root, current))
}

func (b jsonPathBool) eval(root, current any) any {
	l := jsonPathTruthy(b.l.eval(root, current))
	if b.and {
		return l && jsonPathTruthy(b.r.eval(root, current))
	}
	return l || jsonPathTruthy(b.r.eval(root, current))
}

func (c jsonPathCmp) eval(root, current any) any {
	l, r := c.l.eval(root, current), c.r.eval(root, current)
	if l == nil || r == nil {
		// null only equals null.
		switch c.op {
		case value.Eq:
			return l == nil && r == nil
		case value.Neq:
			return (l == nil) != (r == nil)
		}
		return false
	}
	ok, err := value.Compare(c.op, l, r)
	if err != nil {
		// Mismatched kinds are simply unequal.
		return c.op == value.Neq
	}
	return ok
}

// jsonPathTruthy: false, nil and an empty match list are false.
func jsonPathTruthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case []any:
		return len(x) > 0
	}
	return true
}

func (p *jsonPathParser) orExpr() (jsonPathExpr, error) {
	l, err := p.andExpr()
	if err != nil {
		return nil, err
	}
	for {
		p.skipSpace()
		if !strings.HasPrefix(p.src[p.pos:], "||") {
			return l, nil
		}
		p.pos += 2
		r, err := p.andExpr()
		if err != nil {
			return nil, err
		}
		l = jsonPathBool{and: false, l: l, r: r}
	}
}

func (p *jsonPathParser) andExpr() (jsonPathExpr, error) {
	l, err := p.unaryExpr()
	if err != nil {
		return nil, err
	}
	for {
		p.skipSpace()
		if !strings.HasPrefix(p.src[p.pos:], "&&") {
			return l, nil
		}
		p.pos += 2
		r, err := p.unaryExpr()
		if err != nil {
			return nil, err
		}
		l = jsonPathBool{and: true, l: l, r: r}
	}
}

func (p *jsonPathParser) unaryExpr() (jsonPathExpr, error) {
	p.skipSpace()
	if p.peek() == '!' && !strings.HasPrefix(p.src[p.pos:], "!=") {
		p.pos++
		x, err := p.unaryExpr()
		if err != nil {
			return nil, err
		}
		return jsonPathNot{x: x}, nil
	}
	if p.peek() == '(' {
		p.pos++
		x, err := p.orExpr()
		if err != nil {
			return nil, err
		}
		if err := p.expect(')'); err != nil {
			return nil, err
		}
		return x, nil
	}
	l, err := p.operand()
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	for _, c := range []struct {
		text string
		op   value.Op
	}{{"==", value.Eq}, {"!=", value.Neq}, {"<=", value.Lte}, {">=", value.Gte}, {"<", value.Lt}, {">", value.Gt}} {
		if strings.HasPrefix(p.src[p.pos:], c.text) {
			p.pos += len(c.text)
			r, err := p.operand()
			if err != nil {
				return nil, err
			}
			return jsonPathCmp{op: c.op, l: l, r: r}, nil
		}
	}
	return l, nil
}

func (p *jsonPathParser) operand() (jsonPathExpr, error) {
	p.skipSpace()
	switch c := p.peek(); {
	case c == '@' || c == '$':
		p.pos++
		steps, definite, err := p.steps(true)
		if err != nil {
			return nil, err
		}
		return jsonPathRef{path: &jsonPath{steps: steps, definite: definite}, relative: c == '@'}, nil
	case c == '\'' || c == '"':
		s, err := p.quoted()
		if err != nil {
			return nil, err
		}
		return jsonPathLit{v: s}, nil
	case c == '-' || (c >= '0' && c <= '9'):
		start := p.pos
		p.pos++
		for p.pos < len(p.src) && strings.IndexByte("0123456789.eE+-", p.src[p.pos]) >= 0 {
			p.pos++
		}
		text := p.src[start:p.pos]
		if i, err := strconv.ParseInt(text, 10, 64); err == nil {
			return jsonPathLit{v: i}, nil
		}
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return nil, fmt.Errorf("bad number %q", text)
		}
		return jsonPathLit{v: f}, nil
	}
	for _, kw := range []struct {
		text string
		v    any
	}{{"true", true}, {"false", false}, {"null", nil}} {
		if strings.HasPrefix(p.src[p.pos:], kw.text) {
			p.pos += len(kw.text)
			return jsonPathLit{v: kw.v}, nil
		}
	}
	if p.pos >= len(p.src) {
		return nil, fmt.Errorf("expected operand at end")
	}
	return nil, fmt.Errorf("expected operand at %d, found %q", p.pos, p.peek())
}
