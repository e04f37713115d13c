// Package token defines the lexical tokens of the rekuiper SQL dialect
// (eKuiper v2 compatible) and their positions.
package token

import (
	"fmt"
	"strings"
)

// Token is a lexical token kind.
type Token int

const (
	ILLEGAL Token = iota
	EOF
	WS
	COMMENT

	literalBeg
	IDENT   // name or `quoted name`
	INTEGER // 123
	NUMBER  // 12.5, 1e3
	STRING  // "abc" or 'abc'
	literalEnd

	operatorBeg
	ADD    // +
	SUB    // -
	MUL    // *
	DIV    // /
	MOD    // %
	BITAND // &
	BITOR  // |
	BITXOR // ^
	ARROW  // ->
	DOT    // .

	AND // AND
	OR  // OR

	EQ  // =
	NEQ // != or <>
	LT  // <
	LTE // <=
	GT  // >
	GTE // >=

	IN      // IN
	NOTIN   // NOT IN
	BETWEEN // BETWEEN
	NOTBETWEEN
	LIKE    // LIKE
	NOTLIKE // NOT LIKE
	SUBSET  // [] index / slice (used as a binary op kind by the evaluator)
	operatorEnd

	LPAREN    // (
	RPAREN    // )
	LBRACKET  // [
	RBRACKET  // ]
	COMMA     // ,
	SEMICOLON // ;
	COLON     // :
	HASH      // # (only inside MQTT-topic-like stream names)

	keywordBeg
	SELECT
	FROM
	WHERE
	GROUP
	BY
	HAVING
	ORDER
	ASC
	DESC
	LIMIT
	AS
	FILTER
	OVER
	PARTITION
	WHEN
	THEN
	ELSE
	END
	CASE
	NOT
	IS
	NULL
	TRUE
	FALSE
	INNER
	LEFT
	RIGHT
	FULL
	CROSS
	JOIN
	ON
	REPLACE
	EXCEPT
	INVISIBLE
	CREATE
	STREAM
	STREAMS
	TABLE
	TABLES
	WITH
	DROP
	DESCRIBE
	EXPLAIN
	SHOW
	DEFAULT

	// Time unit keywords, valid as the first argument of a window function.
	DD
	HH
	MI
	SS
	MS

	// Column types of CREATE STREAM.
	BIGINT
	FLOAT
	STRINGTYPE
	DATETIME
	BOOLEAN
	BYTEA
	ARRAY
	STRUCT
	keywordEnd
)

var names = [...]string{
	ILLEGAL: "ILLEGAL", EOF: "EOF", WS: "WS", COMMENT: "COMMENT",
	IDENT: "IDENT", INTEGER: "INTEGER", NUMBER: "NUMBER", STRING: "STRING",
	ADD: "+", SUB: "-", MUL: "*", DIV: "/", MOD: "%", BITAND: "&", BITOR: "|", BITXOR: "^",
	ARROW: "->", DOT: ".", AND: "AND", OR: "OR",
	EQ: "=", NEQ: "!=", LT: "<", LTE: "<=", GT: ">", GTE: ">=",
	IN: "IN", NOTIN: "NOT IN", BETWEEN: "BETWEEN", NOTBETWEEN: "NOT BETWEEN",
	LIKE: "LIKE", NOTLIKE: "NOT LIKE", SUBSET: "[]",
	LPAREN: "(", RPAREN: ")", LBRACKET: "[", RBRACKET: "]", COMMA: ",", SEMICOLON: ";", COLON: ":", HASH: "#",
	SELECT: "SELECT", FROM: "FROM", WHERE: "WHERE", GROUP: "GROUP", BY: "BY", HAVING: "HAVING",
	ORDER: "ORDER", ASC: "ASC", DESC: "DESC", LIMIT: "LIMIT", AS: "AS", FILTER: "FILTER",
	OVER: "OVER", PARTITION: "PARTITION", WHEN: "WHEN", THEN: "THEN", ELSE: "ELSE", END: "END",
	CASE: "CASE", NOT: "NOT", IS: "IS", NULL: "NULL", TRUE: "TRUE", FALSE: "FALSE",
	INNER: "INNER", LEFT: "LEFT", RIGHT: "RIGHT", FULL: "FULL", CROSS: "CROSS", JOIN: "JOIN", ON: "ON",
	REPLACE: "REPLACE", EXCEPT: "EXCEPT", INVISIBLE: "INVISIBLE",
	CREATE: "CREATE", STREAM: "STREAM", STREAMS: "STREAMS", TABLE: "TABLE", TABLES: "TABLES",
	WITH: "WITH", DROP: "DROP", DESCRIBE: "DESCRIBE", EXPLAIN: "EXPLAIN", SHOW: "SHOW", DEFAULT: "DEFAULT",
	DD: "DD", HH: "HH", MI: "MI", SS: "SS", MS: "MS",
	BIGINT: "BIGINT", FLOAT: "FLOAT", STRINGTYPE: "STRING", DATETIME: "DATETIME", BOOLEAN: "BOOLEAN",
	BYTEA: "BYTEA", ARRAY: "ARRAY", STRUCT: "STRUCT",
}

// String returns the token's text form ("+", "SELECT") or its kind name.
func (t Token) String() string {
	if t >= 0 && int(t) < len(names) && names[t] != "" {
		return names[t]
	}
	return fmt.Sprintf("token(%d)", int(t))
}

// IsOperator reports whether t is a binary operator.
func (t Token) IsOperator() bool { return t > operatorBeg && t < operatorEnd }

// IsKeyword reports whether t is a keyword.
func (t Token) IsKeyword() bool { return t > keywordBeg && t < keywordEnd }

// Precedence returns the binding power of a binary operator; 0 for others.
// Levels follow eKuiper: OR < AND < comparison < additive/bitwise-or/xor <
// multiplicative/bitwise-and/access.
func (t Token) Precedence() int {
	switch t {
	case OR:
		return 1
	case AND:
		return 2
	case EQ, NEQ, LT, LTE, GT, GTE, IN, NOTIN, BETWEEN, NOTBETWEEN, LIKE, NOTLIKE:
		return 3
	case ADD, SUB, BITOR, BITXOR:
		return 4
	case MUL, DIV, MOD, BITAND, SUBSET, ARROW, DOT:
		return 5
	}
	return 0
}

var keywords = buildKeywords()

func buildKeywords() map[string]Token {
	m := make(map[string]Token)
	for t := keywordBeg + 1; t < keywordEnd; t++ {
		m[names[t]] = t
	}
	m["AND"] = AND
	m["OR"] = OR
	m["IN"] = IN
	m["BETWEEN"] = BETWEEN
	m["LIKE"] = LIKE
	return m
}

// Lookup returns the keyword token for an identifier (case-insensitive), or IDENT.
func Lookup(ident string) Token {
	if t, ok := keywords[strings.ToUpper(ident)]; ok {
		return t
	}
	return IDENT
}

// Pos is a position in the source text; Line and Col are 1-based, Offset is
// the 0-based byte offset.
type Pos struct {
	Offset int
	Line   int
	Col    int
}

// String formats the position as line:col.
func (p Pos) String() string { return fmt.Sprintf("%d:%d", p.Line, p.Col) }

// IsValid reports whether the position was set.
func (p Pos) IsValid() bool { return p.Line > 0 }
