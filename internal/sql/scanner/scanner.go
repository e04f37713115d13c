// Package scanner splits rekuiper SQL text into tokens with positions.
//
// The scanner is context free: every word that spells a keyword comes back
// as that keyword's token, and the parser decides where a non-reserved
// keyword may stand for an identifier. Whitespace and comments (`-- line`,
// `/* block */`) are skipped. Lexical errors come back as ILLEGAL items whose
// Lit describes the problem; scanning may continue after them.
package scanner

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/rekuiper/rekuiper/internal/sql/token"
)

// Item is one scanned token.
type Item struct {
	Tok token.Token
	Pos token.Pos
	// End is the byte offset just past the token's source text.
	End int
	// Lit is the token's value: the name of an identifier (without
	// back-quotes), the decoded value of a string, the text of a number,
	// keyword or operator as written, or, for ILLEGAL, a description of the
	// problem. It is "" for EOF.
	Lit string
	// Quoted reports an identifier written in back-quotes; it is never a
	// keyword.
	Quoted bool
}

// Scanner reads tokens from a source string. The zero value is not usable;
// call New.
type Scanner struct {
	src  string
	off  int // offset of the next unread byte
	line int
	col  int
}

// New returns a scanner positioned at the start of src.
func New(src string) *Scanner {
	return &Scanner{src: src, line: 1, col: 1}
}

func (s *Scanner) pos() token.Pos { return token.Pos{Offset: s.off, Line: s.line, Col: s.col} }

// peekByte returns the byte at off+n, or 0 past the end.
func (s *Scanner) peekByte(n int) byte {
	if s.off+n < len(s.src) {
		return s.src[s.off+n]
	}
	return 0
}

// advance consumes n bytes, keeping line and column up to date.
func (s *Scanner) advance(n int) {
	for i := 0; i < n && s.off < len(s.src); i++ {
		if s.src[s.off] == '\n' {
			s.line++
			s.col = 1
		} else {
			s.col++
		}
		s.off++
	}
}

// Scan returns the next token, skipping whitespace and comments. At the end
// of input it returns EOF forever.
func (s *Scanner) Scan() Item {
	if it, ok := s.skipSpace(); !ok {
		return it
	}
	start := s.pos()
	if s.off >= len(s.src) {
		return Item{Tok: token.EOF, Pos: start, End: s.off}
	}
	r, size := utf8.DecodeRuneInString(s.src[s.off:])
	var it Item
	switch {
	case r == utf8.RuneError && size == 1:
		s.advance(1)
		it = Item{Tok: token.ILLEGAL, Lit: "invalid UTF-8 encoding"}
	case isLetter(r):
		it = s.scanIdent()
	case isDigit(r):
		it = s.scanNumber()
	case r == '"' || r == '\'':
		it = s.scanString(byte(r))
	case r == '`':
		it = s.scanQuotedIdent()
	default:
		it = s.scanOperator(r, size)
	}
	it.Pos = start
	it.End = s.off
	return it
}

// skipSpace skips whitespace and comments. It reports false with an ILLEGAL
// item for an unterminated block comment.
func (s *Scanner) skipSpace() (Item, bool) {
	for s.off < len(s.src) {
		c := s.src[s.off]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			s.advance(1)
		case c == '-' && s.peekByte(1) == '-':
			for s.off < len(s.src) && s.src[s.off] != '\n' {
				s.advance(1)
			}
		case c == '/' && s.peekByte(1) == '*':
			start := s.pos()
			end := strings.Index(s.src[s.off+2:], "*/")
			if end < 0 {
				s.advance(len(s.src) - s.off)
				return Item{Tok: token.ILLEGAL, Pos: start, End: s.off, Lit: "comment not terminated"}, false
			}
			s.advance(end + 4)
		default:
			return Item{}, true
		}
	}
	return Item{}, true
}

func isLetter(r rune) bool { return r == '_' || unicode.IsLetter(r) }

func isDigit(r rune) bool { return r >= '0' && r <= '9' }

func (s *Scanner) scanIdent() Item {
	start := s.off
	for s.off < len(s.src) {
		r, size := utf8.DecodeRuneInString(s.src[s.off:])
		if !(isLetter(r) || unicode.IsDigit(r)) || r == utf8.RuneError && size == 1 {
			break
		}
		s.advance(size)
	}
	lit := s.src[start:s.off]
	return Item{Tok: token.Lookup(lit), Lit: lit}
}

// scanNumber scans digits [ "." digits ] [ ("e"|"E") ["+"|"-"] digits ].
func (s *Scanner) scanNumber() Item {
	start := s.off
	tok := token.INTEGER
	s.skipDigits()
	if s.peekByte(0) == '.' && isDigit(rune(s.peekByte(1))) {
		tok = token.NUMBER
		s.advance(1)
		s.skipDigits()
	}
	if c := s.peekByte(0); c == 'e' || c == 'E' {
		n := 1
		if sign := s.peekByte(1); sign == '+' || sign == '-' {
			n = 2
		}
		if isDigit(rune(s.peekByte(n))) {
			tok = token.NUMBER
			s.advance(n)
			s.skipDigits()
		}
	}
	return Item{Tok: tok, Lit: s.src[start:s.off]}
}

func (s *Scanner) skipDigits() {
	for s.off < len(s.src) && isDigit(rune(s.src[s.off])) {
		s.advance(1)
	}
}

// scanString scans a string quoted by q. Backslash escapes \" \' \\ \n \t \r
// are decoded; any other backslash is kept as written.
func (s *Scanner) scanString(q byte) Item {
	s.advance(1)
	var b strings.Builder
	for s.off < len(s.src) {
		c := s.src[s.off]
		switch {
		case c == q:
			s.advance(1)
			return Item{Tok: token.STRING, Lit: b.String()}
		case c == '\\' && s.off+1 < len(s.src):
			b.WriteString(unescape(s.src[s.off+1]))
			s.advance(2)
		case !s.copyRune(&b):
			return Item{Tok: token.ILLEGAL, Lit: "invalid UTF-8 encoding in string literal"}
		}
	}
	return Item{Tok: token.ILLEGAL, Lit: "string literal not terminated"}
}

func unescape(c byte) string {
	switch c {
	case 'n':
		return "\n"
	case 't':
		return "\t"
	case 'r':
		return "\r"
	case '"', '\'', '\\':
		return string(c)
	}
	return "\\" + string(c)
}

// scanQuotedIdent scans a back-quoted identifier; \` and \\ are escapes, any
// other backslash is kept as written.
func (s *Scanner) scanQuotedIdent() Item {
	s.advance(1)
	var b strings.Builder
	for s.off < len(s.src) {
		c := s.src[s.off]
		switch {
		case c == '`':
			s.advance(1)
			return Item{Tok: token.IDENT, Lit: b.String(), Quoted: true}
		case c == '\\' && (s.peekByte(1) == '`' || s.peekByte(1) == '\\'):
			b.WriteByte(s.src[s.off+1])
			s.advance(2)
		case !s.copyRune(&b):
			return Item{Tok: token.ILLEGAL, Lit: "invalid UTF-8 encoding in quoted identifier"}
		}
	}
	return Item{Tok: token.ILLEGAL, Lit: "quoted identifier not terminated"}
}

// copyRune copies the next rune to b and consumes it; it reports false,
// consuming one byte, when the input is not valid UTF-8 there.
func (s *Scanner) copyRune(b *strings.Builder) bool {
	r, size := utf8.DecodeRuneInString(s.src[s.off:])
	s.advance(size)
	if r == utf8.RuneError && size == 1 {
		return false
	}
	b.WriteRune(r)
	return true
}

// twoCharOps maps two-byte operators to their tokens.
func twoCharOp(a, b byte) token.Token {
	switch string([]byte{a, b}) {
	case "->":
		return token.ARROW
	case "!=", "<>":
		return token.NEQ
	case "<=":
		return token.LTE
	case ">=":
		return token.GTE
	}
	return token.ILLEGAL
}

func oneCharOp(c byte) token.Token {
	switch c {
	case '+':
		return token.ADD
	case '-':
		return token.SUB
	case '*':
		return token.MUL
	case '/':
		return token.DIV
	case '%':
		return token.MOD
	case '&':
		return token.BITAND
	case '|':
		return token.BITOR
	case '^':
		return token.BITXOR
	case '.':
		return token.DOT
	case '=':
		return token.EQ
	case '<':
		return token.LT
	case '>':
		return token.GT
	case '(':
		return token.LPAREN
	case ')':
		return token.RPAREN
	case '[':
		return token.LBRACKET
	case ']':
		return token.RBRACKET
	case ',':
		return token.COMMA
	case ';':
		return token.SEMICOLON
	case ':':
		return token.COLON
	case '#':
		return token.HASH
	}
	return token.ILLEGAL
}

func (s *Scanner) scanOperator(r rune, size int) Item {
	if s.off+1 < len(s.src) {
		if tok := twoCharOp(s.src[s.off], s.src[s.off+1]); tok != token.ILLEGAL {
			lit := s.src[s.off : s.off+2]
			s.advance(2)
			return Item{Tok: tok, Lit: lit}
		}
	}
	if size == 1 {
		if tok := oneCharOp(s.src[s.off]); tok != token.ILLEGAL {
			lit := s.src[s.off : s.off+1]
			s.advance(1)
			return Item{Tok: tok, Lit: lit}
		}
	}
	s.advance(size)
	return Item{Tok: token.ILLEGAL, Lit: "unexpected character " + quoteRune(r)}
}

func quoteRune(r rune) string {
	return "'" + string(r) + "'"
}
