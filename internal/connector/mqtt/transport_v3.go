package mqtt

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"sync"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
)

// v3 is a transport over paho.mqtt.golang for MQTT 3.1 and 3.1.1. Its own
// reconnect logic is off: the conn loop owns reconnection. Messages are
// dispatched in order on paho's router goroutine, and acknowledged manually,
// so a slow consumer holds back the socket (TCP backpressure) instead of
// piling up goroutines.
type v3 struct {
	cli    paho.Client
	lostCh chan error
	dialTO time.Duration
	once   sync.Once
	deadCh chan struct{}
}

func newV3(cfg connConfig, clientID string, handler func(inbound), timeout time.Duration) *v3 {
	t := &v3{lostCh: make(chan error, 1), dialTO: timeout, deadCh: make(chan struct{})}
	o := paho.NewClientOptions()
	o.AddBroker(cfg.server.String())
	o.SetClientID(clientID)
	o.SetUsername(cfg.username)
	o.SetPassword(cfg.password)
	o.SetProtocolVersion(uint(cfg.version))
	o.SetCleanSession(!cfg.session)
	o.SetAutoReconnect(false)
	o.SetConnectRetry(false)
	o.SetResumeSubs(false)
	o.SetOrderMatters(true)
	o.SetAutoAckDisabled(true)
	o.SetKeepAlive(defaultKeepAlive)
	o.SetPingTimeout(10 * time.Second)
	o.SetConnectTimeout(timeout)
	o.SetWriteTimeout(timeout)
	o.SetCustomOpenConnectionFn(func(*url.URL, paho.ClientOptions) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		c, err := dial(ctx, cfg, timeout)
		if err != nil {
			return nil, err
		}
		return newBufConn(c, timeout), nil
	})
	o.SetDefaultPublishHandler(func(_ paho.Client, m paho.Message) {
		in := inbound{topic: m.Topic(), payload: m.Payload(), qos: m.Qos(), id: m.MessageID(), retained: m.Retained()}
		if in.qos > 0 {
			in.ack = m.Ack
		}
		handler(in)
	})
	o.SetConnectionLostHandler(func(_ paho.Client, err error) {
		select {
		case t.lostCh <- err:
		default:
		}
	})
	t.cli = paho.NewClient(o)
	return t
}

func (t *v3) connect(ctx context.Context) error {
	tok := t.cli.Connect()
	if err := waitChan(ctx, tok.Done()); err != nil {
		t.cli.Disconnect(0)
		return fmt.Errorf("connect: %w", err)
	}
	if err := tok.Error(); err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	return nil
}

func (t *v3) subscribe(ctx context.Context, filters map[string]byte) error {
	tok := t.cli.SubscribeMultiple(filters, nil)
	if err := waitChan(ctx, tok.Done()); err != nil {
		return fmt.Errorf("subscribe: %w", err)
	}
	if err := tok.Error(); err != nil {
		return fmt.Errorf("subscribe: %w", err)
	}
	st, ok := tok.(*paho.SubscribeToken)
	if !ok {
		return nil
	}
	for f, code := range st.Result() {
		if code >= 0x80 {
			return fmt.Errorf("subscribe %q: %w", f, permanentErr{fmt.Errorf("refused by broker (code 0x%02x)", code)})
		}
	}
	return nil
}

func (t *v3) unsubscribe(ctx context.Context, filters []string) error {
	tok := t.cli.Unsubscribe(filters...)
	if err := waitChan(ctx, tok.Done()); err != nil {
		return fmt.Errorf("unsubscribe: %w", err)
	}
	return tok.Error()
}

func (t *v3) publish(o outbound) pending {
	return t.cli.Publish(o.topic, o.qos, o.retained, o.payload)
}

func (t *v3) lost() <-chan error { return t.lostCh }

func (t *v3) dead() <-chan struct{} { return t.deadCh }

func (t *v3) close() {
	t.once.Do(func() {
		t.cli.Disconnect(100)
		close(t.deadCh)
	})
}
