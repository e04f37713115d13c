package kuiperd

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/rekuiper/rekuiper/internal/procs"
	"github.com/rekuiper/rekuiper/sdk"
)

func TestHealthcheck(t *testing.T) {
	port, err := procs.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	etc := t.TempDir()
	environ := []string{"KUIPER__BASIC__RESTPORT=" + strconv.Itoa(port), "KUIPER__BASIC__RESTIP=127.0.0.1", "KUIPER__SOURCE__HTTPSERVERPORT=0"}
	if err := healthcheck(etc, environ); err == nil {
		t.Fatal("healthcheck passed with no daemon")
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan string, 1), make(chan error, 1)
	go func() {
		done <- sdk.Run(ctx, sdk.Options{EtcDir: etc, DataDir: t.TempDir(), LogDir: t.TempDir(), Environ: environ,
			Stdout: &strings.Builder{}, Ready: func(a string) { ready <- a }})
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("daemon: %v", err)
	}
	if err := healthcheck(etc, environ); err != nil {
		t.Fatalf("healthcheck of a running daemon: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := healthcheck(etc, environ); err == nil {
		t.Fatal("healthcheck passed after the daemon stopped")
	}
}
