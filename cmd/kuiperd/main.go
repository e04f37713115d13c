// Command kuiperd is the rekuiper daemon: the REST API over a durable
// catalog, running the rules it holds.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/rekuiper/rekuiper/internal/app"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	fs := flag.NewFlagSet("kuiperd", flag.ExitOnError)
	etc := fs.String("etc", "", "configuration folder (default <base>/etc, base from $KuiperBaseKey)")
	data := fs.String("data", "", "data folder holding the catalog (default <base>/data)")
	logDir := fs.String("log", "", "log folder (default <base>/log)")
	fs.Parse(os.Args[1:]) //nolint:errcheck // ExitOnError

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	err := app.Run(ctx, app.Options{
		EtcDir: *etc, DataDir: *data, LogDir: *logDir,
		Environ:   os.Environ(),
		Stdout:    os.Stdout,
		NewRunner: newRunner,
		Version:   version,
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "kuiperd: %v\n", err)
		os.Exit(1)
	}
}
