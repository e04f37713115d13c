package differential

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/rekuiper/rekuiper/internal/conformance"
	"github.com/rekuiper/rekuiper/internal/function"
)

// recordedDir holds a seeded generator run with eKuiper's outputs
// (kuiperdiff -seed 1 -n 200); TestCorpus replays its cases like the rest
// of the corpus.
const recordedDir = "../testdata/generated"

// TestSeededRunMatchesRecording regenerates the recorded run and checks
// that every case is either recorded with the same streams, SQL, options
// and inputs (so the recorded eKuiper outputs are those of the cases the
// generator makes now) or listed as refused by eKuiper; then it replays
// the recorded cases through rekuiper: each must match eKuiper or be a
// difference docs/compatibility.md lists.
func TestSeededRunMatchesRecording(t *testing.T) {
	var idx struct {
		Seed    uint64            `json:"seed"`
		Cases   int               `json:"cases"`
		Refused map[string]string `json:"refused_by_ekuiper"`
	}
	data, err := os.ReadFile(filepath.Join(recordedDir, "INDEX.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &idx); err != nil {
		t.Fatal(err)
	}
	documented, err := conformance.DocumentedQuirks("../../../docs/compatibility.md")
	if err != nil {
		t.Fatal(err)
	}
	funcs := function.Builtins()
	g := NewGenerator(idx.Seed)
	recorded, same, known := 0, 0, 0
	for range idx.Cases {
		c := g.Case()
		rec, err := conformance.Load(filepath.Join(recordedDir, c.Suite, c.Name+".json"))
		if errors.Is(err, fs.ErrNotExist) {
			if _, ok := idx.Refused[c.ID()]; !ok {
				t.Errorf("%s is neither recorded nor listed as refused by eKuiper: re-record the run (docs/compatibility.md)", c.ID())
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		recorded++
		if rec.Rule.SQL != c.Rule.SQL || !reflect.DeepEqual(rec.Streams, c.Streams) || !reflect.DeepEqual(rec.Inputs, c.Inputs) ||
			!reflect.DeepEqual(rec.Timeline, c.Timeline) || !reflect.DeepEqual(rec.Rule.Options, c.Rule.Options) {
			t.Fatalf("%s: the generator no longer makes the recorded case (SQL %q, recorded %q): re-record the run", c.ID(), c.Rule.SQL, rec.Rule.SQL)
		}
		switch o := Check(rec, funcs); {
		case o.Kind == Same:
			same++
		case documented[c.ID()]:
			known++
		default:
			t.Errorf("%s differs from eKuiper and is not listed in docs/compatibility.md: %s\n  rule: %s", c.ID(), o.Detail, c.Rule.SQL)
		}
	}
	if recorded+len(idx.Refused) != idx.Cases {
		t.Errorf("%d recorded and %d refused cases, want %d in all", recorded, len(idx.Refused), idx.Cases)
	}
	t.Logf("seed %d: %d cases, %d recorded: %d same as eKuiper, %d listed differences", idx.Seed, idx.Cases, recorded, same, known)
}
