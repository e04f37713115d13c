package scanner

import (
	"testing"

	"github.com/rekuiper/rekuiper/internal/sql/token"
)

// tok is the part of an Item the table below spells out.
type tok struct {
	Tok  token.Token
	Lit  string
	Line int
	Col  int
}

func scanAll(src string) []Item {
	sc := New(src)
	var out []Item
	for {
		it := sc.Scan()
		out = append(out, it)
		if it.Tok == token.EOF || len(out) > 1000 {
			return out
		}
	}
}

func TestScan(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []tok
	}{
		{"keywords and idents", "select Foo from t", []tok{
			{token.SELECT, "select", 1, 1}, {token.IDENT, "Foo", 1, 8}, {token.FROM, "from", 1, 12}, {token.IDENT, "t", 1, 17}, {token.EOF, "", 1, 18}}},
		{"operators", "+ - * / % & | ^ -> . = != <> < <= > >= ( ) [ ] , ; : #", []tok{
			{token.ADD, "+", 1, 1}, {token.SUB, "-", 1, 3}, {token.MUL, "*", 1, 5}, {token.DIV, "/", 1, 7},
			{token.MOD, "%", 1, 9}, {token.BITAND, "&", 1, 11}, {token.BITOR, "|", 1, 13}, {token.BITXOR, "^", 1, 15},
			{token.ARROW, "->", 1, 17}, {token.DOT, ".", 1, 20}, {token.EQ, "=", 1, 22}, {token.NEQ, "!=", 1, 24},
			{token.NEQ, "<>", 1, 27}, {token.LT, "<", 1, 30}, {token.LTE, "<=", 1, 32}, {token.GT, ">", 1, 35},
			{token.GTE, ">=", 1, 37}, {token.LPAREN, "(", 1, 40}, {token.RPAREN, ")", 1, 42}, {token.LBRACKET, "[", 1, 44},
			{token.RBRACKET, "]", 1, 46}, {token.COMMA, ",", 1, 48}, {token.SEMICOLON, ";", 1, 50}, {token.COLON, ":", 1, 52},
			{token.HASH, "#", 1, 54}, {token.EOF, "", 1, 55}}},
		{"numbers", "1 12.5 1e3 2E-2 3.0e+1 7. 8.x", []tok{
			{token.INTEGER, "1", 1, 1}, {token.NUMBER, "12.5", 1, 3}, {token.NUMBER, "1e3", 1, 8}, {token.NUMBER, "2E-2", 1, 12},
			{token.NUMBER, "3.0e+1", 1, 17}, {token.INTEGER, "7", 1, 24}, {token.DOT, ".", 1, 25}, {token.INTEGER, "8", 1, 27},
			{token.DOT, ".", 1, 28}, {token.IDENT, "x", 1, 29}, {token.EOF, "", 1, 30}}},
		{"exponent needs digits", "1e 1e+", []tok{
			{token.INTEGER, "1", 1, 1}, {token.IDENT, "e", 1, 2}, {token.INTEGER, "1", 1, 4}, {token.IDENT, "e", 1, 5},
			{token.ADD, "+", 1, 6}, {token.EOF, "", 1, 7}}},
		{"strings", `"a\"b" 'c\'d' "\\\n\t\r" "\d" '"' "'"`, []tok{
			{token.STRING, `a"b`, 1, 1}, {token.STRING, "c'd", 1, 8}, {token.STRING, "\\\n\t\r", 1, 15},
			{token.STRING, `\d`, 1, 26}, {token.STRING, `"`, 1, 31}, {token.STRING, "'", 1, 35}, {token.EOF, "", 1, 38}}},
		{"quoted identifiers", "`select` `a b` `x\\`y` `p\\\\q` `r\\s`", []tok{
			{token.IDENT, "select", 1, 1}, {token.IDENT, "a b", 1, 10}, {token.IDENT, "x`y", 1, 16},
			{token.IDENT, `p\q`, 1, 23}, {token.IDENT, `r\s`, 1, 30}, {token.EOF, "", 1, 35}}},
		{"comments and lines", "a -- x\n\tb /* c\n d */ c--\n", []tok{
			{token.IDENT, "a", 1, 1}, {token.IDENT, "b", 2, 2}, {token.IDENT, "c", 3, 7}, {token.EOF, "", 4, 1}}},
		{"unicode identifier", "größe_1 ü", []tok{
			{token.IDENT, "größe_1", 1, 1}, {token.IDENT, "ü", 1, 11}, {token.EOF, "", 1, 13}}},
		{"time units and types", "ss MS string Bigint", []tok{
			{token.SS, "ss", 1, 1}, {token.MS, "MS", 1, 4}, {token.STRINGTYPE, "string", 1, 7}, {token.BIGINT, "Bigint", 1, 14}, {token.EOF, "", 1, 20}}},
		{"illegal characters", "!a $", []tok{
			{token.ILLEGAL, "unexpected character '!'", 1, 1}, {token.IDENT, "a", 1, 2},
			{token.ILLEGAL, "unexpected character '$'", 1, 4}, {token.EOF, "", 1, 5}}},
		{"unterminated string", `a "bc`, []tok{{token.IDENT, "a", 1, 1}, {token.ILLEGAL, "string literal not terminated", 1, 3}, {token.EOF, "", 1, 6}}},
		{"unterminated quoted identifier", "`bc\\`", []tok{{token.ILLEGAL, "quoted identifier not terminated", 1, 1}, {token.EOF, "", 1, 6}}},
		{"unterminated comment", "a /* b", []tok{{token.IDENT, "a", 1, 1}, {token.ILLEGAL, "comment not terminated", 1, 3}, {token.EOF, "", 1, 7}}},
		{"invalid utf8", "a \xff", []tok{{token.IDENT, "a", 1, 1}, {token.ILLEGAL, "invalid UTF-8 encoding", 1, 3}, {token.EOF, "", 1, 4}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := scanAll(tt.src)
			if len(got) != len(tt.want) {
				t.Fatalf("got %d tokens %+v, want %d", len(got), got, len(tt.want))
			}
			for i, it := range got {
				g := tok{it.Tok, it.Lit, it.Pos.Line, it.Pos.Col}
				if g != tt.want[i] {
					t.Errorf("token %d = %+v, want %+v", i, g, tt.want[i])
				}
			}
		})
	}
}

func TestScanOffsetsAndQuoting(t *testing.T) {
	src := "ab `c d` 12"
	got := scanAll(src)
	wantSpans := [][2]int{{0, 2}, {3, 8}, {9, 11}, {11, 11}}
	for i, w := range wantSpans {
		if got[i].Pos.Offset != w[0] || got[i].End != w[1] {
			t.Errorf("token %d span = [%d,%d), want [%d,%d)", i, got[i].Pos.Offset, got[i].End, w[0], w[1])
		}
	}
	if got[0].Quoted || !got[1].Quoted {
		t.Errorf("Quoted flags = %v, %v", got[0].Quoted, got[1].Quoted)
	}
	sc := New("")
	for i := 0; i < 3; i++ {
		if it := sc.Scan(); it.Tok != token.EOF {
			t.Fatalf("scan %d of empty input = %v", i, it.Tok)
		}
	}
}
