package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/rekuiper/rekuiper/internal/client"
)

const queryUsage = "kuiper query [-host H] [-port P]"

// queryCmd is the interactive query shell: each line read is a SELECT run
// as a temporary rule whose results kuiperd posts back to the shell (a rest
// sink aimed at a listener the shell opens on the address it reaches
// kuiperd from). Results print as they arrive; the next line replaces the
// query; "exit", "quit" or end of input ends the shell and drops the rule.
func queryCmd(stdin io.Reader) func(args []string, stdout, stderr io.Writer) int {
	return func(args []string, stdout, stderr io.Writer) int {
		return remote(args, stdout, stderr, queryUsage, func(ctx context.Context, c *client.Client, ra remoteArgs) error {
			if len(ra.pos) != 0 {
				return usageError("query takes no arguments; type SQL at the prompt")
			}
			return runShell(ctx, c, stdin, stdout)
		})
	}
}

// syncWriter serializes the prompt and the results printed by the
// listener's goroutines.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) printf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.w, format, args...)
}

func runShell(ctx context.Context, c *client.Client, stdin io.Reader, stdout io.Writer) error {
	if err := c.Ping(ctx); err != nil {
		return err
	}
	ip, err := localIPFor(c.BaseURL())
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return fmt.Errorf("listen for query results: %w", err)
	}
	out := &syncWriter{w: stdout}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
		if err == nil {
			out.printf("%s\n", strings.TrimSpace(string(b)))
		}
	})}
	go srv.Serve(ln) //nolint:errcheck // ends with Close below
	defer srv.Close()

	id := fmt.Sprintf("kuiper_query_%d", os.Getpid())
	dropRule := func() {
		if _, err := c.DeleteRule(context.Background(), id); err != nil {
			var api *client.APIError
			if !errors.As(err, &api) || api.Status != http.StatusNotFound {
				out.printf("kuiper: drop query rule: %v\n", err)
			}
		}
	}
	defer dropRule()
	dropRule() // a rule left by an earlier shell of this pid

	sinkURL := "http://" + ln.Addr().String() + "/"
	sc := bufio.NewScanner(stdin)
	out.printf("kuiper > ")
	for sc.Scan() {
		line := strings.TrimSuffix(strings.TrimSpace(sc.Text()), ";")
		switch strings.ToLower(line) {
		case "":
			out.printf("kuiper > ")
			continue
		case "exit", "quit":
			return nil
		}
		dropRule()
		def, _ := json.Marshal(map[string]any{
			"id": id, "sql": line,
			"actions": []any{map[string]any{"rest": map[string]any{"url": sinkURL, "method": "post", "sendSingle": true}}},
		})
		if _, err := c.CreateRule(ctx, def); err != nil {
			out.printf("kuiper: %v\n", err)
		} else {
			out.printf("query is submitted; results print as they arrive, enter another query or exit\n")
		}
		out.printf("kuiper > ")
	}
	out.printf("\n")
	return sc.Err()
}

// localIPFor is the local address this host uses to reach the daemon at
// base, so that the daemon can reach the shell's listener.
func localIPFor(base string) (string, error) {
	host := strings.TrimPrefix(strings.TrimPrefix(base, "http://"), "https://")
	conn, err := net.Dial("udp", host)
	if err != nil {
		return "", fmt.Errorf("find the local address towards %s: %w", host, err)
	}
	defer conn.Close()
	return conn.LocalAddr().(*net.UDPAddr).IP.String(), nil
}
