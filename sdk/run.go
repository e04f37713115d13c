package sdk

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/rekuiper/rekuiper/internal/broker"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/daemon"
	"github.com/rekuiper/rekuiper/internal/function"
	"github.com/rekuiper/rekuiper/internal/rule"
	"github.com/rekuiper/rekuiper/internal/version"
)

// RegisterFunc registers one extension module's connectors and functions.
type RegisterFunc func(r *Registry) error

// Options configure Run.
type Options struct {
	// EtcDir, DataDir and LogDir override the folders under the base
	// folder ($KuiperBaseKey or the working directory): etc/, data/, log/.
	EtcDir, DataDir, LogDir string
	// Environ is the process environment, read for KUIPER__SECTION__KEY
	// overrides; nil means os.Environ().
	Environ []string
	// Stdout receives the listening banner and the console log; nil means
	// os.Stdout.
	Stdout io.Writer
	// Register lists the extensions, applied in order after the built-ins.
	// The first error stops the start.
	Register []RegisterFunc
	// Ready, when set, is called with the REST address once it accepts
	// connections.
	Ready func(addr string)
}

// Run runs kuiperd with the extensions of opts.Register until ctx ends,
// then shuts down gracefully. It returns an error when the daemon cannot
// start (configuration, catalog, a refused registration) or fails.
func Run(ctx context.Context, opts Options) error {
	if opts.Environ == nil {
		opts.Environ = os.Environ()
	}
	if opts.Stdout == nil {
		opts.Stdout = os.Stdout
	}
	regs := opts.Register
	extend := func(conns *connector.Registry, funcs *function.Registry) error {
		r := &Registry{conns: conns, funcs: funcs}
		for _, reg := range regs {
			if reg == nil {
				return errors.New("nil register function")
			}
			if err := reg(r); err != nil {
				return err
			}
		}
		return nil
	}
	return daemon.Run(ctx, daemon.RunOptions{
		EtcDir: opts.EtcDir, DataDir: opts.DataDir, LogDir: opts.LogDir,
		Environ: opts.Environ, Stdout: opts.Stdout,
		Extend: extend,
		Ready:  opts.Ready,
	})
}

// Main is the whole main of a kuiperd: it parses kuiperd's command line
// (-etc, -data, -log, -embedded-broker, -version, -healthcheck), runs the
// daemon with the given extensions until SIGTERM or SIGINT, and exits 1 on
// failure. A custom daemon is
//
//	func main() { sdk.Main(myextension.Register) }
func Main(register ...RegisterFunc) {
	if err := runMain(os.Args[1:], register); err != nil {
		fmt.Fprintf(os.Stderr, "kuiperd: %s\n", rule.MaskText(err.Error()))
		os.Exit(1)
	}
}

func runMain(args []string, register []RegisterFunc) error {
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
	return Run(ctx, Options{EtcDir: *etc, DataDir: *data, LogDir: *logDir, Register: register})
}
