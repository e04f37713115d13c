// Package redistest gives tests a redis-server on an ephemeral loopback
// port, without persistence, restartable on the same port.
package redistest

import (
	"context"
	"os/exec"
	"strconv"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/rekuiper/rekuiper/internal/connector/connectortest"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// Server is a redis-server process owned by one test.
type Server struct {
	bin, dir string
	port     int
	cmd      *exec.Cmd
}

// FreePort returns a loopback port that was free a moment ago; it fails
// the test when there is none.
func FreePort(t testing.TB) int {
	t.Helper()
	return connectortest.FreePort(t)
}

// Start starts redis-server and stops it at the end of the test; it skips
// the test when redis-server is not installed.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not installed")
	}
	s := &Server{bin: bin, dir: t.TempDir(), port: FreePort(t)}
	s.start(t)
	t.Cleanup(s.Stop)
	return s
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

func (s *Server) start(t testing.TB) {
	t.Helper()
	s.cmd = exec.Command(s.bin, "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", s.dir)
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	cl := goredis.NewClient(&goredis.Options{Addr: s.Addr()})
	defer cl.Close()
	testwait.Until(t, "redis-server to answer PING", func() bool { return cl.Ping(context.Background()).Err() == nil })
}

// Stop kills the server; the port stays reserved for Restart.
func (s *Server) Stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
		s.cmd = nil
	}
}

// Restart kills the server and starts an empty one on the same port. It
// implements conformancetest.Restarter.
func (s *Server) Restart(t *testing.T) {
	s.Stop()
	s.start(t)
}

// Client returns a client of the server, closed at the end of the test.
func (s *Server) Client(t testing.TB) *goredis.Client {
	t.Helper()
	cl := goredis.NewClient(&goredis.Options{Addr: s.Addr()})
	t.Cleanup(func() { cl.Close() })
	return cl
}
