package operator

import (
	"fmt"

	"github.com/rekuiper/rekuiper/internal/eval"
	"github.com/rekuiper/rekuiper/internal/row"
)

// Analytic evaluates every analytic function call of a rule for each tuple,
// before WHERE, so that functions such as lag() see every row of the stream
// whether or not it passes the filter. Results are cached on the tuple and
// read by later operators.
type Analytic struct {
	Sites []*eval.AnalyticSite
	Store *eval.AnalyticStore
}

func (a *Analytic) Name() string { return "analytic" }

func (a *Analytic) Process(ctx *Context, it Item, emit Emit) error {
	if it.Kind != Data || it.Tuples == nil || it.Input > 0 {
		forward(it, emit)
		return nil
	}
	out := make([]*row.Tuple, 0, len(it.Tuples))
	var firstErr error
	for _, t := range it.Tuples {
		ec := evalCtx(ctx, t)
		var err error
		for _, s := range a.Sites {
			if _, err = s.Eval(ec); err != nil {
				break
			}
		}
		if err != nil {
			emitError(ctx, fmt.Errorf("run Analytic error: %w", err), emit)
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		out = append(out, t)
	}
	if len(out) > 0 {
		emit(Item{Kind: Data, Tuples: out})
	}
	return reported(firstErr)
}
