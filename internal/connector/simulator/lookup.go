package simulator

import (
	"context"

	"github.com/rekuiper/rekuiper/internal/connector"
)

// LookupSpec is the simulator lookup table's property spec: the rows of
// data are the table. interval and loop are declared (and checked as for
// the source) so that the simulator source's confKeys, which carry them
// (etc/sources/simulator.yaml's default section does), serve lookup tables
// too; a lookup table does not pace or end, it serves every row of data.
func LookupSpec() connector.Spec {
	props := []connector.Prop{{Name: "data", Type: connector.TypeList, Required: true, Doc: "the table's rows (objects)"}}
	for _, p := range Spec().Props {
		if p.Name == "interval" || p.Name == "loop" {
			p.Doc = "read by the simulator source; a lookup table serves every row of data at any time"
			props = append(props, p)
		}
	}
	return connector.Spec{Props: props}
}

// Lookup serves a lookup table from the fixed rows of data, as eKuiper's
// simulator lookup source does: a lookup returns copies of the rows whose
// fields equal every key (compared by text form, see connector.MatchKeys),
// in the order of data. It holds no connection and starts no goroutine; it
// is safe for concurrent use (the rows are never changed).
type Lookup struct {
	rows []map[string]any
}

var _ connector.LookupSource = (*Lookup)(nil)

// NewLookup builds a simulator lookup table from validated props; every
// element of data must be an object.
func NewLookup(props map[string]any, _ connector.Deps) (connector.LookupSource, error) {
	rows, err := objects(connector.Get[[]any](props, "data"))
	if err != nil {
		return nil, err
	}
	return &Lookup{rows: rows}, nil
}

// Connect does nothing: the rows are in memory.
func (l *Lookup) Connect(context.Context) error { return nil }

// Lookup returns copies of the rows whose fields equal keys.
func (l *Lookup) Lookup(_ context.Context, keys map[string]any) ([]map[string]any, error) {
	var out []map[string]any
	for _, r := range l.rows {
		if connector.MatchKeys(r, keys) {
			out = append(out, deepCopy(r).(map[string]any))
		}
	}
	return out, nil
}

// Close does nothing.
func (l *Lookup) Close(context.Context) error { return nil }
