package mqtt

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/eclipse/paho.golang/packets"
	"github.com/eclipse/paho.golang/paho"
	"github.com/eclipse/paho.golang/paho/session"

	"github.com/rekuiper/rekuiper/internal/panics"
)

// v5 is a transport over paho.golang for MQTT 5. The session state is owned
// by the conn and shared across transports, so in-flight QoS 1/2 state
// survives reconnects of a persistent session. Handlers run on paho's
// routing goroutine in arrival order with manual acknowledgement, which
// paho sends in receive order.
type v5 struct {
	cfg      connConfig
	clientID string
	sess     session.SessionManager
	handler  func(inbound)
	flush    func() // optional: called after every message
	timeout  time.Duration
	lostCh   chan error
	cli      *paho.Client
	conn     net.Conn
	once     sync.Once
	deadCh   chan struct{}
	// jobs feeds the publisher goroutine: paho.golang's QoS 1/2 Publish
	// blocks until acknowledged, and one goroutine keeps publishes in order.
	jobs chan v5job
	// marks orders unsubscribe after the PUBLISHes received before its
	// UNSUBACK (drain.go).
	marks unsubackMarks
}

type v5job struct {
	p *paho.Publish
	r *result
}

// ackInterval is how often paho.golang sends manual acknowledgements.
const ackInterval = 5 * time.Millisecond

func newV5(cfg connConfig, clientID string, sess session.SessionManager, handler func(inbound), timeout time.Duration) *v5 {
	return &v5{cfg: cfg, clientID: clientID, sess: sess, handler: handler, timeout: timeout,
		lostCh: make(chan error, 1), deadCh: make(chan struct{}), jobs: make(chan v5job, defaultMaxInflight)}
}

func (t *v5) signalLost(err error) {
	select {
	case t.lostCh <- err:
	default:
	}
}

// pahoConn is the connection paho.golang writes to. paho writes a packet
// in several Write calls (fixed header, then the rest) from several
// goroutines (publishes, acknowledgements, the pinger); over a connection
// that is not a socket (the buffered connection, TLS) they would
// interleave and corrupt the stream. paho holds a connection's
// sync.Locker for the whole of each packet.
func pahoConn(nc net.Conn) net.Conn { return packets.NewThreadSafeConn(nc) }

func (t *v5) connect(ctx context.Context) error {
	nc, err := dial(ctx, t.cfg, t.timeout)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	nc = newBufConn(nc, t.timeout, t.cfg.readPace)
	t.conn = nc
	t.cli = paho.NewClient(paho.ClientConfig{
		ClientID:                   t.clientID,
		Conn:                       pahoConn(nc),
		Session:                    markingSession{SessionManager: t.sess, t: t},
		EnableManualAcknowledgment: true,
		SendAcksInterval:           ackInterval,
		PacketTimeout:              t.timeout,
		OnPublishReceived:          []func(paho.PublishReceived) (bool, error){t.onPublish},
		OnClientError:              func(err error) { t.signalLost(err) },
		OnServerDisconnect: func(d *paho.Disconnect) {
			t.signalLost(fmt.Errorf("broker disconnected: reason code 0x%02x", d.ReasonCode))
		},
	})
	expiry := uint32(0)
	if t.cfg.session {
		expiry = t.cfg.expiry
	}
	cp := &paho.Connect{
		ClientID:   t.clientID,
		KeepAlive:  uint16(defaultKeepAlive / time.Second),
		CleanStart: !t.cfg.session,
		Properties: &paho.ConnectProperties{SessionExpiryInterval: &expiry},
	}
	if t.cfg.username != "" {
		cp.Username, cp.UsernameFlag = t.cfg.username, true
	}
	if t.cfg.password != "" {
		cp.Password, cp.PasswordFlag = []byte(t.cfg.password), true
	}
	ca, err := t.cli.Connect(ctx, cp)
	if err != nil {
		_ = nc.Close()
		if ca != nil && ca.ReasonCode >= 0x80 {
			refused := connackRefused{code: ca.ReasonCode}
			if ca.Properties != nil {
				refused.reason = ca.Properties.ReasonString
			}
			if v5Permanent(ca.ReasonCode) {
				return fmt.Errorf("connect: %w", permanentErr{refused})
			}
			return fmt.Errorf("connect: %w", refused)
		}
		return fmt.Errorf("connect: %w", err)
	}
	go func(cli *paho.Client) {
		<-cli.Done()
		t.signalLost(errors.New("connection closed"))
	}(t.cli)
	panics.Go("mqtt publisher", func(e *panics.Error) { t.signalLost(e) }, t.publisher)
	return nil
}

func (t *v5) onPublish(pr paho.PublishReceived) (handled bool, err error) {
	// paho calls this on its own goroutine and recovers nothing: a panic
	// while dispatching loses this connection (reconnected, the error in
	// its status), as a panic in the v3 reader does, not the process.
	defer panics.Catch("mqtt receive", func(e *panics.Error) {
		t.signalLost(e)
		handled, err = true, nil
	})
	p := pr.Packet
	if t.marks.handled(p) {
		return true, nil
	}
	in := inbound{topic: p.Topic, payload: p.Payload, qos: p.QoS, id: p.PacketID, retained: p.Retain}
	if p.Properties != nil && len(p.Properties.User) > 0 {
		in.user = make(map[string]any, len(p.Properties.User))
		for _, u := range p.Properties.User {
			in.user[u.Key] = u.Value
		}
	}
	if p.QoS > 0 {
		cli := pr.Client
		in.ack = func() { _ = cli.Ack(p) }
	}
	t.handler(in)
	if t.flush != nil {
		t.flush()
	}
	return true, nil
}

func (t *v5) subscribe(ctx context.Context, filters map[string]byte) error {
	s := &paho.Subscribe{}
	for _, f := range sortedKeys(filters) {
		s.Subscriptions = append(s.Subscriptions, paho.SubscribeOptions{Topic: f, QoS: filters[f]})
	}
	sa, err := t.cli.Subscribe(ctx, s)
	if err != nil {
		if sa != nil {
			return fmt.Errorf("subscribe: %w", permanentErr{err})
		}
		return fmt.Errorf("subscribe: %w", err)
	}
	for i, code := range sa.Reasons {
		if code >= 0x80 && i < len(s.Subscriptions) {
			return fmt.Errorf("subscribe %q: %w", s.Subscriptions[i].Topic,
				permanentErr{fmt.Errorf("refused by broker (reason code 0x%02x)", code)})
		}
	}
	return nil
}

func (t *v5) unsubscribe(ctx context.Context, filters []string) error {
	_, err := t.cli.Unsubscribe(ctx, &paho.Unsubscribe{Topics: filters})
	if err != nil {
		return fmt.Errorf("unsubscribe: %w", err)
	}
	// paho hands PUBLISHes to onPublish on another goroutine than the one
	// that read the UNSUBACK: wait until those read before it are handled.
	if err := t.marks.wait(ctx, t.deadCh); err != nil {
		return fmt.Errorf("unsubscribe: %w", err)
	}
	return nil
}

func (t *v5) publish(o outbound) pending {
	p := &paho.Publish{Topic: o.topic, QoS: o.qos, Retain: o.retained, Payload: o.payload}
	if len(o.user) > 0 {
		p.Properties = &paho.PublishProperties{}
		for _, k := range sortedKeys(o.user) {
			p.Properties.User.Add(k, o.user[k])
		}
	}
	r := &result{done: make(chan struct{})}
	if o.qos == 0 {
		_, r.err = t.cli.Publish(context.Background(), p)
		if r.err != nil {
			r.err = fmt.Errorf("publish: %w", r.err)
		}
		close(r.done)
		return r
	}
	select {
	case t.jobs <- v5job{p: p, r: r}:
	case <-t.deadCh:
		r.err = errors.New("publish: connection closed")
		close(r.done)
	}
	return r
}

// publisher sends queued QoS 1/2 publishes one after the other until the
// transport is closed; what is left fails.
func (t *v5) publisher() {
	for {
		select {
		case j := <-t.jobs:
			ctx, cancel := context.WithTimeout(context.Background(), t.timeout)
			resp, err := t.cli.Publish(ctx, j.p)
			cancel()
			switch {
			case err != nil && resp != nil && resp.ReasonCode >= 0x80:
				j.r.err = fmt.Errorf("publish: %w", permanentErr{err})
			case err != nil:
				j.r.err = fmt.Errorf("publish: %w", err)
			}
			close(j.r.done)
		case <-t.deadCh:
			for {
				select {
				case j := <-t.jobs:
					j.r.err = errors.New("publish: connection closed")
					close(j.r.done)
				default:
					return
				}
			}
		}
	}
}

// release does nothing: paho writes each publish itself (hold is ignored).
func (t *v5) release() error { return nil }

func (t *v5) lost() <-chan error { return t.lostCh }

func (t *v5) dead() <-chan struct{} { return t.deadCh }

func (t *v5) close() {
	t.once.Do(func() {
		if t.cli != nil {
			// Let the ack routine send acknowledgements made just before.
			time.Sleep(3 * ackInterval)
			_ = t.cli.Disconnect(&paho.Disconnect{ReasonCode: 0})
			_ = t.conn.Close()
		}
		close(t.deadCh)
	})
}
