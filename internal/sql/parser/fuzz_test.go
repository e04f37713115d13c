package parser

import (
	"testing"
)

// fuzzSeeds are handwritten inputs that reach corners the corpus does not.
var fuzzSeeds = []string{
	"SELECT * EXCEPT(a, b) REPLACE(a + 1 AS a) FROM t",
	"SELECT s.*, -a, - -1, -1[0], NOT a IS NOT NULL FROM `a/b/#` AS x LEFT JOIN y ON x.a = y.a",
	"SELECT a FROM t GROUP BY STATEWINDOW(a > 1, a < 2) OVER (PARTITION BY k WHEN a > 0) FILTER (WHERE b)",
	"SELECT CASE WHEN a THEN 1 ELSE 2.5e3 END, a[1:], a[:2], a[], a->b.c FROM t WHERE a NOT BETWEEN 1 AND 2",
	"SELECT lag(a) OVER (PARTITION BY b ORDER BY c DESC WHEN d) FROM t ORDER BY a LIMIT 3;",
	"CREATE TABLE t (a ARRAY(STRUCT(b BIGINT DEFAULT -1, c ARRAY(STRING)))) WITH (KIND=\"lookup\", SHARED=TRUE)",
	"SHOW STREAMS",
	"DROP TABLE x;",
	"SELECT 'a\\'b\\n', \"\\\\\", `we\\`ird` FROM t -- comment\n/* block */",
	"SELECT 99999999999999999999, -9223372036854775808, a IN (1, 2), a IN b FROM t",
}

// FuzzParse asserts that the parser never panics and that whatever it
// accepts prints to SQL that parses again to an equal tree.
func FuzzParse(f *testing.F) {
	for _, s := range corpusSQL(f) {
		f.Add(s)
	}
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		stmt, err := ParseStatement(src)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		checkRoundTrip(t, src, stmt)
	})
}
