package broker

import (
	"log/slog"
	"net"
	"sync"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"
)

// guardedListener is the TCP listener the embedded broker serves on in
// place of mochi's listeners.Net, which races with Server.Close.
//
// The bug is mochi's (v2.7.9, the newest release): a connection's handler,
// Server.attachClient, calls Listeners.ClientsWg.Add(1) on the handler's own
// goroutine, after Accept returned, while Server.Close ends with
// Listeners.ClientsWg.Wait(). A client that connects while the server closes
// makes Add on a zero counter race with Wait (the race detector reports it;
// sync.WaitGroup forbids it), and a handler that starts after Wait returned
// runs on a closed server. listeners.Net.Serve also shares one err variable
// between its accept loop and every handler goroutine.
// TestMochiListenerRace reproduces it against mochi alone.
//
// A second mochi bug makes Close deadlock: the CloseFn it hands its
// listeners, Server.closeListenerClients, calls Clients.GetByListener, which
// takes the clients' read lock and then takes it again in Clients.Len; a
// connecting or leaving client that asks for the write lock in between
// (Clients.Add, Clients.Delete) blocks both for good. Close therefore does
// not call that CloseFn: it takes the clients with one read lock
// (Clients.GetAll) and disconnects them itself, as mochi would.
// TestCloseWhileClientsConnect catches both.
//
// This listener closes that window: under mu, Serve takes the server's
// ClientsWg for each accepted connection before it starts the handler and
// only while the listener is open, and Close marks the listener closed under
// the same mu before mochi's Wait can run. The handler's own Add then finds a
// positive counter, which WaitGroup allows concurrently with Wait. Close
// also closes the connections it accepted, so a handler still reading its
// CONNECT (not yet among the server's clients, so not disconnected by it)
// ends instead of holding Wait.
type guardedListener struct {
	id  string
	ln  net.Listener
	srv *mqtt.Server
	wg  *sync.WaitGroup // the server's Listeners.ClientsWg
	log *slog.Logger

	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{}
	served chan struct{} // closed when Serve returned
}

var _ listeners.Listener = (*guardedListener)(nil)

func newGuardedListener(id string, ln net.Listener, srv *mqtt.Server) *guardedListener {
	return &guardedListener{id: id, ln: ln, srv: srv, wg: &srv.Listeners.ClientsWg, conns: map[net.Conn]struct{}{}, served: make(chan struct{})}
}

func (l *guardedListener) ID() string       { return l.id }
func (l *guardedListener) Address() string  { return l.ln.Addr().String() }
func (l *guardedListener) Protocol() string { return l.ln.Addr().Network() }

func (l *guardedListener) Init(log *slog.Logger) error {
	l.log = log
	return nil
}

// Serve accepts until the listener is closed.
func (l *guardedListener) Serve(establish listeners.EstablishFn) {
	defer close(l.served)
	for {
		conn, err := l.ln.Accept()
		if err != nil {
			return
		}
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			_ = conn.Close()
			return
		}
		l.wg.Add(1)
		l.conns[conn] = struct{}{}
		l.mu.Unlock()
		go l.handle(establish, conn)
	}
}

func (l *guardedListener) handle(establish listeners.EstablishFn, conn net.Conn) {
	defer l.wg.Done()
	if err := establish(l.id, conn); err != nil && l.log != nil {
		l.log.Debug("mqtt client ended", "error", err)
	}
	l.mu.Lock()
	delete(l.conns, conn)
	l.mu.Unlock()
	_ = conn.Close()
}

// Close stops accepting, disconnects the server's clients of this listener
// gracefully (DISCONNECT "server shutting down" to MQTT 5 clients), then
// closes every connection still open (handlers that had not finished their
// CONNECT). It is called once by mochi's Server.Close; closeClients is not
// used (see the type's comment).
func (l *guardedListener) Close(_ listeners.CloseFn) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	l.mu.Unlock()
	_ = l.ln.Close()
	for _, cl := range l.srv.Clients.GetAll() {
		if cl.Net.Listener == l.id && !cl.Closed() {
			_ = l.srv.DisconnectClient(cl, packets.ErrServerShuttingDown)
		}
	}
	l.mu.Lock()
	for c := range l.conns {
		_ = c.Close()
	}
	l.mu.Unlock()
}
