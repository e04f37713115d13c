package connectortest

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestStartProcReportsAnEarlyExit(t *testing.T) {
	p, err := StartProc("sh", exec.Command("sh", "-c", "echo bye; exit 3"), 10*time.Second, FreePort(t))
	if err == nil || !strings.Contains(err.Error(), "sh did not start") {
		t.Fatalf("err = %v", err)
	}
	<-p.Exited
	if !strings.Contains(p.Log.String(), "bye") {
		t.Fatalf("log %q", p.Log.String())
	}
	p.Stop(time.Second) // exited already: returns at once
}

func TestStopOfAProcThatNeverStarted(t *testing.T) {
	p, err := StartProc("nothing", exec.Command("/nonexistent/binary"), time.Second)
	if err == nil {
		t.Fatal("started")
	}
	p.Stop(time.Second)
}
