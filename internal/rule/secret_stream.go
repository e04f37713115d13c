package rule

import (
	"slices"

	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/sql/parser"
	"github.com/rekuiper/rekuiper/internal/sql/scanner"
	"github.com/rekuiper/rekuiper/internal/sql/token"
)

// MaskStreamSQL returns the CREATE STREAM or CREATE TABLE statement sql
// with its secrets masked: what MaskText finds anywhere in it (WITH
// options, literals, comments), and the DEFAULT string of every column
// whose name is secret (IsSecretKey) or that lies inside a STRUCT column
// whose name is. A statement that does not parse is masked by MaskText
// alone. It is idempotent, and the statement shown is what RestoreText
// compares with (pass MaskStreamSQL as its mask).
func MaskStreamSQL(sql string) string {
	st, err := parser.ParseStatement(sql)
	cs, ok := st.(*ast.CreateStreamStmt)
	if err != nil || !ok {
		return MaskText(sql)
	}
	var at []int
	secretDefaults(cs.Fields, false, &at)
	slices.Sort(at)
	for _, off := range slices.Backward(at) {
		it := scanner.New(sql[off:]).Scan()
		if it.Tok != token.STRING {
			continue
		}
		q := sql[off : off+1]
		sql = sql[:off] + q + MaskedValue + q + sql[off+it.End:]
	}
	return MaskText(sql)
}

// secretDefaults appends the offsets of the non-empty DEFAULT strings of
// the secret columns among fields; secret says they lie inside a secret
// column.
func secretDefaults(fields []ast.StreamField, secret bool, at *[]int) {
	for _, f := range fields {
		s := secret || IsSecretKey(f.Name)
		if lit, ok := f.Default.(*ast.StringLit); ok && s && lit.Val != "" {
			*at = append(*at, lit.P.Offset)
		}
		for t := f.Type; t != nil; t = t.Elem {
			secretDefaults(t.Fields, s, at)
		}
	}
}

// MaskDefault prints the DEFAULT literal e of a column with its secrets
// masked: the whole string when the column is secret (see MaskStreamSQL),
// else what MaskText finds in it. It is "" for no default.
func MaskDefault(e ast.Expr, secret bool) string {
	if e == nil {
		return ""
	}
	if lit, ok := e.(*ast.StringLit); ok {
		if secret && lit.Val != "" {
			return ast.QuoteString(MaskedValue)
		}
		if m := MaskText(lit.Val); m != lit.Val {
			return ast.QuoteString(m)
		}
	}
	return e.String()
}
