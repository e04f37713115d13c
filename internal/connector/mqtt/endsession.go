package mqtt

import (
	"context"
	"fmt"

	"github.com/eclipse/paho.golang/paho/session/state"

	"github.com/rekuiper/rekuiper/internal/connector"
)

var _ connector.SessionEnder = (*Source)(nil)

// EndSession removes the persistent session derived for this source (see
// withDerivedSession) from the broker: it connects once under the
// session's client id with a clean session (MQTT 3.1.1) or clean start and
// a session expiry of 0 (MQTT 5), and disconnects, so the broker drops the
// subscriptions and stops queueing for the client. The source must not be
// connected. A source without a derived session (qos 0, an explicit
// clientid or enableClientSession) has nothing to end. ctx bounds the
// connection attempt.
func (s *Source) EndSession(ctx context.Context) error {
	if !s.cfg.derived {
		return nil
	}
	cfg := s.cfg
	cfg.session = false
	discard := func(m inbound) {
		if m.ack != nil {
			m.ack()
		}
	}
	var tr transport
	if cfg.version == 5 {
		tr = newV5(cfg, cfg.clientID, state.NewInMemory(), discard, s.pool.connectTimeout)
	} else {
		tr = newV3(cfg, cfg.clientID, discard, s.pool.connectTimeout)
	}
	ctx, cancel := context.WithTimeout(ctx, s.pool.connectTimeout)
	defer cancel()
	if err := tr.connect(ctx); err != nil {
		return fmt.Errorf("end mqtt session of client %s on %s: %w", cfg.clientID, cfg.server.Redacted(), err)
	}
	tr.close()
	return nil
}
