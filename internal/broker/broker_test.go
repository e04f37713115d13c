package broker

import (
	"context"
	"net"
	"testing"
	"time"
)

func TestStartListensOnLoopbackAndCloses(t *testing.T) {
	b, err := Start(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	host, _, err := net.SplitHostPort(b.Addr())
	if err != nil || host != "127.0.0.1" {
		t.Fatalf("addr = %q, want loopback", b.Addr())
	}
	c, err := net.DialTimeout("tcp", b.Addr(), time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	_ = c.Close()
	if err := b.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if !stopsAccepting(b, 5*time.Second) {
		t.Fatal("broker still accepts connections after Close")
	}
}

func TestStartFailsOnBusyAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if _, err := Start(context.Background(), ln.Addr().String()); err == nil {
		t.Fatal("Start on a busy address succeeded")
	}
}

func TestContextCancelCloses(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	b, err := Start(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	// A client connecting while the cancel closes the broker (the race
	// issue 21 found in mochi's listener).
	if c, err := net.DialTimeout("tcp", b.Addr(), 100*time.Millisecond); err == nil {
		_ = c.Close()
	}
	if !stopsAccepting(b, 5*time.Second) {
		t.Fatal("broker still listening after ctx cancel")
	}
}
