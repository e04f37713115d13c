// Package pgtest gives tests a throwaway PostgreSQL database: a private
// cluster started with initdb and pg_ctl on an ephemeral port (as the
// postgres user when running as root), or a throwaway database on the
// server named by PGHOST/PGPORT.
package pgtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver

	"github.com/rekuiper/rekuiper/internal/connector/connectortest"
	"github.com/rekuiper/rekuiper/internal/procs"
)

// Server is a PostgreSQL database for one test: a throwaway cluster
// started with initdb/pg_ctl, or a throwaway database on the server named
// by PGHOST/PGPORT.
type Server struct {
	URL string
	// Restart, Stop and Start act on the server process; nil when the
	// server is not ours.
	Restart func(t *testing.T)
	Stop    func(t *testing.T)
	Start   func(t *testing.T)
	// databases counts NewDatabase's databases.
	databases atomic.Int64
}

// FreePort returns a loopback port that was free a moment ago; it fails
// the test when there is none.
func FreePort(t testing.TB) int {
	t.Helper()
	return connectortest.FreePort(t)
}

// pgBin finds a PostgreSQL server program, or returns "". Debian keeps
// them off PATH in one folder per major version; the last in sort order
// is tried first.
func pgBin(name string) string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.Reverse(dirs)
	p, _ := procs.FindBinary(name, dirs...)
	return p
}

// Options change the throwaway cluster.
type Options struct {
	// Durable keeps fsync and full page writes on (the defaults of a
	// production server). Off by default: tests do not need durability
	// and run faster without it. Benchmarks that compare with a durable
	// database set it.
	Durable bool
}

// Start returns a PostgreSQL database or skips the test saying why.
func Start(t testing.TB) *Server { return StartWith(t, Options{}) }

// StartWith is Start with options; they apply only to a cluster of our
// own, not to the server PGHOST names.
func StartWith(t testing.TB, o Options) *Server {
	t.Helper()
	if os.Getenv("PGHOST") != "" {
		return external(t)
	}
	srv, stop, err := startCluster(o)
	if err != nil {
		t.Skipf("no PostgreSQL: %v", err)
	}
	t.Cleanup(stop)
	return srv
}

// StartMain starts a throwaway cluster for a whole test binary (from
// TestMain, where there is no testing.TB); stop removes it. Tests take a
// database each with NewDatabase. The error says why PostgreSQL is not
// available; PGHOST is not used.
func StartMain(o Options) (srv *Server, stop func(), err error) { return startCluster(o) }

// NewDatabase creates an empty database on the server and returns its URL.
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("test_%d", s.databases.Add(1))
	admin, err := sql.Open("pgx", s.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	u.Path = "/" + name
	return u.String()
}

// startCluster runs initdb and pg_ctl start in a temporary folder.
func startCluster(o Options) (_ *Server, stop func(), _ error) {
	initdb, pgctl := pgBin("initdb"), pgBin("pg_ctl")
	if initdb == "" || pgctl == "" {
		return nil, nil, errors.New("initdb/pg_ctl not found and PGHOST not set")
	}
	// Postgres refuses to run as root: run it as the postgres user then.
	var asUser []string
	dir, err := os.MkdirTemp("", "rekuiper-pg-")
	if err != nil {
		return nil, nil, err
	}
	fail := func(err error) (*Server, func(), error) {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return fail(errors.New("running as root and there is no postgres user"))
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			return fail(err)
		}
		asUser = []string{"runuser", "-u", "postgres", "--"}
	}
	run := func(args ...string) error {
		full := append(append([]string{}, asUser...), args...)
		cmd := exec.Command(full[0], full[1:]...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s: %w: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	data := filepath.Join(dir, "data")
	if err := run(initdb, "-D", data, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"); err != nil {
		return fail(fmt.Errorf("initdb failed: %w", err))
	}
	port, err := procs.FreePort()
	if err != nil {
		return fail(err)
	}
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1", port, dir)
	if !o.Durable {
		opts += " -c fsync=off -c full_page_writes=off"
	}
	logf := filepath.Join(dir, "log")
	start := func() error { return run(pgctl, "-D", data, "-o", opts, "-l", logf, "-w", "-t", "30", "start") }
	if err := start(); err != nil {
		return fail(fmt.Errorf("pg_ctl start failed: %w", err))
	}
	stopFast := func(t *testing.T) {
		if err := run(pgctl, "-D", data, "-m", "fast", "-w", "stop"); err != nil {
			t.Fatal(err)
		}
	}
	startAgain := func(t *testing.T) {
		if err := start(); err != nil {
			t.Fatal(err)
		}
	}
	srv := &Server{
		URL:  fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port),
		Stop: stopFast, Start: startAgain,
		Restart: func(t *testing.T) {
			stopFast(t)
			startAgain(t)
		},
	}
	return srv, func() {
		_ = run(pgctl, "-D", data, "-m", "immediate", "-w", "stop")
		os.RemoveAll(dir)
	}, nil
}

// externalPostgres creates a throwaway database on the server that the
// libpq environment (PGHOST, PGPORT, PGUSER, PGPASSWORD) names.
func external(t testing.TB) *Server {
	t.Helper()
	host, port := os.Getenv("PGHOST"), os.Getenv("PGPORT")
	if port == "" {
		port = "5432"
	}
	usr := os.Getenv("PGUSER")
	if usr == "" {
		usr = "postgres"
	}
	cred := usr
	if pw := os.Getenv("PGPASSWORD"); pw != "" {
		cred += ":" + pw
	}
	base := fmt.Sprintf("postgres://%s@%s/%%s?sslmode=disable", cred, net.JoinHostPort(host, port))
	admin, err := sql.Open("pgx", fmt.Sprintf(base, "postgres"))
	if err != nil {
		t.Skipf("no PostgreSQL at PGHOST: %v", err)
	}
	defer admin.Close()
	name := fmt.Sprintf("rekuiper_test_%d", time.Now().UnixNano())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		t.Skipf("no PostgreSQL at PGHOST: create database: %v", err)
	}
	t.Cleanup(func() {
		a, err := sql.Open("pgx", fmt.Sprintf(base, "postgres"))
		if err == nil {
			_, _ = a.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)")
			a.Close()
		}
	})
	return &Server{URL: fmt.Sprintf(base, name)}
}
