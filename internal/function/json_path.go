package function

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// jsonPath is a compiled JSONPath expression. Supported syntax:
//
//	$                 the root
//	.key  ['key']     a member (["key"] too; ['a','b'] is a union)
//	[n]               an array element, negative from the end; [n,m] union
//	[*]  .*           every element or member value
//	[start:end:step]  an array slice (Python semantics)
//	..key  ..*        recursive descent
//	[?(expr)]         a filter over the children of the current node
//
// Filter expressions compare relative paths (@.x, @['x'], @[0]), absolute
// paths ($.x) and literals (numbers, 'strings', "strings", true, false,
// null) with == != < <= > >=, combine them with && || ! and parentheses; a
// bare path is true when it selects a non-null value.
//
// A path is definite when it only uses members and single indexes; it then
// selects at most one value. Other paths select a list of values.
type jsonPath struct {
	steps    []jsonPathStep
	definite bool
}

// jsonPathStep maps the current node set to the next one.
type jsonPathStep interface {
	apply(root any, nodes []any) []any
}

type (
	jsonPathKeys    []string // .key, ['a','b']
	jsonPathIndexes []int64  // [0], [0,-1]
	jsonPathWild    struct{}
	jsonPathSlice   struct {
		start, end, step int64
		hasStart, hasEnd bool
	}
	jsonPathDescend struct{} // expands every node into itself and its descendants
	jsonPathFilter  struct{ cond jsonPathExpr }
)

func (k jsonPathKeys) apply(_ any, nodes []any) []any {
	var out []any
	for _, n := range nodes {
		m, ok := n.(map[string]any)
		if !ok {
			continue
		}
		for _, key := range k {
			if v, ok := m[key]; ok {
				out = append(out, v)
			}
		}
	}
	return out
}

func (ix jsonPathIndexes) apply(_ any, nodes []any) []any {
	var out []any
	for _, n := range nodes {
		a, ok := n.([]any)
		if !ok {
			continue
		}
		for _, i := range ix {
			if i < 0 {
				i += int64(len(a))
			}
			if i >= 0 && i < int64(len(a)) {
				out = append(out, a[i])
			}
		}
	}
	return out
}

func (jsonPathWild) apply(_ any, nodes []any) []any {
	var out []any
	for _, n := range nodes {
		out = append(out, jsonPathChildren(n)...)
	}
	return out
}

func (s jsonPathSlice) apply(_ any, nodes []any) []any {
	var out []any
	for _, n := range nodes {
		a, ok := n.([]any)
		if !ok {
			continue
		}
		l := int64(len(a))
		norm := func(i int64) int64 {
			if i < 0 {
				i += l
			}
			return min(max(i, 0), l)
		}
		if s.step > 0 {
			start, end := int64(0), l
			if s.hasStart {
				start = norm(s.start)
			}
			if s.hasEnd {
				end = norm(s.end)
			}
			for i := start; i < end; i += s.step {
				out = append(out, a[i])
			}
		} else {
			start, end := l-1, int64(-1)
			if s.hasStart {
				start = min(norm(s.start), l-1)
			}
			if s.hasEnd {
				end = s.end
				if end < 0 {
					end += l
				}
				end = min(max(end, -1), l-1)
			}
			for i := start; i > end; i += s.step {
				out = append(out, a[i])
			}
		}
	}
	return out
}

func (jsonPathDescend) apply(_ any, nodes []any) []any {
	var out []any
	var walk func(n any)
	walk = func(n any) {
		out = append(out, n)
		for _, c := range jsonPathChildren(n) {
			walk(c)
		}
	}
	for _, n := range nodes {
		walk(n)
	}
	return out
}

func (f jsonPathFilter) apply(root any, nodes []any) []any {
	var out []any
	for _, n := range nodes {
		for _, c := range jsonPathChildren(n) {
			if jsonPathTruthy(f.cond.eval(root, c)) {
				out = append(out, c)
			}
		}
	}
	return out
}

// jsonPathChildren lists array elements in order, or object member values in
// key order (so results are deterministic).
func jsonPathChildren(n any) []any {
	switch x := n.(type) {
	case []any:
		return x
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make([]any, len(keys))
		for i, k := range keys {
			out[i] = x[k]
		}
		return out
	}
	return nil
}

// eval applies the path to doc. found is false when a definite path selects
// nothing; an indefinite path always yields a []any (possibly empty).
func (p *jsonPath) eval(doc any) (result any, found bool) {
	nodes := []any{doc}
	for _, s := range p.steps {
		nodes = s.apply(doc, nodes)
	}
	if p.definite {
		if len(nodes) == 0 {
			return nil, false
		}
		return nodes[0], true
	}
	if nodes == nil {
		nodes = []any{}
	}
	return nodes, len(nodes) > 0
}

// parseJSONPath compiles a JSONPath expression starting with $.
func parseJSONPath(src string) (*jsonPath, error) {
	s := strings.TrimSpace(src)
	p := &jsonPathParser{src: s}
	if !strings.HasPrefix(s, "$") {
		return nil, fmt.Errorf("parse json path %q: must start with $", src)
	}
	p.pos = 1
	steps, definite, err := p.steps(false)
	if err != nil {
		return nil, fmt.Errorf("parse json path %q: %w", src, err)
	}
	if p.pos != len(p.src) {
		return nil, fmt.Errorf("parse json path %q: unexpected %q at %d", src, p.src[p.pos:], p.pos)
	}
	return &jsonPath{steps: steps, definite: definite}, nil
}

type jsonPathParser struct {
	src string
	pos int
}

func (p *jsonPathParser) peek() byte {
	if p.pos < len(p.src) {
		return p.src[p.pos]
	}
	return 0
}

func (p *jsonPathParser) skipSpace() {
	for p.pos < len(p.src) && (p.src[p.pos] == ' ' || p.src[p.pos] == '\t') {
		p.pos++
	}
}

// steps parses path steps until something that cannot continue a path.
// inFilter stops at filter operators and closing parentheses.
func (p *jsonPathParser) steps(inFilter bool) ([]jsonPathStep, bool, error) {
	var steps []jsonPathStep
	definite := true
	for p.pos < len(p.src) {
		switch p.peek() {
		case '.':
			p.pos++
			if p.peek() == '.' {
				p.pos++
				steps = append(steps, jsonPathDescend{})
				definite = false
				if p.peek() == '[' {
					continue
				}
			}
			if p.peek() == '*' {
				p.pos++
				steps = append(steps, jsonPathWild{})
				definite = false
				continue
			}
			name := p.ident()
			if name == "" {
				return nil, false, fmt.Errorf("expected member name at %d", p.pos)
			}
			steps = append(steps, jsonPathKeys{name})
		case '[':
			p.pos++
			st, def, err := p.bracket()
			if err != nil {
				return nil, false, err
			}
			steps = append(steps, st)
			definite = definite && def
		default:
			if inFilter {
				return steps, definite, nil
			}
			return nil, false, fmt.Errorf("unexpected %q at %d", p.peek(), p.pos)
		}
	}
	return steps, definite, nil
}

func (p *jsonPathParser) ident() string {
	start := p.pos
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		if c == '.' || c == '[' || c == ']' || c == ' ' || c == '(' || c == ')' ||
			c == '=' || c == '!' || c == '<' || c == '>' || c == '&' || c == '|' || c == ',' {
			break
		}
		p.pos++
	}
	return p.src[start:p.pos]
}

// bracket parses the inside of [...] after the opening bracket.
func (p *jsonPathParser) bracket() (jsonPathStep, bool, error) {
	p.skipSpace()
	switch c := p.peek(); {
	case c == '*':
		p.pos++
		if err := p.expect(']'); err != nil {
			return nil, false, err
		}
		return jsonPathWild{}, false, nil
	case c == '?':
		p.pos++
		if err := p.expect('('); err != nil {
			return nil, false, err
		}
		cond, err := p.orExpr()
		if err != nil {
			return nil, false, err
		}
		if err := p.expect(')'); err != nil {
			return nil, false, err
		}
		if err := p.expect(']'); err != nil {
			return nil, false, err
		}
		return jsonPathFilter{cond: cond}, false, nil
	case c == '\'' || c == '"':
		var keys jsonPathKeys
		for {
			s, err := p.quoted()
			if err != nil {
				return nil, false, err
			}
			keys = append(keys, s)
			p.skipSpace()
			if p.peek() != ',' {
				break
			}
			p.pos++
			p.skipSpace()
		}
		if err := p.expect(']'); err != nil {
			return nil, false, err
		}
		return keys, len(keys) == 1, nil
	default:
		return p.indexOrSlice()
	}
}

func (p *jsonPathParser) indexOrSlice() (jsonPathStep, bool, error) {
	var parts [3]int64
	var has [3]bool
	n := 0
	var union []int64
	for {
		p.skipSpace()
		if i, ok := p.integer(); ok {
			parts[n], has[n] = i, true
		}
		p.skipSpace()
		switch p.peek() {
		case ':':
			if n == 2 || union != nil {
				return nil, false, fmt.Errorf("bad slice at %d", p.pos)
			}
			n++
			p.pos++
			continue
		case ',':
			if n > 0 || !has[0] {
				return nil, false, fmt.Errorf("bad index union at %d", p.pos)
			}
			union = append(union, parts[0])
			has[0] = false
			p.pos++
			continue
		case ']':
			p.pos++
		default:
			return nil, false, fmt.Errorf("unexpected %q in brackets at %d", p.peek(), p.pos)
		}
		break
	}
	if n == 0 {
		if !has[0] {
			return nil, false, fmt.Errorf("empty brackets at %d", p.pos)
		}
		union = append(union, parts[0])
		return jsonPathIndexes(union), len(union) == 1, nil
	}
	s := jsonPathSlice{start: parts[0], end: parts[1], step: 1, hasStart: has[0], hasEnd: has[1]}
	if has[2] {
		s.step = parts[2]
	}
	if s.step == 0 {
		return nil, false, fmt.Errorf("slice step cannot be zero")
	}
	return s, false, nil
}

func (p *jsonPathParser) integer() (int64, bool) {
	start := p.pos
	if p.peek() == '-' {
		p.pos++
	}
	for p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
		p.pos++
	}
	i, err := strconv.ParseInt(p.src[start:p.pos], 10, 64)
	if err != nil {
		p.pos = start
		return 0, false
	}
	return i, true
}

func (p *jsonPathParser) quoted() (string, error) {
	q := p.peek()
	if q != '\'' && q != '"' {
		return "", fmt.Errorf("expected quoted string at %d", p.pos)
	}
	p.pos++
	var b strings.Builder
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		p.pos++
		switch {
		case c == '\\' && p.pos < len(p.src):
			b.WriteByte(p.src[p.pos])
			p.pos++
		case c == q:
			return b.String(), nil
		default:
			b.WriteByte(c)
		}
	}
	return "", fmt.Errorf("unterminated string")
}

func (p *jsonPathParser) expect(c byte) error {
	p.skipSpace()
	if p.peek() != c {
		if p.pos >= len(p.src) {
			return fmt.Errorf("expected %q at end", c)
		}
		return fmt.Errorf("expected %q at %d, found %q", c, p.pos, p.peek())
	}
	p.pos++
	return nil
}
