package sdktest

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/api"
)

// Lookup describes the lookup source under test and the table it serves.
type Lookup struct {
	// New builds the lookup source from properties as the engine does: it
	// validates them against the spec, then calls the factory
	// (sdk.Registry.NewLookup does both).
	New func(props map[string]any) (api.LookupSource, error)
	// Props returns valid properties for a table that holds Want under
	// Key. It is called once per subtest; the test fills the table.
	Props func(t *testing.T) map[string]any
	// Key are the keys of a lookup that finds exactly the rows of Want, in
	// any order, with the Go types the source returns (int64, float64,
	// string, ...). Want holds at least one row.
	Key  map[string]any
	Want []map[string]any
	// Missing are keys no row matches; nil skips the check.
	Missing map[string]any
	// UnreachableProps are valid properties whose Connect (or, for a lazy
	// client, first Lookup) fails because no server is there; nil skips
	// the failed-connect check.
	UnreachableProps map[string]any
	// Invalid are configurations New must refuse; nil skips the check.
	Invalid []InvalidCase
}

// RunLookup runs the lookup source checks as subtests of t: OpenClose,
// CloseAfterFailedConnect, Found (Key finds Want), NoMatch (Missing finds
// no row and no error), RowsOwnedByCaller (changing the returned rows
// does not change what the next Lookup returns) and InvalidConfig.
func RunLookup(t *testing.T, f Lookup) {
	t.Helper()
	if f.New == nil || f.Props == nil || f.Key == nil || len(f.Want) == 0 {
		t.Fatal("sdktest: Lookup needs New, Props, Key and Want")
	}
	build := builder(f.New, "lookup source")
	lookup := func(t *testing.T, l api.LookupSource, keys map[string]any) []map[string]any {
		t.Helper()
		rows, err := l.Lookup(ctxTimeout(t, Timeout), keys)
		if err != nil {
			t.Fatalf("lookup %v: %v", keys, err)
		}
		return rows
	}
	found := func(t *testing.T, l api.LookupSource) []map[string]any {
		t.Helper()
		rows := lookup(t, l, f.Key)
		if problem := sameRows(rows, f.Want); problem != "" {
			t.Fatalf("lookup %v: %s", f.Key, problem)
		}
		return rows
	}

	t.Run("OpenClose", func(t *testing.T) { openClose(t, build(t, f.Props(t))) })
	t.Run("CloseAfterFailedConnect", func(t *testing.T) {
		closeAfterFailedConnect(t, build, f.UnreachableProps, "lookup", func(l api.LookupSource) error {
			_, err := l.Lookup(ctxTimeout(t, 10*time.Second), f.Key)
			return err
		})
	})
	t.Run("Found", func(t *testing.T) {
		found(t, connected(t, build(t, f.Props(t))))
	})
	t.Run("NoMatch", func(t *testing.T) {
		if f.Missing == nil {
			t.Skip("no missing key given")
		}
		if rows := lookup(t, connected(t, build(t, f.Props(t))), f.Missing); len(rows) != 0 {
			t.Fatalf("lookup %v found %v, want no row", f.Missing, rows)
		}
	})
	t.Run("RowsOwnedByCaller", func(t *testing.T) {
		l := connected(t, build(t, f.Props(t)))
		for _, r := range found(t, l) {
			for k := range r {
				r[k] = "changed by the caller"
			}
			r["sdktest_added"] = true
		}
		found(t, l)
	})
	t.Run("InvalidConfig", invalidConfig(f.New, f.Invalid))
}

// sameRows reports how got differs from want as a multiset of rows, or "".
func sameRows(got, want []map[string]any) string {
	if len(got) != len(want) {
		return fmt.Sprintf("found %d rows %v, want %d: %v", len(got), got, len(want), want)
	}
	used := make([]bool, len(got))
	for _, w := range want {
		match := -1
		for i, g := range got {
			if !used[i] && reflect.DeepEqual(g, w) {
				match = i
				break
			}
		}
		if match < 0 {
			return fmt.Sprintf("found %v, want %v (no row is %v)", got, want, w)
		}
		used[match] = true
	}
	return ""
}
