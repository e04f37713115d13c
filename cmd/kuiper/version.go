package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/rekuiper/rekuiper/internal/version"
)

// runVersion prints the CLI's version and, when the daemon answers, the
// daemon's (GET /).
func runVersion(args []string, stdout, stderr io.Writer) int {
	ra, err := parseRemote(args)
	if err != nil {
		fmt.Fprintf(stderr, "kuiper version: %v\n", err)
		return 2
	}
	fmt.Fprintf(stdout, "kuiper %s\n", version.Get())
	c, err := newClient(ra)
	if err != nil {
		fmt.Fprintf(stderr, "kuiper version: %v\n", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var info struct{ Version, Commit string }
	if err := c.JSON(ctx, "GET", "/", nil, &info); err != nil {
		fmt.Fprintf(stdout, "kuiperd at %s: not reachable (%v)\n", c.BaseURL(), err)
		return 0
	}
	commit := info.Commit
	if commit == "" {
		commit = "unknown"
	}
	fmt.Fprintf(stdout, "kuiperd at %s: %s (commit %s)\n", c.BaseURL(), info.Version, commit)
	return 0
}
