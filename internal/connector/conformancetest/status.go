package conformancetest

import (
	"strings"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/sdk/sdktest"
)

// ConnStatus is what a sink that reports its connection implements (the
// engine's stream.ConnStatus).
type ConnStatus interface {
	Status() (state string, lastConnected, lastDisconnected time.Time, lastErr string)
}

// ClosedPort is sdktest.ClosedPort.
func ClosedPort(t testing.TB) string {
	t.Helper()
	return sdktest.ClosedPort(t)
}

// CheckStatus asserts that s reports its connection status in state, with
// a last error containing wantErr (empty: no error, as while connected),
// and a disconnect time when it reports an error.
func CheckStatus(t testing.TB, s any, state, wantErr string) {
	t.Helper()
	cs, ok := s.(ConnStatus)
	if !ok {
		t.Fatalf("%T does not report its connection status", s)
	}
	got, conn, disc, msg := cs.Status()
	if got != state {
		t.Fatalf("connection status %q (last error %q), want %q", got, msg, state)
	}
	if wantErr == "" {
		if msg != "" {
			t.Fatalf("connection status %q with last error %q, want none", got, msg)
		}
		if state == "connected" && conn.IsZero() {
			t.Fatal("connected with no last connect time")
		}
		return
	}
	if !strings.Contains(msg, wantErr) {
		t.Fatalf("last error %q, want one containing %q", msg, wantErr)
	}
	if disc.IsZero() {
		t.Fatalf("last error %q with no disconnect time", msg)
	}
}
