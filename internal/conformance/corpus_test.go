package conformance

import (
	"os"
	"testing"

	"github.com/rekuiper/rekuiper/internal/function"
)

// corpusDir is the conformance corpus, testdata: the cases taken from
// eKuiper's rule tests and authored for rekuiper (testdata/cases) and those
// differential testing found (testdata/differential), all with eKuiper's
// outputs. $REKUIPER_CONFORMANCE replays another set (a held-out one, say)
// the same way.
func corpusDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("REKUIPER_CONFORMANCE"); d != "" {
		return d
	}
	return "testdata"
}

func TestCorpus(t *testing.T) {
	dir := corpusDir(t)
	paths, err := Discover(dir)
	if err != nil {
		t.Fatal(err)
	}
	documented, err := DocumentedQuirks("../../docs/compatibility.md")
	if err != nil {
		t.Fatal(err)
	}
	r := &Runner{Funcs: function.Builtins(), Documented: documented}
	var all []Result
	for _, p := range paths {
		c, err := Load(p)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(c.ID(), func(t *testing.T) {
			results := r.RunCase(c)
			all = append(all, results...)
			for _, res := range results {
				switch res.Verdict {
				case Skipped:
					t.Skip(c.Skip)
				case Fail:
					t.Errorf("variant %d %v: %v", res.Variant, c.OptionVariants[res.Variant], res.Err)
				case QuirkDiffers, Disputed:
					t.Logf("%s (documented in docs/compatibility.md): %v", res.Verdict, res.Err)
				}
			}
		})
	}
	t.Log(Summarize(all))
}
