package conformance

import (
	"testing"

	"github.com/rekuiper/rekuiper/internal/function"
)

// TestCorpusRestoreAtEveryEvent checkpoints each case after every event,
// restores the checkpoint into a fresh rule and finishes the replay: the
// emissions must equal those of the uninterrupted replay. This exercises the
// snapshot and restore of every stateful operator (windows of every kind,
// joins, tables, watermarks, analytic functions and rule counters) at every
// point of the corpus.
func TestCorpusRestoreAtEveryEvent(t *testing.T) {
	paths, err := Discover(corpusDir(t))
	if err != nil {
		t.Fatal(err)
	}
	documented, err := DocumentedQuirks("../../docs/compatibility.md")
	if err != nil {
		t.Fatal(err)
	}
	funcs := function.Builtins()
	cuts := 0
	for _, path := range paths {
		c, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if c.Skip != "" {
			continue
		}
		variant := c.Rule.Options
		if len(c.OptionVariants) > 0 {
			variant = c.OptionVariants[len(c.OptionVariants)-1]
		}
		t.Run(c.ID(), func(t *testing.T) {
			want, err := Replay(c, variant, funcs)
			if err != nil {
				// A rule rekuiper refuses at creation (where eKuiper fails
				// per row) has nothing to restore; it must be documented.
				if !documented[c.ID()] {
					t.Fatalf("uninterrupted replay: %v", err)
				}
				return
			}
			for cut := range c.Timeline {
				got, err := ReplayWithRestart(c, variant, funcs, cut)
				if err != nil {
					t.Fatalf("restart after event %d: %v", cut, err)
				}
				cuts++
				if m, _ := Compare(AsExpected(want), got); m != nil {
					t.Fatalf("restart after event %d changed the output: %v", cut, m)
				}
			}
		})
	}
	t.Logf("%d restarts compared", cuts)
}
