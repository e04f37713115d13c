package conformance

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rekuiper/rekuiper/internal/function"
)

// corpusDir finds the shared conformance corpus: $REKUIPER_CONFORMANCE, or
// ../shared/conformance/cases beside the repository.
func corpusDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("REKUIPER_CONFORMANCE"); d != "" {
		return d
	}
	d, err := filepath.Abs("../../../shared/conformance/cases")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d); err != nil {
		t.Skipf("conformance corpus not found at %s (set REKUIPER_CONFORMANCE)", d)
	}
	return d
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
