package rulemgr

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/panics"
	"github.com/rekuiper/rekuiper/internal/rule"
)

type cmdKind int

const (
	cmdBegin       cmdKind = iota // start without persisting (create, load)
	cmdStart                      // persist running, start
	cmdStop                       // persist stopped, stop
	cmdRestart                    // persist running, stop, start
	cmdUpdate                     // replace the definition
	cmdTags                       // change tags
	cmdDelete                     // delete from the catalog, stop, exit
	cmdShutdown                   // stop without persisting, exit
	evDone                        // the run generation gen ended by itself
	evRetry                       // backoff timer of generation gen fired
	evCronStart                   // cron firing of generation gen
	evCronEnd                     // cron run of generation gen reached its duration
	evSettled                     // run generation gen ran StartSettle: clear its start marker
	cmdPlace                      // this node acquired the rule's lease: start if wanted
	cmdUnplace                    // this node gives up the rule's lease: stop, keep wanted
	cmdAdopt                      // another node changed the rule: take def and wanted state
	cmdAdoptDelete                // another node deleted the rule: stop, clean up, exit
)

type command struct {
	kind  cmdKind
	ctx   context.Context
	def   *rule.Def
	tags  []string
	tagOp TagOp
	gen   uint64
	// wanted and loadErr: cmdAdopt's wanted state and definition error.
	wanted  catalog.RuleState
	loadErr error
	reply   chan error
}

// actor applies one rule's commands one at a time, in arrival order. It
// has a goroutine only while commands are pending: the first command into
// an empty mailbox starts one, which exits once the mailbox is empty again,
// so an idle rule costs no goroutine. Fields under mu are read by Status;
// only the goroutine draining the mailbox writes them.
type actor struct {
	m    *Manager
	id   string
	quit chan struct{} // closed when the actor exits (delete, shutdown)

	boxMu    sync.Mutex
	box      []command // pending commands
	draining bool      // a goroutine is draining box
	exited   bool

	mu        sync.Mutex
	def       *rule.Def
	wanted    catalog.RuleState
	state     State
	message   string
	lastStart int64
	lastStop  int64
	nextStart int64
	run       Running
	restarts  int

	// Owned by the loop goroutine.
	loadErr  error
	gen      uint64
	runStart time.Time
	runStop  chan struct{} // closed to release the current run's watcher, if any
	timers   []clock.Timer
	marked   bool // the catalog holds a start marker for this rule
}

// call sends c and waits for its reply. A command that reaches a deleted
// rule's actor gives ErrNotFound.
func (a *actor) call(ctx context.Context, c command) error {
	c.reply = make(chan error, 1)
	if c.ctx == nil {
		c.ctx = ctx
	}
	if !a.post(c) {
		return fmt.Errorf("rule %s: %w", a.id, catalog.ErrNotFound)
	}
	select {
	case err := <-c.reply:
		return err
	case <-a.quit:
		select {
		case err := <-c.reply:
			return err
		default:
			return fmt.Errorf("rule %s: %w", a.id, catalog.ErrNotFound)
		}
	case <-ctx.Done():
		return ctx.Err()
	}
}

// post queues c without waiting, starting the goroutine that drains the
// mailbox if none runs. It reports false, dropping c, when the actor has
// exited. It never blocks, so timer callbacks and the rule's own
// goroutines may post.
func (a *actor) post(c command) bool {
	a.boxMu.Lock()
	defer a.boxMu.Unlock()
	if a.exited {
		return false
	}
	a.box = append(a.box, c)
	if !a.draining {
		a.draining = true
		go a.drain()
	}
	return true
}

// next takes the oldest pending command; ok is false when there is none,
// and the draining goroutine then exits.
func (a *actor) next() (c command, ok bool) {
	a.boxMu.Lock()
	defer a.boxMu.Unlock()
	if len(a.box) == 0 {
		a.box, a.draining = nil, false
		return command{}, false
	}
	c = a.box[0]
	a.box[0] = command{}
	a.box = a.box[1:]
	return c, true
}

// cleanUp runs the manager's Cleanup for the deleted rule; a failure is
// logged, not returned: the rule is gone either way.
func (a *actor) cleanUp(ctx context.Context) {
	if a.m.cfg.Cleanup == nil {
		return
	}
	if err := a.m.cfg.Cleanup(ctx, a.id); err != nil {
		a.m.log.Warn("clean up deleted rule", "rule", a.id, "err", err)
	}
}

func (a *actor) now() time.Time { return a.m.cfg.Clock.Now() }

func (a *actor) set(f func()) {
	a.mu.Lock()
	f()
	a.mu.Unlock()
}

func (a *actor) status(withMetrics bool) Status {
	a.mu.Lock()
	s := Status{
		ID: a.id, State: a.state, Message: a.message, LastStart: a.lastStart, LastStop: a.lastStop,
		NextStart: a.nextStart, Wanted: a.wanted, Restarts: a.restarts,
	}
	run := a.run
	a.mu.Unlock()
	if withMetrics && run != nil {
		s.Metrics = maps.Clone(run.Metrics())
	}
	return s
}

// drain applies pending commands until the mailbox is empty, or until a
// command ends the actor: commands still pending then get ErrNotFound from
// call (quit is closed).
func (a *actor) drain() {
	for {
		c, ok := a.next()
		if !ok {
			return
		}
		if c.ctx == nil {
			c.ctx = context.Background()
		}
		err, exit := a.safeHandle(c)
		if c.reply != nil {
			c.reply <- err
		}
		if exit {
			a.boxMu.Lock()
			a.exited, a.box, a.draining = true, nil, false
			a.boxMu.Unlock()
			close(a.quit)
			a.m.wg.Done()
			return
		}
	}
}

// safeHandle is handle with a panic turned into an error of this rule (its
// status says so); the rule's goroutine and the process go on.
func (a *actor) safeHandle(c command) (err error, exit bool) {
	if perr := panics.Call("rule "+a.id, func() { err, exit = a.handle(c) }); perr != nil {
		a.m.log.Error("rule command panicked", "rule", a.id, "err", perr.Error(), "stack", string(perr.Stack))
		a.set(func() { a.state, a.message = StateStoppedByError, perr.Error() })
		return perr, false
	}
	return err, exit
}

func (a *actor) handle(c command) (err error, exit bool) {
	switch c.kind {
	case cmdBegin:
		a.resetRestarts()
		a.begin()
	case cmdStart:
		if err := a.persist(c.ctx, catalog.RuleRunning); err != nil {
			return err, false
		}
		a.resetRestarts()
		if a.state != StateRunning && a.state != StateScheduled {
			a.halt(c.ctx, StateStopped)
			a.begin()
		}
	case cmdStop:
		if err := a.persist(c.ctx, catalog.RuleStopped); err != nil {
			return err, false
		}
		a.halt(c.ctx, StateStopped)
	case cmdRestart:
		if err := a.persist(c.ctx, catalog.RuleRunning); err != nil {
			return err, false
		}
		a.resetRestarts()
		a.halt(c.ctx, StateStopped)
		a.begin()
		if tr, ok := a.m.cfg.Placement.(TaskRestarter); ok {
			tr.RestartTasks(a.id)
		}
	case cmdUpdate:
		return a.update(c.ctx, c.def), false
	case cmdTags:
		return a.setTags(c.ctx, c.tagOp, c.tags), false
	case cmdDelete:
		if err := a.m.cfg.Catalog.DeleteRule(c.ctx, a.id); err != nil {
			return fmt.Errorf("delete rule %s: %w", a.id, err), false
		}
		a.halt(c.ctx, StateStopped)
		a.m.remove(a.id)
		a.forget(c.ctx)
		a.cleanUp(c.ctx)
		a.m.log.Info("rule deleted", "rule", a.id)
		return nil, true
	case cmdShutdown:
		a.halt(c.ctx, StateStopped)
		return nil, true
	case cmdPlace:
		if a.wanted == catalog.RuleRunning && a.run == nil && a.state != StateScheduled && a.state != StateStarting {
			a.resetRestarts()
			a.begin()
		}
	case cmdUnplace:
		a.halt(c.ctx, StateStopped)
	case cmdAdopt:
		a.adopt(c.def, c.loadErr, c.wanted)
	case cmdAdoptDelete:
		a.halt(c.ctx, StateStopped)
		a.m.remove(a.id)
		a.cleanUp(c.ctx)
		a.m.log.Info("rule deleted on another node", "rule", a.id)
		return nil, true
	case evDone:
		if c.gen == a.gen {
			a.ended()
		}
	case evRetry:
		if c.gen == a.gen && a.wanted == catalog.RuleRunning && a.state == StateStoppedByError {
			a.set(func() { a.restarts++ })
			a.m.log.Info("restarting rule", "rule", a.id, "attempt", a.restarts)
			a.begin()
		}
	case evCronStart:
		if c.gen == a.gen && a.wanted == catalog.RuleRunning && a.placed() {
			a.cronRun()
		}
	case evCronEnd:
		if c.gen == a.gen {
			a.halt(context.Background(), StateScheduled)
			a.scheduleNext()
		}
	case evSettled:
		if c.gen == a.gen && a.run != nil {
			a.unmark()
		}
	}
	return nil, false
}

func (a *actor) resetRestarts() { a.set(func() { a.restarts = 0 }) }

func (a *actor) persist(ctx context.Context, st catalog.RuleState) error {
	if _, err := a.m.cfg.Catalog.SetRuleState(ctx, a.id, st); err != nil {
		return fmt.Errorf("set rule %s state %s: %w", a.id, st, err)
	}
	a.set(func() { a.wanted = st })
	return nil
}

// begin starts the rule now, or schedules it when it has a cron. A start
// marker written ahead (at boot) is cleared when the rule does not start.
func (a *actor) begin() {
	if !a.placed() {
		a.unmark()
		a.notPlaced()
		return
	}
	if a.loadErr != nil {
		a.unmark()
		a.set(func() { a.state, a.message = StateStoppedByError, a.loadErr.Error() })
		return
	}
	sched, _ := a.def.Schedule()
	if sched != nil {
		a.unmark()
		a.scheduleNext()
		return
	}
	a.startRun(0)
}

// startRun starts a new run generation; it reports whether it runs.
// startRun starts the rule. A cron run passes its duration: the timer that
// ends it is armed before the rule reads as running, so that whoever sees
// it running (a status request, a test advancing a virtual clock) also
// sees its end scheduled.
func (a *actor) startRun(runFor time.Duration) bool {
	a.stopTimers()
	a.gen++
	gen := a.gen
	a.set(func() { a.state, a.message, a.nextStart = StateStarting, "", 0 })
	ctx, cancel := context.WithTimeout(context.Background(), a.m.cfg.StartTimeout)
	a.mark(ctx)
	run, err := a.safeStart(ctx)
	cancel()
	now := a.now()
	if err != nil {
		a.m.log.Warn("rule start failed", "rule", a.id, "err", err)
		next := a.scheduleRetry()
		a.set(func() {
			a.state, a.message, a.lastStop, a.nextStart = StateStoppedByError, err.Error(), now.UnixMilli(), next
		})
		a.unmark()
		return false
	}
	a.runStart = now
	if runFor > 0 {
		a.after(runFor, evCronEnd)
	}
	// The marker's timer is armed before the state says running, so that
	// whoever sees the rule running (a test advancing a virtual clock)
	// finds it armed.
	a.after(settleDelay(now, a.m.cfg.StartSettle), evSettled)
	a.set(func() { a.state, a.run, a.lastStart = StateRunning, run, now.UnixMilli() })
	a.m.log.Info("rule started", "rule", a.id)
	a.watch(run, gen)
	return true
}

// settleDelay is how long after start a run's marker is cleared: settle,
// rounded up so that it ends on a whole second of the clock. Rules started
// within the same second then clear their markers together, and the
// catalog commits those clears in one transaction instead of one each.
func settleDelay(start time.Time, settle time.Duration) time.Duration {
	due := start.Add(settle)
	if r := due.Sub(due.Truncate(time.Second)); r > 0 {
		return settle + time.Second - r
	}
	return settle
}

// watch posts evDone for run generation gen when the run ends. A run that
// says so itself (DoneNotifier) costs no goroutine; another is waited on by
// one, released by releaseWatch. A notice of a generation that is no
// longer current is ignored.
func (a *actor) watch(run Running, gen uint64) {
	if n, ok := run.(DoneNotifier); ok {
		n.NotifyDone(func() { a.post(command{kind: evDone, gen: gen}) })
		return
	}
	stop := make(chan struct{})
	a.runStop = stop
	go func() {
		select {
		case <-run.Done():
			a.post(command{kind: evDone, gen: gen})
		case <-stop:
		}
	}()
}

func (a *actor) releaseWatch() {
	if a.runStop != nil {
		close(a.runStop)
		a.runStop = nil
	}
}

// ended handles a run that stopped by itself.
func (a *actor) ended() {
	run := a.run
	if run == nil {
		return
	}
	err := run.Err()
	now := a.now()
	ranFor := now.Sub(a.runStart)
	a.releaseWatch()
	a.gen++
	a.unmark()
	a.set(func() { a.run, a.lastStop = nil, now.UnixMilli() })
	rs := a.def.Options.RestartStrategy
	if ranFor >= max(time.Duration(rs.MaxDelay), time.Duration(rs.Delay)) && ranFor > 0 {
		a.resetRestarts()
	}
	sched, _ := a.def.Schedule()
	switch {
	case err != nil:
		a.m.log.Warn("rule stopped by error", "rule", a.id, "err", err)
		if sched != nil {
			a.set(func() { a.state, a.message = StateStoppedByError, err.Error() })
			a.scheduleNextKeepState()
		} else {
			next := a.scheduleRetry()
			a.set(func() { a.state, a.message, a.nextStart = StateStoppedByError, err.Error(), next })
		}
	case sched != nil:
		a.set(func() { a.state, a.message = StateScheduled, "" })
		a.scheduleNext()
	default:
		// A bounded source ended: the rule is done, as eKuiper's triggered=false.
		a.m.log.Info("rule finished", "rule", a.id)
		a.set(func() { a.state, a.message = StateStopped, "" })
		if err := a.persist(context.Background(), catalog.RuleStopped); err != nil {
			a.m.log.Error("persist finished rule", "rule", a.id, "err", err)
		}
	}
}

// halt cancels timers and stops the current run (draining within the rule's
// forceExitTimeout or ctx, whichever ends first), leaving state final.
func (a *actor) halt(ctx context.Context, final State) {
	a.stopTimers()
	a.gen++
	if run := a.run; run != nil {
		a.set(func() { a.state = StateStopping })
		timeout := time.Duration(a.def.Options.ForceExitTimeout)
		if timeout <= 0 {
			timeout = a.m.cfg.StopTimeout
		}
		deadline := time.Now().Add(timeout)
		if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
			deadline = dl
		}
		sctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
		var err error
		if perr := panics.Call("stop rule "+a.id, func() { err = run.Stop(sctx) }); perr != nil {
			a.m.log.Error("rule stop panicked", "rule", a.id, "err", perr.Error(), "stack", string(perr.Stack))
		}
		if err != nil {
			a.m.log.Warn("rule stop", "rule", a.id, "err", err)
		}
		cancel()
		a.releaseWatch()
		now := a.now()
		a.set(func() { a.run, a.lastStop = nil, now.UnixMilli() })
		a.m.log.Info("rule stopped", "rule", a.id)
	}
	a.unmark()
	a.set(func() { a.state, a.nextStart = final, 0 })
	if final != StateStoppedByError {
		a.set(func() { a.message = "" })
	}
}

// safeStart starts the rule; a panic while building or starting it is an
// error of this rule, logged with its stack.
func (a *actor) safeStart(ctx context.Context) (run Running, err error) {
	if perr := panics.Call("start rule "+a.id, func() { run, err = a.m.cfg.Runner.Start(ctx, a.def) }); perr != nil {
		a.m.log.Error("rule start panicked", "rule", a.id, "err", perr.Error(), "stack", string(perr.Stack))
		return nil, perr
	}
	return run, err
}

// mark writes the rule's start marker before it starts: if the process
// dies before the marker is cleared (the rule ran StartSettle, or stopped),
// the next boot leaves the rule stopped. A failed write is logged; the
// rule starts regardless. Markers of rules starting together share a
// transaction (the catalog group-commits them); one written ahead (at
// boot) is kept.
func (a *actor) mark(ctx context.Context) {
	if a.marked {
		return
	}
	if err := a.m.cfg.Catalog.MarkRuleStarting(ctx, a.m.cfg.NodeID, a.id, a.now()); err != nil {
		a.m.log.Warn("write rule start marker", "rule", a.id, "err", err)
		return
	}
	a.marked = true
}

func (a *actor) unmark() {
	if !a.marked {
		return
	}
	if err := a.m.cfg.Catalog.ClearRuleStarting(context.Background(), a.m.cfg.NodeID, a.id); err != nil {
		a.m.log.Warn("clear rule start marker", "rule", a.id, "err", err)
		return
	}
	a.marked = false
}

func (a *actor) stopTimers() {
	for _, t := range a.timers {
		t.Stop()
	}
	a.timers = nil
}

func (a *actor) after(d time.Duration, kind cmdKind) {
	gen := a.gen
	t := a.m.cfg.Clock.AfterFunc(d, func() { a.post(command{kind: kind, gen: gen}) })
	a.timers = append(a.timers, t)
}

// scheduleRetry arms the next restart of restartStrategy and returns when it
// is due (Unix ms), 0 when no restart is left. The caller publishes it with
// the stopped state in one update, so a status never shows the state without
// its next start; the timer is armed first, so whoever reads the next start
// (a status request, a test advancing a virtual clock) finds it.
func (a *actor) scheduleRetry() int64 {
	rs := a.def.Options.RestartStrategy
	if a.wanted != catalog.RuleRunning || rs.Attempts <= 0 || a.restarts >= rs.Attempts {
		return 0
	}
	d := backoff(rs, a.restarts, a.m.cfg.Rand())
	a.after(d, evRetry)
	return a.now().Add(d).UnixMilli()
}

// scheduleNext waits for the next cron firing inside cronDatetimeRange.
func (a *actor) scheduleNext() {
	a.set(func() { a.state, a.message = StateScheduled, "" })
	a.scheduleNextKeepState()
}

func (a *actor) scheduleNextKeepState() {
	sched, err := a.def.Schedule()
	if err != nil || sched == nil {
		return
	}
	now := a.now()
	next := now
	for range 10000 {
		next = sched.Spec.Next(next)
		if next.IsZero() || inRanges(a.def.Options.CronDatetimeRange, next) {
			break
		}
	}
	if next.IsZero() || !inRanges(a.def.Options.CronDatetimeRange, next) {
		a.set(func() { a.nextStart = 0 })
		return
	}
	a.after(next.Sub(now), evCronStart) // armed before nextStart is published
	a.set(func() { a.nextStart = next.UnixMilli() })
}

func (a *actor) cronRun() {
	sched, _ := a.def.Schedule()
	if sched == nil {
		return
	}
	if a.startRun(sched.Duration) {
		return
	}
	a.scheduleNextKeepState()
}

func inRanges(ranges []rule.DatetimeRange, t time.Time) bool {
	if len(ranges) == 0 {
		return true
	}
	for _, r := range ranges {
		begin, end := r.BeginTimestamp, r.EndTimestamp
		if r.Begin != "" {
			if bt, err := time.ParseInLocation(time.DateTime, r.Begin, time.Local); err == nil {
				begin = bt.UnixMilli()
			}
		}
		if r.End != "" {
			if et, err := time.ParseInLocation(time.DateTime, r.End, time.Local); err == nil {
				end = et.UnixMilli()
			}
		}
		ms := t.UnixMilli()
		if (begin == 0 || ms >= begin) && (end == 0 || ms < end) {
			return true
		}
	}
	return false
}

func (a *actor) update(ctx context.Context, def *rule.Def) error {
	old := a.def
	if old != nil && def.Version != "" && old.Version != "" && def.Version <= old.Version {
		return fmt.Errorf("update rule %s: version %q, stored %q: %w: %w", a.id, def.Version, old.Version, ErrVersion, catalog.ErrConflict)
	}
	if a.loadErr == nil {
		if err := def.RestoreSecrets(old); err != nil {
			return fmt.Errorf("update rule %s: %w", a.id, err)
		}
	}
	wanted := a.wanted
	if def.TriggeredSet {
		wanted = catalog.RuleStopped
		if def.Triggered {
			wanted = catalog.RuleRunning
		}
	}
	_, err := a.m.cfg.Catalog.PutRule(ctx, catalog.Rule{
		ID: a.id, Definition: def.Raw, State: wanted, Version: def.Version, Tags: def.Tags,
	}, catalog.Replace)
	if err != nil {
		return fmt.Errorf("update rule %s: %w", a.id, err)
	}
	a.halt(ctx, StateStopped)
	a.loadErr = nil
	a.set(func() { a.def, a.wanted = def, wanted })
	a.m.log.Info("rule updated", "rule", a.id)
	if a.wanted == catalog.RuleRunning {
		a.resetRestarts()
		a.begin()
	}
	return nil
}

func (a *actor) setTags(ctx context.Context, op TagOp, tags []string) error {
	cur := slices.Clone(a.def.Tags)
	switch op {
	case TagsReplace:
		cur = slices.Clone(tags)
	case TagsAdd:
		for _, t := range tags {
			if !slices.Contains(cur, t) {
				cur = append(cur, t)
			}
		}
	case TagsRemove:
		cur = slices.DeleteFunc(cur, func(t string) bool { return slices.Contains(tags, t) })
	}
	def, err := a.def.WithTags(cur)
	if err != nil {
		return err
	}
	if len(def.Tags) == 0 {
		def.Tags = nil
	}
	_, err = a.m.cfg.Catalog.PutRule(ctx, catalog.Rule{
		ID: a.id, Definition: def.Raw, State: a.wanted, Version: def.Version, Tags: def.Tags,
	}, catalog.Replace)
	if err != nil {
		return fmt.Errorf("set tags of rule %s: %w", a.id, err)
	}
	a.set(func() { a.def = def })
	return nil
}

// forget lets the runner release what the deleted rule held outside the
// daemon (see Forgetter).
func (a *actor) forget(ctx context.Context) {
	f, ok := a.m.cfg.Runner.(Forgetter)
	a.mu.Lock()
	def := a.def
	a.mu.Unlock()
	if !ok || def == nil {
		return
	}
	if err := f.Forget(ctx, def); err != nil {
		a.m.log.Warn("release what the deleted rule held", "rule", a.id, "err", err)
	}
}
