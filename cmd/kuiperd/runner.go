package main

import (
	"context"
	"errors"
	"log/slog"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/config"
	"github.com/rekuiper/rekuiper/internal/rule"
	"github.com/rekuiper/rekuiper/internal/rulemgr"
)

// errNoEngine is what every rule start reports until the engine is wired.
var errNoEngine = errors.New("no engine wired: this kuiperd build cannot run rules yet")

// newRunner builds the rule runner. This stub accepts every rule on
// validation and fails every start with errNoEngine; the engine glue
// replaces it.
func newRunner(cfg *config.Config, cat *catalog.Catalog, logger *slog.Logger) (rulemgr.Runner, func(), error) {
	return stubRunner{}, func() {}, nil
}

type stubRunner struct{}

func (stubRunner) Validate(ctx context.Context, def *rule.Def) error { return nil }

func (stubRunner) Start(ctx context.Context, def *rule.Def) (rulemgr.Running, error) {
	return nil, errNoEngine
}
