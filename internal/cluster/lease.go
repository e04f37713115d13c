package cluster

import "fmt"

// Lease names this node's lease on rule id for a fenced write: the node id
// and the token of the grant. It returns ErrFenced when this node does
// not hold the lease, or it may have expired by the local clock; the
// database checks the token again when the write commits.
func (p *Placer) Lease(id string) (string, int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.held[id]
	if l == nil || !p.cfg.Clock.Now().Before(l.until) {
		return "", 0, fmt.Errorf("rule %s: %w", id, ErrFenced)
	}
	return p.cfg.Node, l.token, nil
}

// Node is this node's id.
func (p *Placer) Node() string { return p.cfg.Node }
