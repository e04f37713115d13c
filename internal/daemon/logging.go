package daemon

import (
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/config"
	"github.com/rekuiper/rekuiper/internal/rule"
)

func newLogger(cfg *config.Config, stdout io.Writer) (*slog.Logger, func(), error) {
	level := slog.LevelInfo
	switch strings.ToLower(cfg.Basic.LogLevel) {
	case "debug", "trace":
		level = slog.LevelDebug
	case "warn", "warning":
		level = slog.LevelWarn
	case "error", "fatal", "panic":
		level = slog.LevelError
	}
	if cfg.Basic.Debug {
		level = slog.LevelDebug
	}
	var writers []io.Writer
	closeFn := func() {}
	if cfg.Basic.ConsoleLog {
		writers = append(writers, stdout)
	}
	if cfg.Basic.FileLog {
		rot, err := newRotator(filepath.Join(cfg.Paths.Log, "stream.log"), cfg.Basic.RotateSize, cfg.Basic.RotateCount)
		if err != nil {
			return nil, nil, err
		}
		rot.rotateEvery(time.Duration(cfg.Basic.RotateTime)*time.Hour, clock.Wall{})
		writers = append(writers, rot)
		closeFn = func() { rot.Close() } //nolint:errcheck // at exit
	}
	var sys slog.Handler
	if cfg.Basic.Syslog.Enable {
		h, closeSys, err := newSyslogHandler(cfg.Basic.Syslog)
		if err != nil {
			closeFn()
			return nil, nil, err
		}
		sys = h
		closeFile := closeFn
		closeFn = func() { closeFile(); closeSys() }
		if len(writers) == 0 {
			return slog.New(sys), closeFn, nil
		}
	}
	if len(writers) == 0 {
		return slog.New(slog.DiscardHandler), closeFn, nil
	}
	noTime := cfg.Basic.LogDisableTimestamp
	hopts := &slog.HandlerOptions{Level: level, ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if noTime && len(groups) == 0 && a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return maskAttr(a)
	}}
	var h slog.Handler = slog.NewTextHandler(io.MultiWriter(writers...), hopts)
	if sys != nil {
		h = slog.NewMultiHandler(h, sys)
	}
	return slog.New(h), closeFn, nil
}

// maskAttr masks the secrets a log value may carry (URL passwords,
// credential headers and parameters, secret properties; see
// rule.MaskText), whatever logged it.
func maskAttr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		if m := rule.MaskText(v.String()); m != v.String() {
			a.Value = slog.StringValue(m)
		}
	case slog.KindAny:
		var s string
		switch x := v.Any().(type) {
		case error:
			s = x.Error()
		case map[string]any:
			s = fmt.Sprint(rule.MaskProps(x))
			a.Value = slog.StringValue(s)
			return a
		default:
			s = fmt.Sprint(x)
		}
		if m := rule.MaskText(s); m != s {
			a.Value = slog.StringValue(m)
		}
	}
	return a
}
