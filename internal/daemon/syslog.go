//go:build !windows && !plan9

package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"log/syslog"
	"strings"

	"github.com/rekuiper/rekuiper/internal/config"
)

// syslogHandler sends log records to syslog (basic.syslog): each record is
// formatted as slog text without the time (syslog stamps it), with its
// secrets masked as in the log file, and sent at the syslog severity of its
// level. Records below basic.syslog.level are
// not sent.
type syslogHandler struct {
	min slog.Level
	// by severity: debug, info, warning, err
	out [4]slog.Handler
}

// newSyslogHandler connects to syslog: the local daemon when address is
// empty, else network (udp, tcp, unix) at address.
func newSyslogHandler(c config.Syslog) (slog.Handler, func(), error) {
	tag := c.Tag
	if tag == "" {
		tag = "kuiper"
	}
	w, err := syslog.Dial(c.Network, c.Address, syslog.LOG_INFO|syslog.LOG_DAEMON, tag)
	if err != nil {
		return nil, nil, fmt.Errorf("basic.syslog: connect to syslog %s %q: %w", c.Network, c.Address, err)
	}
	min, err := syslogLevel(c.Level)
	if err != nil {
		w.Close()
		return nil, nil, err
	}
	h := &syslogHandler{min: min}
	send := []func(string) error{w.Debug, w.Info, w.Warning, w.Err}
	noTime := func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) == 0 && a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return maskAttr(a)
	}
	for i, f := range send {
		h.out[i] = slog.NewTextHandler(syslogWriter(f), &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: noTime})
	}
	return h, func() { w.Close() }, nil //nolint:errcheck // at exit
}

// syslogLevel reads basic.syslog.level (eKuiper's level names).
func syslogLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "debug", "trace":
		return slog.LevelDebug, nil
	case "", "info":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error", "fatal", "panic":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("basic.syslog.level %q: want debug, info, warn, error, fatal or panic", s)
}

// syslogWriter adapts one severity's send function to io.Writer; the text
// handler writes each record in one call.
type syslogWriter func(string) error

func (f syslogWriter) Write(p []byte) (int, error) {
	if err := f(strings.TrimSuffix(string(p), "\n")); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (h *syslogHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.min }

func (h *syslogHandler) Handle(ctx context.Context, r slog.Record) error {
	i := 0
	switch {
	case r.Level >= slog.LevelError:
		i = 3
	case r.Level >= slog.LevelWarn:
		i = 2
	case r.Level >= slog.LevelInfo:
		i = 1
	}
	return h.out[i].Handle(ctx, r)
}

func (h *syslogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	n := &syslogHandler{min: h.min}
	for i := range h.out {
		n.out[i] = h.out[i].WithAttrs(attrs)
	}
	return n
}

func (h *syslogHandler) WithGroup(name string) slog.Handler {
	n := &syslogHandler{min: h.min}
	for i := range h.out {
		n.out[i] = h.out[i].WithGroup(name)
	}
	return n
}
