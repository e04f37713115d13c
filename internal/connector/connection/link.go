package connection

import (
	"errors"
	"sync"
	"time"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/clock"
)

// Link is one connector instance's view of its connection, for the
// connection status a sink reports in its rule's metrics
// (sink_<name>_0_connection_status and the last connect and disconnect
// times and error, see stream.ConnStatus). It starts connecting: nothing
// has been tried yet. Unlike a Tracker it belongs to one sink, so a sink
// whose connect failed (and holds no client) still shows why. Safe for
// concurrent use.
type Link struct {
	clock clock.Clock

	mu       sync.Mutex
	state    string
	lastConn time.Time
	lastDisc time.Time
	lastErr  string
}

// NewLink returns a link in state connecting; times come from c (the wall
// clock when nil).
func NewLink(c clock.Clock) *Link {
	if c == nil {
		c = clock.Wall{}
	}
	return &Link{clock: c, state: StateConnecting}
}

// Connected reports that the server answered. Like every reporting
// method it does nothing on a nil Link.
func (l *Link) Connected() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state != StateConnected {
		l.state, l.lastConn, l.lastErr = StateConnected, l.clock.Now(), ""
	}
}

// Failed reports that the server could not be reached because of err.
func (l *Link) Failed(err error) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.state, l.lastDisc = StateDisconnected, l.clock.Now()
	if err != nil {
		l.lastErr = err.Error()
	}
}

// Connect records the outcome of a connect: any error means disconnected.
// It returns err.
func (l *Link) Connect(err error) error {
	if err != nil {
		l.Failed(err)
	} else {
		l.Connected()
	}
	return err
}

// Report records the outcome of a write and returns err: success means
// connected, a retryable failure (api.ErrRetryable) disconnected; other
// errors (bad data, a refused statement) say nothing about the connection.
func (l *Link) Report(err error) error {
	switch {
	case err == nil:
		l.Connected()
	case errors.Is(err, api.ErrRetryable):
		l.Failed(err)
	}
	return err
}

// Status returns the state, the last connect and disconnect times and the
// last error text (empty while connected).
func (l *Link) Status() (state string, lastConnected, lastDisconnected time.Time, lastErr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state, l.lastConn, l.lastDisc, l.lastErr
}
