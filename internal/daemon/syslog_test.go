//go:build !windows && !plan9

package daemon

import (
	"bytes"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/config"
)

// TestSyslog checks that basic.syslog sends records at or above its level
// to a syslog server (a UDP listener here), with the tag, while the
// console still gets every record.
func TestSyslog(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	cfg := config.Default()
	cfg.Basic.FileLog, cfg.Basic.ConsoleLog = false, true
	cfg.Basic.Syslog = config.Syslog{Enable: true, Network: "udp", Address: pc.LocalAddr().String(), Level: "warn", Tag: "kuipertest"}
	var console bytes.Buffer
	logger, closeLog, err := newLogger(cfg, &console)
	if err != nil {
		t.Fatal(err)
	}
	defer closeLog()
	logger.Info("below the syslog level")
	logger.Warn("disk almost full", "free", 3, "url", "tcp://u:sysPW@h:1883", "err", errors.New("Authorization: Bearer sysTOK refused"))

	if err := pc.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	n, _, err := pc.ReadFrom(buf)
	if err != nil {
		t.Fatal(err)
	}
	got := string(buf[:n])
	// <28> is facility daemon (3) * 8 + severity warning (4).
	if !strings.HasPrefix(got, "<28>") || !strings.Contains(got, "kuipertest") || !strings.Contains(got, `msg="disk almost full" free=3`) {
		t.Fatalf("syslog packet %q", got)
	}
	if strings.Contains(got, "sysPW") || strings.Contains(got, "sysTOK") || !strings.Contains(got, "tcp://u:******@h:1883") {
		t.Fatalf("syslog packet shows a secret: %q", got)
	}
	if strings.Contains(got, "time=") {
		t.Fatalf("syslog packet carries slog's time: %q", got)
	}
	if c := console.String(); !strings.Contains(c, "below the syslog level") || !strings.Contains(c, "disk almost full") {
		t.Fatalf("console %q", c)
	}
}

func TestSyslogBadLevel(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	cfg := config.Default()
	cfg.Basic.FileLog = false
	cfg.Basic.Syslog = config.Syslog{Enable: true, Network: "udp", Address: pc.LocalAddr().String(), Level: "loud"}
	if _, _, err := newLogger(cfg, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), `basic.syslog.level "loud"`) {
		t.Fatalf("bad level: %v", err)
	}
}
