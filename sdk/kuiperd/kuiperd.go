// Package kuiperd is the main of a kuiperd, stock or custom: the daemon's
// command line, signals and exit status around sdk.Run. The stock daemon
// (cmd/kuiperd) is
//
//	func main() { kuiperd.Main() }
//
// and a daemon with extensions passes their Register functions, which is
// the main that `kuiper build` writes:
//
//	func main() { kuiperd.Main(myextension.Register) }
package kuiperd

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/rekuiper/rekuiper/internal/broker"
	"github.com/rekuiper/rekuiper/internal/rule"
	"github.com/rekuiper/rekuiper/internal/version"
	"github.com/rekuiper/rekuiper/sdk"
)

// Main is the whole main of a kuiperd: it parses kuiperd's command line
// (-etc, -data, -log, -embedded-broker, -version, -healthcheck), runs the
// daemon with the given extensions (applied in order after the built-ins)
// until SIGTERM or SIGINT, and exits 1 on failure. It does not return when
// the daemon fails.
func Main(register ...sdk.RegisterFunc) {
	if err := run(os.Args[1:], register); err != nil {
		fmt.Fprintf(os.Stderr, "kuiperd: %s\n", rule.MaskText(err.Error()))
		os.Exit(1)
	}
}

func run(args []string, register []sdk.RegisterFunc) error {
	fs := flag.NewFlagSet("kuiperd", flag.ExitOnError)
	etc := fs.String("etc", "", "configuration folder (default <base>/etc, base from $KuiperBaseKey)")
	data := fs.String("data", "", "data folder holding the catalog (default <base>/data)")
	logDir := fs.String("log", "", "log folder (default <base>/log)")
	embedded := fs.String("embedded-broker", "", "also run an embedded MQTT broker on this address (e.g. 127.0.0.1:1883)")
	showVersion := fs.Bool("version", false, "print the version and commit, then exit")
	health := fs.Bool("healthcheck", false, "exit 0 when the local daemon answers GET /ping, 1 otherwise (for container health checks)")
	fs.Parse(args) //nolint:errcheck // ExitOnError
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *showVersion {
		fmt.Printf("kuiperd %s\n", version.Get())
		return nil
	}
	if *health {
		return healthcheck(*etc, os.Environ())
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if *embedded != "" {
		b, err := broker.Start(ctx, *embedded)
		if err != nil {
			return fmt.Errorf("embedded broker: %w", err)
		}
		defer b.Close()
		fmt.Printf("Embedded MQTT broker on %s\n", b.URL())
	}
	return sdk.Run(ctx, sdk.Options{EtcDir: *etc, DataDir: *data, LogDir: *logDir, Register: register})
}
