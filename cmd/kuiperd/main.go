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
	"github.com/rekuiper/rekuiper/internal/broker"
	engine "github.com/rekuiper/rekuiper/internal/daemon"
	"github.com/rekuiper/rekuiper/internal/version"
)

func main() {
	fs := flag.NewFlagSet("kuiperd", flag.ExitOnError)
	etc := fs.String("etc", "", "configuration folder (default <base>/etc, base from $KuiperBaseKey)")
	data := fs.String("data", "", "data folder holding the catalog (default <base>/data)")
	logDir := fs.String("log", "", "log folder (default <base>/log)")
	embedded := fs.String("embedded-broker", "", "also run an embedded MQTT broker on this address (e.g. 127.0.0.1:1883)")
	showVersion := fs.Bool("version", false, "print the version and commit, then exit")
	fs.Parse(os.Args[1:]) //nolint:errcheck // ExitOnError
	if *showVersion {
		fmt.Printf("kuiperd %s\n", version.Get())
		return
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if *embedded != "" {
		b, err := broker.Start(ctx, *embedded)
		if err != nil {
			fmt.Fprintf(os.Stderr, "kuiperd: embedded broker: %v\n", err)
			os.Exit(1)
		}
		defer b.Close()
		fmt.Printf("Embedded MQTT broker on %s\n", b.URL())
	}
	err := app.Run(ctx, app.Options{
		EtcDir: *etc, DataDir: *data, LogDir: *logDir,
		Environ:   os.Environ(),
		Stdout:    os.Stdout,
		NewRunner: engine.NewRunner,
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "kuiperd: %v\n", err)
		os.Exit(1)
	}
}
