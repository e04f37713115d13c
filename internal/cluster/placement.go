package cluster

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/rule"
)

// DefaultLeaseTime is how long a rule lease lasts unrenewed by default.
const DefaultLeaseTime = 10 * time.Second

// ErrFenced: this node no longer holds the rule's current lease, so what
// it was about to commit must not be committed.
var ErrFenced = errors.New("fenced: this node no longer holds the rule's lease")

// RuleRunner is the rule manager's side of placement (rulemgr.Manager).
type RuleRunner interface {
	// Place: this node acquired the rule's lease; start it if wanted.
	Place(id string)
	// Unplace stops the rule (draining within ctx) and returns once it
	// stopped; its wanted state is unchanged.
	Unplace(ctx context.Context, id string) error
	// Summary is the rule's local status, published with its lease.
	Summary(id string) (catalog.RuleSummary, bool)
}

// PlacerConfig configures a Placer.
type PlacerConfig struct {
	// Node is this node's id.
	Node  string
	Store catalog.Leaser
	// Members lists the healthy nodes the rules are shared among.
	Members *Membership
	// Wanted returns the ids of the rules wanted running.
	Wanted func() []string
	// Unshared, when set, is called on each pass for every rule whose
	// copy this node holds while no node holds a live lease on the whole
	// rule (so that no node runs it whole any more).
	Unshared func(ctx context.Context, rule string)
	// LeaseTime is the lease duration. Default DefaultLeaseTime.
	LeaseTime time.Duration
	Clock     clock.Clock
	Logger    *slog.Logger
}

// Placer decides which rules this node runs when several daemons share a
// PostgreSQL catalog, with one lease row per rule (catalog.Leaser). Each
// rule wanted running is leased to one node at a time; a node takes free
// or expired leases while it holds fewer than its fair share (the number
// of rules wanted running over the number of healthy nodes, rounded up)
// and gives up, after stopping the rule, those above its share, so that a
// node that joins gets work. The copies of spread rules are pinned: a
// node takes the lease of its own copy ("<rule>#n<node>") whatever its
// share, never another node's, and they do not count in the share. Leases are renewed every third of the lease
// time; a lease this node could not renew is given up, and its rule
// stopped, a sixth of the lease time before the database lets it expire.
//
// It implements rulemgr.Placement. Its methods are safe for concurrent
// use.
type Placer struct {
	cfg    PlacerConfig
	margin time.Duration
	kick   chan struct{}

	mu     sync.Mutex
	held   map[string]*lease
	remote map[string]catalog.Lease
	sent   map[string]catalog.RuleSummary // summaries as last published
	// healthy lists the healthy nodes, this one included, as of the last
	// pass.
	healthy []string
	failed  bool // the last store call failed (logged once)
}

type lease struct {
	token int64
	// until is when, by the local clock, the lease may have expired in
	// the database: the send time of its last grant or renewal plus the
	// lease time.
	until time.Time
	// releasing: the rule is being stopped before the lease is given up.
	releasing bool
}

// NewPlacer returns a Placer; Run places.
func NewPlacer(cfg PlacerConfig) *Placer {
	if cfg.LeaseTime <= 0 {
		cfg.LeaseTime = DefaultLeaseTime
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Wall{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Placer{
		cfg: cfg, margin: cfg.LeaseTime / 6, kick: make(chan struct{}, 1),
		held: map[string]*lease{}, remote: map[string]catalog.Lease{}, sent: map[string]catalog.RuleSummary{},
	}
}

// Holds reports whether this node holds rule id's lease and may run it.
func (p *Placer) Holds(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.held[id]
	return l != nil && !l.releasing && p.cfg.Clock.Now().Before(l.until.Add(-p.margin))
}

// Remote returns the node holding rule id's lease and the status it
// published, as of the last placement pass; ok is false when this node
// or no node holds it.
func (p *Placer) Remote(id string) (string, catalog.RuleSummary, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held[id] != nil {
		return "", catalog.RuleSummary{}, false
	}
	l, ok := p.remote[id]
	if !ok || !l.Live || l.Node == p.cfg.Node {
		return "", catalog.RuleSummary{}, false
	}
	return l.Node, l.Summary, true
}

// Kick asks for a placement pass now; it does not wait.
func (p *Placer) Kick() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// Fence checks, before a rule commits a checkpoint, that this node still
// holds the rule's lease with the token it was granted: locally, then in
// the database. It returns ErrFenced when not, or the store's error.
func (p *Placer) Fence(ctx context.Context, id string) error {
	p.mu.Lock()
	l := p.held[id]
	var token int64
	ok := l != nil && p.cfg.Clock.Now().Before(l.until)
	if ok {
		token = l.token
	}
	p.mu.Unlock()
	if !ok {
		return fmt.Errorf("rule %s: %w", id, ErrFenced)
	}
	cur, err := p.cfg.Store.LeaseCurrent(ctx, id, p.cfg.Node, token)
	if err != nil {
		return fmt.Errorf("rule %s: check lease: %w", id, err)
	}
	if !cur {
		return fmt.Errorf("rule %s: %w", id, ErrFenced)
	}
	return nil
}

// Run places rules until ctx ends: it renews this node's leases, stops
// the rules of leases it cannot renew in time, and balances. When ctx ends
// it gives up the leases it holds, so the caller cancels ctx only once the
// rules stopped. The caller owns the goroutine.
func (p *Placer) Run(ctx context.Context, rules RuleRunner) {
	var wg sync.WaitGroup
	wg.Go(func() { p.renewLoop(ctx, rules, &wg) })
	wg.Go(func() { p.fenceLoop(ctx, rules, &wg) })
	for {
		p.balance(ctx, rules)
		if !p.wait(ctx, p.cfg.LeaseTime/3) {
			break
		}
	}
	wg.Wait()
	p.releaseAll()
}

// wait sleeps d or until kicked; false when ctx ended.
func (p *Placer) wait(ctx context.Context, d time.Duration) bool {
	tick := make(chan struct{})
	t := p.cfg.Clock.AfterFunc(d, func() { close(tick) })
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-p.kick:
	case <-tick:
	}
	return true
}

// renewLoop renews the held leases every third of the lease time (every
// tenth after a failure); fenceLoop stops the rules of those it could not
// renew in time.
func (p *Placer) renewLoop(ctx context.Context, rules RuleRunner, wg *sync.WaitGroup) {
	step := max(p.cfg.LeaseTime/10, 10*time.Millisecond)
	next := p.cfg.Clock.Now()
	for {
		now := p.cfg.Clock.Now()
		if !now.Before(next) {
			next = now.Add(step)
			if p.renew(ctx, rules, wg) {
				next = now.Add(p.cfg.LeaseTime / 3)
			}
		}
		if !clock.Sleep(ctx, p.cfg.Clock, step) {
			return
		}
	}
}

// renew extends every held lease and publishes the changed summaries; it
// reports whether the store answered.
func (p *Placer) renew(ctx context.Context, rules RuleRunner, wg *sync.WaitGroup) bool {
	p.mu.Lock()
	tokens := make(map[string]int64, len(p.held))
	sent := map[string]catalog.RuleSummary{}
	for id, l := range p.held {
		tokens[id] = l.token
		if !l.releasing {
			sent[id] = p.sent[id]
		}
	}
	p.mu.Unlock()
	if len(tokens) == 0 {
		return true
	}
	sums := map[string]catalog.RuleSummary{}
	for id, prev := range sent {
		if s, ok := rules.Summary(id); ok && s != prev {
			sums[id] = s
		}
	}
	start := p.cfg.Clock.Now()
	rctx, cancel := context.WithTimeout(ctx, p.cfg.LeaseTime/3)
	got, err := p.cfg.Store.RenewLeases(rctx, p.cfg.Node, p.cfg.LeaseTime, tokens, sums)
	cancel()
	if !p.storeOK(err) {
		return false
	}
	var lost []string
	p.mu.Lock()
	for id, tok := range tokens {
		l := p.held[id]
		if l == nil || l.token != tok {
			continue
		}
		if got[id] != tok {
			delete(p.held, id)
			delete(p.sent, id)
			lost = append(lost, id)
			continue
		}
		l.until = start.Add(p.cfg.LeaseTime)
		if s, ok := sums[id]; ok {
			p.sent[id] = s
		}
	}
	p.mu.Unlock()
	for _, id := range lost {
		p.cfg.Logger.Warn("lease of rule lost to another node; stopping it here", "rule", id)
		p.unplace(ctx, rules, id, p.margin, wg)
	}
	return true
}

// fenceLoop fences the leases that were not renewed in time. It runs on
// its own: a renewal that hangs on an unreachable database (up to a third
// of the lease time per try) must not delay the fencing past the lease's
// expiry, when another node may take the rule.
func (p *Placer) fenceLoop(ctx context.Context, rules RuleRunner, wg *sync.WaitGroup) {
	step := max(p.margin/5, 5*time.Millisecond)
	for {
		p.fenceExpired(ctx, p.cfg.Clock.Now(), rules, wg)
		if !clock.Sleep(ctx, p.cfg.Clock, step) {
			return
		}
	}
}

// fenceExpired gives up the leases that may expire within the margin
// without having been renewed, and stops their rules at once.
func (p *Placer) fenceExpired(ctx context.Context, now time.Time, rules RuleRunner, wg *sync.WaitGroup) {
	var fenced []string
	p.mu.Lock()
	for id, l := range p.held {
		if !now.Before(l.until.Add(-p.margin)) {
			delete(p.held, id)
			delete(p.sent, id)
			fenced = append(fenced, id)
		}
	}
	p.mu.Unlock()
	for _, id := range fenced {
		p.cfg.Logger.Error("lease of rule not renewed in time (database unreachable, or this node too short of CPU to renew it?); stopping the rule here", "rule", id)
		p.unplace(ctx, rules, id, p.margin, wg)
	}
}

// unplace stops rule id in the background, within d.
func (p *Placer) unplace(ctx context.Context, rules RuleRunner, id string, d time.Duration, wg *sync.WaitGroup) {
	wg.Go(func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d)
		defer cancel()
		if err := rules.Unplace(sctx, id); err != nil {
			p.cfg.Logger.Warn("stop rule after losing its lease", "rule", id, "err", err)
		}
	})
}

// storeOK logs the first of a run of store failures and the recovery.
func (p *Placer) storeOK(err error) bool {
	p.mu.Lock()
	was := p.failed
	p.failed = err != nil
	p.mu.Unlock()
	switch {
	case err != nil && !was:
		p.cfg.Logger.Warn("rule placement: database call failed; retrying", "err", err)
	case err == nil && was:
		p.cfg.Logger.Info("rule placement: database reachable again")
	}
	return err == nil
}

// balance is one placement pass: give up the leases of rules no longer
// wanted running and those above the fair share, then take free or
// expired leases up to it.
func (p *Placer) balance(ctx context.Context, rules RuleRunner) {
	qctx, cancel := context.WithTimeout(ctx, p.cfg.LeaseTime/3)
	defer cancel()
	leases, err := p.cfg.Store.Leases(qctx)
	if !p.storeOK(err) {
		return
	}
	nodes, err := p.cfg.Members.Nodes(qctx)
	if !p.storeOK(err) {
		return
	}
	byRule := make(map[string]catalog.Lease, len(leases))
	for _, l := range leases {
		byRule[l.Rule] = l
	}
	live := []string{p.cfg.Node}
	for _, n := range nodes {
		if n.Healthy && n.ID != p.cfg.Node {
			live = append(live, n.ID)
		}
	}
	slices.Sort(live)
	p.mu.Lock()
	p.remote, p.healthy = byRule, live
	p.mu.Unlock()
	healthy := len(live)
	all := p.cfg.Wanted()
	slices.Sort(all)
	for _, id := range p.mine(true) {
		if _, ok := slices.BinarySearch(all, id); !ok {
			p.release(ctx, rules, id)
		}
	}
	var wanted []string
	for _, id := range all {
		switch _, node, ok := rule.ParseCopyID(id); {
		case !ok:
			wanted = append(wanted, id)
		case node == p.cfg.Node:
			if !p.take(qctx, rules, byRule, id) {
				return
			}
		}
	}
	if p.cfg.Unshared != nil {
		for _, id := range p.mine(true) {
			r, node, ok := rule.ParseCopyID(id)
			if l, whole := byRule[r]; ok && node == p.cfg.Node && (!whole || !l.Live) {
				p.cfg.Unshared(qctx, r)
			}
		}
	}
	share := (len(wanted) + healthy - 1) / healthy
	for mine := p.mine(false); len(mine) > share; mine = mine[:len(mine)-1] {
		p.cfg.Logger.Info("giving up a rule above this node's share", "rule", mine[len(mine)-1], "share", share)
		p.release(ctx, rules, mine[len(mine)-1])
	}
	// Nodes start at different rules, so that they rarely race for one.
	h := fnv.New32a()
	h.Write([]byte(p.cfg.Node))
	off := 0
	if len(wanted) > 0 {
		off = int(h.Sum32() % uint32(len(wanted)))
	}
	for i := range wanted {
		if len(p.mine(false)) >= share {
			break
		}
		if !p.take(qctx, rules, byRule, wanted[(off+i)%len(wanted)]) {
			return
		}
	}
}

// take acquires the lease of rule id, unless this node holds it or another
// node holds it live, and starts the rule; false when the store failed.
func (p *Placer) take(ctx context.Context, rules RuleRunner, byRule map[string]catalog.Lease, id string) bool {
	if l, ok := byRule[id]; ok && l.Live && l.Node != p.cfg.Node {
		return true
	}
	p.mu.Lock()
	_, mine := p.held[id]
	p.mu.Unlock()
	if mine {
		return true
	}
	start := p.cfg.Clock.Now()
	tok, ok, err := p.cfg.Store.AcquireLease(ctx, id, p.cfg.Node, p.cfg.LeaseTime)
	if !p.storeOK(err) {
		return false
	}
	if !ok {
		return true
	}
	p.mu.Lock()
	p.held[id] = &lease{token: tok, until: start.Add(p.cfg.LeaseTime)}
	p.mu.Unlock()
	p.cfg.Logger.Info("rule placed on this node", "rule", id, "token", tok)
	rules.Place(id)
	return true
}

// mine lists the leases held and not being given up, by rule id; those of
// this node's copies of spread rules only with pinned.
func (p *Placer) mine(pinned bool) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, 0, len(p.held))
	for id, l := range p.held {
		if _, _, isCopy := rule.ParseCopyID(id); !l.releasing && (pinned || !isCopy) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// release stops the rule cleanly (its lease is still renewed meanwhile),
// then gives the lease up.
func (p *Placer) release(ctx context.Context, rules RuleRunner, id string) {
	p.mu.Lock()
	l := p.held[id]
	if l == nil {
		p.mu.Unlock()
		return
	}
	l.releasing = true
	token := l.token
	p.mu.Unlock()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	if err := rules.Unplace(sctx, id); err != nil && ctx.Err() == nil {
		p.cfg.Logger.Debug("stop rule before giving up its lease", "rule", id, "err", err)
	}
	cancel()
	p.mu.Lock()
	if p.held[id] == l {
		delete(p.held, id)
		delete(p.sent, id)
	}
	p.mu.Unlock()
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.cfg.LeaseTime/3)
	defer cancel()
	if err := p.cfg.Store.ReleaseLease(rctx, id, p.cfg.Node, token); err != nil {
		p.cfg.Logger.Warn("give up lease; it expires by itself", "rule", id, "err", err)
	}
}

// releaseAll gives up every lease at shutdown, once the rules stopped, so
// other nodes take them without waiting for them to expire.
func (p *Placer) releaseAll() {
	p.mu.Lock()
	held := p.held
	p.held = map[string]*lease{}
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.LeaseTime/3)
	defer cancel()
	for id, l := range held {
		if err := p.cfg.Store.ReleaseLease(ctx, id, p.cfg.Node, l.token); err != nil {
			p.cfg.Logger.Warn("give up lease at shutdown; it expires by itself", "rule", id, "err", err)
			return
		}
	}
}
