package eval

import (
	"fmt"
	"regexp"

	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/sql/token"
	"github.com/rekuiper/rekuiper/internal/value"
)

var arithOps = map[token.Token]value.Op{
	token.ADD: value.Add, token.SUB: value.Sub, token.MUL: value.Mul, token.DIV: value.Div,
	token.MOD: value.Mod, token.BITAND: value.BitAnd, token.BITOR: value.BitOr, token.BITXOR: value.BitXor,
}

var cmpOps = map[token.Token]value.Op{
	token.EQ: value.Eq, token.NEQ: value.Neq, token.LT: value.Lt, token.LTE: value.Lte,
	token.GT: value.Gt, token.GTE: value.Gte,
}

// objectKey is v->name (or v.name, v not a stream): the key's value when
// v is an object. An array (of objects, say, as arr[0:2]->a gives, or
// empty) has no keys: an error, as in eKuiper; other non-objects give nil.
func objectKey(v any, name string) (any, error) {
	if _, isArray := v.([]any); isArray {
		return nil, fmt.Errorf("-> %s: %s is not an object", name, value.Describe(v))
	}
	return arrow(v, name), nil
}

func (c *Compiler) compileBinary(n *ast.BinaryExpr) (Expr, error) {
	switch n.Op {
	case token.ARROW:
		key, ok := n.RHS.(*ast.FieldRef)
		if !ok {
			return nil, errAt(n.RHS, "expected a key name after ->, found %s", n.RHS)
		}
		lhs, err := c.Compile(n.LHS)
		if err != nil {
			return nil, err
		}
		name := key.Name
		if key.Stream != "" {
			// a->b.c is a->b->c
			inner := &ast.BinaryExpr{P: n.P, Op: token.ARROW, LHS: n.LHS, RHS: &ast.FieldRef{P: key.P, Name: key.Stream}}
			outer := &ast.BinaryExpr{P: n.P, Op: token.ARROW, LHS: inner, RHS: &ast.FieldRef{P: key.P, Name: key.Name}}
			return c.compileBinary(outer)
		}
		return func(ctx *Ctx) (any, error) {
			v, err := lhs(ctx)
			if err != nil {
				return nil, err
			}
			return objectKey(v, name)
		}, nil
	case token.BETWEEN, token.NOTBETWEEN:
		return c.compileBetween(n)
	case token.IN, token.NOTIN:
		return c.compileIn(n)
	case token.LIKE, token.NOTLIKE:
		return c.compileLike(n)
	}
	lhs, rhs, err := c.compilePair(n.LHS, n.RHS)
	if err != nil {
		return nil, err
	}
	switch n.Op {
	case token.AND, token.OR:
		isAnd := n.Op == token.AND
		return func(ctx *Ctx) (any, error) {
			l, err := lhs(ctx)
			if err != nil {
				return nil, err
			}
			lb, err := logicOperand(l, n.Op, l, nil)
			if err != nil {
				return nil, err
			}
			if isAnd && !lb {
				return false, nil
			}
			if !isAnd && lb {
				return true, nil
			}
			r, err := rhs(ctx)
			if err != nil {
				return nil, err
			}
			return logicOperand(r, n.Op, l, r)
		}, nil
	}
	if op, ok := arithOps[n.Op]; ok {
		return func(ctx *Ctx) (any, error) {
			l, r, err := operands(ctx, lhs, rhs, n.Op)
			if err != nil {
				return nil, err
			}
			return value.Arith(op, l, r)
		}, nil
	}
	if op, ok := cmpOps[n.Op]; ok {
		return func(ctx *Ctx) (any, error) {
			l, r, err := operands(ctx, lhs, rhs, n.Op)
			if err != nil {
				return nil, err
			}
			return value.Compare(op, l, r)
		}, nil
	}
	return nil, errAt(n, "unsupported operator %s", n.Op)
}

// compilePair compiles a and b, in that order.
func (c *Compiler) compilePair(a, b ast.Expr) (Expr, Expr, error) {
	x, err := c.Compile(a)
	if err != nil {
		return nil, nil, err
	}
	y, err := c.Compile(b)
	if err != nil {
		return nil, nil, err
	}
	return x, y, nil
}

// evalPair evaluates a, then b.
func evalPair(ctx *Ctx, a, b Expr) (any, any, error) {
	x, err := a(ctx)
	if err != nil {
		return nil, nil, err
	}
	y, err := b(ctx)
	if err != nil {
		return nil, nil, err
	}
	return x, y, nil
}

// operands evaluates the sides of an arithmetic or comparison operator op,
// left first: an object or array on the left is refused (containerOperand)
// before the right side is evaluated.
func operands(ctx *Ctx, lhs, rhs Expr, op token.Token) (l, r any, err error) {
	if l, err = lhs(ctx); err != nil {
		return nil, nil, err
	}
	if err = containerOperand(l, op); err != nil {
		return nil, nil, err
	}
	if r, err = rhs(ctx); err != nil {
		return nil, nil, err
	}
	return l, r, nil
}

// containerOperand refuses an object or array left of an arithmetic or
// comparison operator, whatever the right side (null included), as eKuiper
// does: `o < w` and `arr = arr` are errors, not false. Objects and arrays
// are read with ->, [] and the functions made for them.
func containerOperand(l any, op token.Token) error {
	switch l.(type) {
	case map[string]any, []any:
		return fmt.Errorf("%s is an invalid operation for %s", op, value.Describe(l))
	}
	return nil
}

// logicOperand reads an AND/OR operand: nil counts as false.
func logicOperand(v any, op token.Token, l, r any) (bool, error) {
	switch b := v.(type) {
	case nil:
		return false, nil
	case bool:
		return b, nil
	}
	return false, fmt.Errorf("invalid operation %s %s %s", value.Describe(l), op, value.Describe(r))
}

func (c *Compiler) compileBetween(n *ast.BinaryExpr) (Expr, error) {
	rng, ok := n.RHS.(*ast.BetweenRange)
	if !ok {
		return nil, errAt(n.RHS, "expected lo AND hi after BETWEEN, found %s", n.RHS)
	}
	x, lo, err := c.compilePair(n.LHS, rng.Lo)
	if err != nil {
		return nil, err
	}
	hi, err := c.Compile(rng.Hi)
	if err != nil {
		return nil, err
	}
	not := n.Op == token.NOTBETWEEN
	return func(ctx *Ctx) (any, error) {
		v, l, err := evalPair(ctx, x, lo)
		if err != nil {
			return nil, err
		}
		h, err := hi(ctx)
		if err != nil {
			return nil, err
		}
		if v == nil || l == nil || h == nil {
			return false, nil
		}
		ge, err := value.Compare(value.Gte, v, l)
		if err != nil {
			return nil, err
		}
		le, err := value.Compare(value.Lte, v, h)
		if err != nil {
			return nil, err
		}
		return (ge && le) != not, nil
	}, nil
}

func (c *Compiler) compileIn(n *ast.BinaryExpr) (Expr, error) {
	x, set, err := c.compilePair(n.LHS, n.RHS)
	if err != nil {
		return nil, err
	}
	not := n.Op == token.NOTIN
	return func(ctx *Ctx) (any, error) {
		v, s, err := evalPair(ctx, x, set)
		if err != nil {
			return nil, err
		}
		arr, ok := s.([]any)
		if !ok {
			if s == nil {
				return false, nil
			}
			return nil, fmt.Errorf("invalid operation %s IN %s", value.Describe(v), value.Describe(s))
		}
		if v == nil {
			return false, nil
		}
		switch v.(type) {
		case []any, map[string]any:
			return nil, fmt.Errorf("IN is an invalid operation for %s", value.Describe(v))
		}
		// Each item is compared as =, in order, until one matches: an item
		// that does not compare with the value (a number and a string,
		// say) is an error, as in eKuiper.
		found := false
		for _, it := range arr {
			eq, err := value.Compare(value.Eq, v, it)
			if err != nil {
				return nil, fmt.Errorf("evaluate in expression: %w", err)
			}
			if eq {
				found = true
				break
			}
		}
		return found != not, nil
	}, nil
}

func (c *Compiler) compileLike(n *ast.BinaryExpr) (Expr, error) {
	x, err := c.Compile(n.LHS)
	if err != nil {
		return nil, err
	}
	not := n.Op == token.NOTLIKE
	if lit, ok := n.RHS.(*ast.StringLit); ok {
		re, err := likeRegexp(lit.Val)
		if err != nil {
			return nil, errAt(lit, "invalid LIKE pattern %q: %v", lit.Val, err)
		}
		return func(ctx *Ctx) (any, error) {
			v, err := x(ctx)
			if err != nil {
				return nil, err
			}
			return likeMatch(v, re, not)
		}, nil
	}
	pat, err := c.Compile(n.RHS)
	if err != nil {
		return nil, err
	}
	return func(ctx *Ctx) (any, error) {
		v, p, err := evalPair(ctx, x, pat)
		if err != nil {
			return nil, err
		}
		ps, ok := p.(string)
		if !ok {
			if p == nil {
				return false, nil
			}
			return nil, fmt.Errorf("invalid LIKE pattern %s", value.Describe(p))
		}
		re, err := likeRegexp(ps)
		if err != nil {
			return nil, err
		}
		return likeMatch(v, re, not)
	}, nil
}

func likeMatch(v any, re *regexp.Regexp, not bool) (any, error) {
	if v == nil {
		return false, nil
	}
	s, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("LIKE operator left operand expects string, but found %s", value.Describe(v))
	}
	return re.MatchString(s) != not, nil
}
