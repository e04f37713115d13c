package app

import (
	"context"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/cluster"
	"github.com/rekuiper/rekuiper/internal/config"
)

// openCatalog opens the store basic.catalog names: the SQLite file in the
// data folder when it is empty, else the PostgreSQL database of its URL.
func openCatalog(ctx context.Context, cfg *config.Config, logger *slog.Logger) (catalog.Store, error) {
	if !cfg.Basic.Catalog.Postgres() {
		return catalog.Open(ctx, cfg.SqlitePath(), catalog.Options{})
	}
	return catalog.OpenPostgres(ctx, string(cfg.Basic.Catalog), catalog.PostgresOptions{Logger: logger})
}

// catalogName is the catalog for log lines: the SQLite file or the masked
// PostgreSQL URL.
func catalogName(cfg *config.Config) string {
	if cfg.Basic.Catalog.Postgres() {
		return cfg.Basic.Catalog.Masked()
	}
	return cfg.SqlitePath()
}

// newMembership describes this node; with a shared store it beats there.
func newMembership(cfg *config.Config, store catalog.Store, nodeID, version string, logger *slog.Logger) *cluster.Membership {
	mc := cluster.Config{
		ID: nodeID, Version: version, Logger: logger,
		Address: net.JoinHostPort(cfg.Basic.RestIP, strconv.Itoa(cfg.Basic.RestPort)),
	}
	if b, ok := store.(cluster.Beater); ok {
		mc.Store = b
	}
	return cluster.New(mc)
}

// runCluster starts, for a shared catalog, the heartbeat and the goroutine
// that applies other nodes' catalog writes to memory; the returned func
// stops both and waits for them. Other nodes' rule changes are logged: the
// rule manager does not act on them yet (rules are not placed on nodes).
func runCluster(ctx context.Context, cat *catalog.Catalog, members *cluster.Membership, logger *slog.Logger) func() {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { members.Run(ctx) })
	wg.Go(func() {
		err := cat.Follow(ctx, catalog.FollowOptions{Logger: logger, OnChange: func(ch catalog.Change) {
			logger.Info("catalog changed on another node", "kind", ch.Kind, "key", strings.Join(ch.Key, "/"), "deleted", ch.Deleted, "version", ch.Version)
		}})
		if err != nil {
			logger.Error("following the shared catalog stopped", "err", err)
		}
	})
	return func() {
		cancel()
		wg.Wait()
	}
}
