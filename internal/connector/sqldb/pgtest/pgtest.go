// Package pgtest gives tests a throwaway PostgreSQL database: a private
// cluster started with initdb and pg_ctl on an ephemeral port (as the
// postgres user when running as root), or a throwaway database on the
// server named by PGHOST/PGPORT.
package pgtest

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/procs"
)

// Server is a PostgreSQL database for one test: a throwaway cluster
// started with initdb/pg_ctl, or a throwaway database on the server named
// by PGHOST/PGPORT.
type Server struct {
	URL     string
	Restart func(t *testing.T) // nil when the server is not ours
}

// FreePort returns a loopback port that was free a moment ago; it fails
// the test when there is none.
func FreePort(t testing.TB) int {
	t.Helper()
	port, err := procs.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
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
	initdb, pgctl := pgBin("initdb"), pgBin("pg_ctl")
	if initdb == "" || pgctl == "" {
		t.Skip("no PostgreSQL: initdb/pg_ctl not found and PGHOST not set")
	}
	// Postgres refuses to run as root: run it as the postgres user then.
	var asUser []string
	dir, err := os.MkdirTemp("", "rekuiper-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Skip("no PostgreSQL: running as root and there is no postgres user")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
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
		t.Skipf("no PostgreSQL: initdb failed: %v", err)
	}
	port := FreePort(t)
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1", port, dir)
	if !o.Durable {
		opts += " -c fsync=off -c full_page_writes=off"
	}
	logf := filepath.Join(dir, "log")
	if err := run(pgctl, "-D", data, "-o", opts, "-l", logf, "-w", "-t", "30", "start"); err != nil {
		t.Skipf("no PostgreSQL: pg_ctl start failed: %v", err)
	}
	t.Cleanup(func() { _ = run(pgctl, "-D", data, "-m", "immediate", "-w", "stop") })
	return &Server{
		URL: fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port),
		Restart: func(t *testing.T) {
			if err := run(pgctl, "-D", data, "-m", "fast", "-w", "stop"); err != nil {
				t.Fatal(err)
			}
			if err := run(pgctl, "-D", data, "-o", opts, "-l", logf, "-w", "-t", "30", "start"); err != nil {
				t.Fatal(err)
			}
		},
	}
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
