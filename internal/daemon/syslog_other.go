//go:build windows || plan9

package daemon

import (
	"errors"
	"log/slog"

	"github.com/rekuiper/rekuiper/internal/config"
)

// newSyslogHandler refuses basic.syslog where Go has no syslog client.
func newSyslogHandler(config.Syslog) (slog.Handler, func(), error) {
	return nil, nil, errors.New("basic.syslog.enable: syslog is not available on this system; set it to false")
}
