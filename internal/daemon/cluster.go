package daemon

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/checkpoint"
	"github.com/rekuiper/rekuiper/internal/cluster"
	"github.com/rekuiper/rekuiper/internal/config"
	"github.com/rekuiper/rekuiper/internal/engine"
	"github.com/rekuiper/rekuiper/internal/guard"
	"github.com/rekuiper/rekuiper/internal/rule"
	"github.com/rekuiper/rekuiper/internal/rulemgr"
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

// newMembership describes this node; with a shared store it beats there,
// at least three times per lease time, so that a node reads as unhealthy
// by the time its leases expire.
func newMembership(cfg *config.Config, store catalog.Store, nodeID, version string, logger *slog.Logger) *cluster.Membership {
	mc := cluster.Config{
		ID: nodeID, Version: version, Logger: logger,
		Address:   net.JoinHostPort(cfg.Basic.RestIP, strconv.Itoa(cfg.Basic.RestPort)),
		Heartbeat: min(cluster.DefaultHeartbeat, cfg.Cluster.LeaseTime.Std()/3),
	}
	if b, ok := store.(cluster.Beater); ok {
		mc.Store = b
	}
	return cluster.New(mc)
}

// newPlacer returns, for a shared catalog, the placer that decides which
// rules this node runs; nil for a catalog of this node alone.
func newPlacer(cfg *config.Config, store catalog.Store, cat *catalog.Catalog, members *cluster.Membership, tasks *cluster.Tasks, logger *slog.Logger) *cluster.Placer {
	ls, ok := store.(catalog.Leaser)
	if !ok {
		return nil
	}
	var unshared func(context.Context, string)
	if tasks != nil {
		unshared = tasks.EndWholeSessions
	}
	return cluster.NewPlacer(cluster.PlacerConfig{
		Node: members.ID(), Store: ls, Members: members, LeaseTime: cfg.Cluster.LeaseTime.Std(), Logger: logger, Unshared: unshared,
		Wanted: func() []string {
			var ids []string
			for _, r := range cat.Rules() {
				if r.State == catalog.RuleRunning {
					ids = append(ids, r.ID)
				}
			}
			if tasks != nil {
				ids = tasks.Expand(context.Background(), ids)
			}
			return ids
		},
	})
}

// newTasks returns, for a shared catalog, what runs the tasks of
// partitioned rules on this node; nil otherwise.
func newTasks(store catalog.Store, cat *catalog.Catalog, eng *engine.Engine, nodeID string, defaults rule.Options, logger *slog.Logger) *cluster.Tasks {
	if _, shared := store.(catalog.Leaser); !shared {
		return nil
	}
	return cluster.NewTasks(cluster.TasksConfig{
		Node: nodeID, Runner: eng, Split: eng.Split, EndSessions: eng.EndSessions, Logger: logger,
		Rule: func(id string) ([]byte, error) {
			r, err := cat.Rule(id)
			return r.Definition, err
		},
		Parse: func(raw []byte) (*rule.Def, error) { return rule.ParseDef(raw, defaults) },
	})
}

// placement is placer as the rule manager's Placement: nil without one.
func placement(placer *cluster.Placer, tasks *cluster.Tasks) rulemgr.Placement {
	switch {
	case placer == nil:
		return nil
	case tasks != nil:
		return cluster.NewSplitPlacement(placer, tasks)
	}
	return placer
}

// placed is what the placer starts and stops: the rule manager's rules,
// and the tasks of split rules when there are any.
func placed(mgr *rulemgr.Manager, tasks *cluster.Tasks) cluster.RuleRunner {
	if tasks == nil {
		return mgr
	}
	return cluster.Router{Rules: mgr, Tasks: tasks}
}

// removeTaskData removes what the tasks of rule id left in the data
// folder (data/rule_<id>#p<n>, data/cache/<id>#p<n>, and #r<n> for the
// tasks of its repartitioning stage).
func removeTaskData(dataDir, id string) error {
	if dataDir == "" {
		return nil
	}
	// Task ids are never valid names, so PathElem encodes them byte by
	// byte and the prefix of every task of id is the encoded prefix.
	prefix := guard.PathElem(rule.TaskPrefix(id))
	var errs []error
	for _, pat := range []string{filepath.Join(dataDir, "rule_"+prefix+"*"), filepath.Join(dataDir, "cache", prefix+"*")} {
		dirs, _ := filepath.Glob(pat)
		for _, d := range dirs {
			errs = append(errs, os.RemoveAll(d))
		}
	}
	return errors.Join(errs...)
}

// runCluster starts, for a shared catalog, the heartbeat and the goroutine
// that applies other nodes' catalog writes to memory and hands their rule
// changes to the rule manager; the returned func stops both and waits for
// them.
func runCluster(ctx context.Context, cat *catalog.Catalog, members *cluster.Membership, mgr *rulemgr.Manager, placer *cluster.Placer, tasks *cluster.Tasks, logger *slog.Logger) func() {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { members.Run(ctx) })
	wg.Go(func() {
		err := cat.Follow(ctx, catalog.FollowOptions{Logger: logger, OnChange: func(ch catalog.Change) {
			logger.Debug("catalog changed on another node", "kind", ch.Kind, "key", strings.Join(ch.Key, "/"), "deleted", ch.Deleted, "version", ch.Version)
			if ch.Kind != catalog.ChangeRule {
				return
			}
			if ch.Deleted {
				mgr.AdoptDelete(ch.Key[0])
			} else if r, err := cat.Rule(ch.Key[0]); err == nil {
				mgr.Adopt(r)
			}
			if tasks != nil {
				tasks.Changed(ch.Key[0])
			}
			if placer != nil {
				placer.Kick()
			}
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

// runPlacer runs placer, if any, on a context of its own: the returned
// func, called once the rules stopped, ends it (giving up its leases) and
// waits. It may be called more than once.
func runPlacer(ctx context.Context, placer *cluster.Placer, rules cluster.RuleRunner) func() {
	if placer == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		placer.Run(ctx, rules)
	}()
	return func() {
		cancel()
		<-done
	}
}

// newClusterRole returns, for a shared catalog that keeps checkpoints,
// how the engine takes part in the cluster: the rules' checkpoints in the
// shared database, written under the rule's lease (lease, fenced by the
// database), so that the node that takes a rule over restores its state
// and rewinds its sources. Nil for a catalog of this node alone.
func newClusterRole(store catalog.Store, cfg *config.Config, nodeID string, lease func(ruleID string) (string, int64, error), logger *slog.Logger) *clusterRole {
	_, leases := store.(catalog.Leaser)
	cs, isCS := store.(catalog.CheckpointStore)
	if !leases || !isCS {
		return nil
	}
	scope := "rekuiper-cluster"
	if w, ok := store.(interface{ Database() string }); ok {
		scope += "-" + w.Database()
	}
	return &clusterRole{
		checkpoints: &checkpoint.Shared{Backend: cs, Lease: lease, Logger: logger, Timeout: cfg.Cluster.LeaseTime.Std() / 3},
		node:        nodeID,
		scope:       scope,
	}
}

// dropSharedCheckpoints removes a deleted rule's checkpoints from the
// shared database; not when the rule exists again (re-created since).
func dropSharedCheckpoints(ctx context.Context, store catalog.Store, cat *catalog.Catalog, id string, logger *slog.Logger) {
	cs, ok := store.(catalog.CheckpointStore)
	if !ok {
		return
	}
	if _, err := cat.Rule(id); !errors.Is(err, catalog.ErrNotFound) {
		return
	}
	if err := cs.DeleteCheckpoints(ctx, id); err != nil {
		logger.Warn("remove the checkpoints of a deleted rule", "rule", id, "err", err)
	}
}
