// Package netlimit bounds what network clients can hold open in the
// daemon: the connections of its HTTP servers (REST, push endpoints,
// Prometheus), in total and per remote address, sharing one budget of
// file descriptors, and the rate of requests an address may send without
// a valid token.
//
// A connection that holds nothing (accepted but silent, or kept alive
// between requests) is the first to go: when a new connection would pass
// a cap, the oldest idle one is closed to make room, so that a flood of
// idle connections never locks out the next real client. Only when every
// connection is busy is the new one refused, with a 503 naming the limit
// on plain-HTTP listeners.
package netlimit

import (
	"container/list"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Limits are the connection caps of a Pool.
type Limits struct {
	// MaxConnections caps the connections of every listener of the pool
	// together; at least 1.
	MaxConnections int
	// MaxPerAddress caps the connections from one remote address (IP,
	// without the port); at least 1.
	MaxPerAddress int
}

// Stats are a pool's counters since it was made.
type Stats struct {
	// Open is the number of connections open now, Idle those of them that
	// carry no request.
	Open, Idle int
	// Accepted counts the connections let in, Evicted the idle ones closed
	// to make room for a new one, Refused the new ones turned away because
	// every connection was busy.
	Accepted, Evicted, Refused int64
}

// Pool is the connection budget shared by the listeners it wraps. It is
// safe for concurrent use.
type Pool struct {
	lim Limits

	mu     sync.Mutex
	open   int
	byAddr map[string]*addrConns
	idle   list.List // of *Conn, oldest first

	accepted, evicted, refused atomic.Int64
}

// addrConns are the connections of one remote address.
type addrConns struct {
	open int
	idle list.List // of *Conn, oldest first
}

// NewPool returns a pool with the given caps (values below 1 count as 1).
func NewPool(lim Limits) *Pool {
	lim.MaxConnections = max(lim.MaxConnections, 1)
	lim.MaxPerAddress = max(lim.MaxPerAddress, 1)
	return &Pool{lim: lim, byAddr: map[string]*addrConns{}}
}

// Limits returns the pool's caps.
func (p *Pool) Limits() Limits { return p.lim }

// Stats returns the pool's counters.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	open, idle := p.open, p.idle.Len()
	p.mu.Unlock()
	return Stats{Open: open, Idle: idle, Accepted: p.accepted.Load(), Evicted: p.evicted.Load(), Refused: p.refused.Load()}
}

// Listen wraps ln so that its connections count against the pool. name
// says which server it is in the refusal; plainHTTP answers a refused
// connection with a 503 (a TLS listener's refused connections are closed
// without a word: the client expects a handshake). The server serving the
// returned listener must report its connection states to ConnState.
func (p *Pool) Listen(ln net.Listener, name string, plainHTTP bool) net.Listener {
	return &listener{Listener: ln, pool: p, name: name, plain: plainHTTP}
}

// ConnState is the http.Server.ConnState hook of every server serving a
// listener of the pool: it tells the pool which connections are idle.
func (p *Pool) ConnState(c net.Conn, s http.ConnState) {
	pc := unwrap(c)
	if pc == nil || pc.pool != p {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch s {
	case http.StateNew, http.StateIdle:
		p.markIdle(pc)
	case http.StateActive, http.StateHijacked:
		p.markBusy(pc)
	}
}

// unwrap finds the pool's connection under c (a *tls.Conn has it under
// NetConn).
func unwrap(c net.Conn) *Conn {
	for range 4 {
		switch v := c.(type) {
		case *Conn:
			return v
		case interface{ NetConn() net.Conn }:
			c = v.NetConn()
		default:
			return nil
		}
	}
	return nil
}

type listener struct {
	net.Listener
	pool  *Pool
	name  string
	plain bool
}

func (l *listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if pc := l.pool.admit(c); pc != nil {
			return pc, nil
		}
		l.refuse(c)
	}
}

// refuse answers a connection the pool has no room for and closes it.
func (l *listener) refuse(c net.Conn) {
	if l.plain {
		msg := fmt.Sprintf(`{"error":1000,"message":"%s: too many open connections (limits.maxConnections %d, limits.maxConnectionsPerAddress %d); try again later"}`,
			l.name, l.pool.lim.MaxConnections, l.pool.lim.MaxPerAddress)
		_ = c.SetWriteDeadline(time.Now().Add(time.Second))
		fmt.Fprintf(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(msg), msg)
	}
	c.Close()
}

// admit counts c in, closing idle connections to make room; nil when
// there is no room (c is then the caller's to refuse).
func (p *Pool) admit(c net.Conn) *Conn {
	addr := hostOf(c.RemoteAddr())
	var victims []*Conn
	p.mu.Lock()
	a := p.byAddr[addr]
	if a == nil {
		a = &addrConns{}
		p.byAddr[addr] = a
	}
	if a.open >= p.lim.MaxPerAddress {
		if v := front(&a.idle); v != nil {
			victims = append(victims, v)
			p.drop(v)
		}
	}
	if a.open < p.lim.MaxPerAddress && p.open >= p.lim.MaxConnections {
		if v := front(&p.idle); v != nil {
			victims = append(victims, v)
			p.drop(v)
		}
	}
	var pc *Conn
	if a.open < p.lim.MaxPerAddress && p.open < p.lim.MaxConnections {
		pc = &Conn{Conn: c, pool: p, addr: addr}
		p.open++
		a.open++
		p.markIdle(pc) // silent until its first request
	} else if a.open == 0 {
		delete(p.byAddr, addr)
	}
	p.mu.Unlock()
	for _, v := range victims {
		p.evicted.Add(1)
		v.Conn.Close()
	}
	if pc == nil {
		p.refused.Add(1)
		return nil
	}
	p.accepted.Add(1)
	return pc
}

func front(l *list.List) *Conn {
	if e := l.Front(); e != nil {
		return e.Value.(*Conn)
	}
	return nil
}

// markIdle puts c last in the idle lists (p.mu held).
func (p *Pool) markIdle(c *Conn) {
	if c.dropped {
		return
	}
	p.markBusy(c)
	c.idle = p.idle.PushBack(c)
	c.addrIdle = p.byAddr[c.addr].idle.PushBack(c)
}

// markBusy takes c out of the idle lists (p.mu held).
func (p *Pool) markBusy(c *Conn) {
	if c.idle != nil {
		p.idle.Remove(c.idle)
		p.byAddr[c.addr].idle.Remove(c.addrIdle)
		c.idle, c.addrIdle = nil, nil
	}
}

// drop stops counting c (p.mu held); once only.
func (p *Pool) drop(c *Conn) {
	if c.dropped {
		return
	}
	p.markBusy(c)
	c.dropped = true
	p.open--
	a := p.byAddr[c.addr]
	a.open--
	if a.open == 0 {
		delete(p.byAddr, c.addr)
	}
}

// Conn is a connection counted by a pool; closing it gives its place back.
type Conn struct {
	net.Conn
	pool *Pool
	addr string
	// The fields below are guarded by pool.mu.
	idle, addrIdle *list.Element
	dropped        bool
}

// Close closes the connection and gives its place back.
func (c *Conn) Close() error {
	c.pool.mu.Lock()
	c.pool.drop(c)
	c.pool.mu.Unlock()
	return c.Conn.Close()
}

// hostOf returns the IP of a remote address, the whole address when it
// has no port.
func hostOf(a net.Addr) string {
	if a == nil {
		return ""
	}
	s := a.String()
	if h, _, err := net.SplitHostPort(s); err == nil {
		return h
	}
	return s
}
