package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rekuiper/rekuiper/internal/client"
)

const queryUsage = "kuiper query [-host H] [-port P]"

// queryCmd is the interactive query shell: each line read is a SELECT run
// as a temporary rule whose memory sink publishes to a topic of this
// shell, which reads it back from kuiperd over the same REST connection
// (GET /memory/events, server-sent events). Results print as they arrive;
// the next line replaces the query; "exit", "quit" or end of input ends
// the shell and drops the rule.
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
// event reader.
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
	out := &syncWriter{w: stdout}
	id := fmt.Sprintf("kuiper_query_%d", os.Getpid())
	topic := "kuiper/query/" + strconv.Itoa(os.Getpid())

	// Subscribe before the first rule exists, so that no result is missed.
	evCtx, stopEvents := context.WithCancel(ctx)
	failed := make(chan error, 1)
	var reader sync.WaitGroup
	reader.Add(1)
	go func() {
		defer reader.Done()
		// The daemon ends an event stream after limits.eventStreamLifetime
		// or a quiet limits.eventStreamIdleTimeout: open the next one.
		for evCtx.Err() == nil {
			err := c.Events(evCtx, "/memory/events?topic="+url.QueryEscape(topic), func(event, data string) {
				if event == "dropped" {
					out.printf("kuiper: %s results dropped (the shell fell behind)\n", data)
					return
				}
				out.printf("%s\n", data)
			})
			if err != nil && evCtx.Err() == nil {
				failed <- err
				return
			}
		}
	}()
	defer func() {
		stopEvents()
		reader.Wait()
	}()
	select {
	case err := <-failed:
		return fmt.Errorf("read query results: %w", err)
	case <-time.After(200 * time.Millisecond): // the stream is open
	}

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

	sc := bufio.NewScanner(stdin)
	out.printf("kuiper > ")
	for sc.Scan() {
		select {
		case err := <-failed:
			return fmt.Errorf("read query results: %w", err)
		default:
		}
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
			"actions": []any{map[string]any{"memory": map[string]any{"topic": topic}}},
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
