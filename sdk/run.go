package sdk

import (
	"context"
	"errors"
	"io"
	"os"

	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/daemon"
	"github.com/rekuiper/rekuiper/internal/function"
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
// start (configuration, catalog, a refused registration) or fails. It does
// not touch the process (no flags, no signals, no exit): for embedding and
// tests. Package kuiperd's Main is the whole main of a custom daemon.
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
