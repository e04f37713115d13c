package guard

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestName(t *testing.T) {
	for _, ok := range []string{"a", "rule-1", "my_stream", "demo.v2", "mqtt:local", "user@site", "温度", ".hidden", strings.Repeat("x", MaxNameLen)} {
		if err := Name("rule id", ok); err != nil {
			t.Errorf("Name(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", "a/b", `a\b`, "../../x", "a b", "a\tb", "a\x00b", "a\x7fb", "a#b", "a?b", "a%2Fb", strings.Repeat("x", MaxNameLen+1), "a\xffb"} {
		err := Name("stream", bad)
		if !errors.Is(err, ErrName) || !strings.Contains(err.Error(), "stream") {
			t.Errorf("Name(%q) = %v, want ErrName naming the stream", bad, err)
		}
	}
	for _, bad := range []string{"a\xffb", "\xc3", "a\uFFFDb"} {
		if err := Name("rule id", bad); !errors.Is(err, ErrName) || !strings.Contains(err.Error(), "is not valid UTF-8") {
			t.Errorf("Name(%q) = %v, want 'is not valid UTF-8'", bad, err)
		}
	}
}

func TestPathElemStaysInFolder(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"", ".", "..", "../../../../outside/x", `..\..\x`, "a/b", "a\x00b", "ok-name", ".hidden"} {
		e := PathElem(name)
		if e == "" || e == "." || e == ".." || strings.ContainsAny(e, `/\`+"\x00") {
			t.Errorf("PathElem(%q) = %q: not one path element", name, e)
		}
		if got := filepath.Dir(filepath.Join(dir, e)); got != dir {
			t.Errorf("PathElem(%q) = %q escapes to %s", name, e, got)
		}
		if Name("n", name) == nil && e != name {
			t.Errorf("PathElem(%q) = %q, a valid name must be kept", name, e)
		}
		if Name("n", name) != nil && Name("n", e) == nil {
			t.Errorf("PathElem(%q) = %q collides with the valid names", name, e)
		}
	}
	if PathElem("a/b") == PathElem("a%2Fb") {
		t.Errorf("two different names encode alike")
	}
}

func TestPath(t *testing.T) {
	base := t.TempDir()
	data := filepath.Join(base, "data")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{data, outside, filepath.Join(data, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(data, "link")); err != nil {
		t.Fatal(err)
	}
	g := New(Policy{Roots: []string{data}})
	for _, p := range []string{data, filepath.Join(data, "sub"), filepath.Join(data, "sub", "new", "file.json"), filepath.Join(data, "x", "..", "y")} {
		if err := g.Path("path", p); err != nil {
			t.Errorf("Path(%s) = %v, want nil", p, err)
		}
	}
	for _, p := range []string{outside, "/etc/shadow", filepath.Join(data, "..", "outside"), filepath.Join(data, "link"), filepath.Join(data, "link", "new.txt"), filepath.Join(data, "sub", "..", "..", "outside", "f"), base} {
		err := g.Path("moveTo", p)
		if !errors.Is(err, ErrOutside) || !strings.Contains(err.Error(), "moveTo") {
			t.Errorf("Path(%s) = %v, want ErrOutside naming moveTo", p, err)
		}
	}
	open := New(Policy{AllowExternalFiles: true, Roots: []string{data}})
	if err := open.Path("path", outside); err != nil {
		t.Errorf("allowExternalFileAccess true: Path(%s) = %v", outside, err)
	}
	var none *Guard
	if err := none.Path("path", "/etc/shadow"); err != nil {
		t.Errorf("nil guard: %v", err)
	}
}

func TestPrivateAddr(t *testing.T) {
	for _, s := range []string{"127.0.0.1", "127.9.9.9", "::1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "fe80::1", "fc00::1", "fd12::1", "0.0.0.0", "::", "224.0.0.1", "ff02::1", "100.100.100.200", "::ffff:127.0.0.1", "::ffff:169.254.169.254", "255.255.255.255", "64:ff9b::7f00:1"} {
		if !PrivateAddr(netip.MustParseAddr(s)) {
			t.Errorf("PrivateAddr(%s) = false, want true", s)
		}
	}
	for _, s := range []string{"8.8.8.8", "1.1.1.1", "2001:4860:4860::8888", "93.184.216.34"} {
		if PrivateAddr(netip.MustParseAddr(s)) {
			t.Errorf("PrivateAddr(%s) = true, want false", s)
		}
	}
}

// TestDialRefusesNameResolvingToLoopback dials a real listener through the
// name "localhost": the check is on the resolved address, not on the text.
func TestDialRefusesNameResolvingToLoopback(t *testing.T) {
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits++ }))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	for _, host := range []string{"localhost", "127.0.0.1", "[::ffff:127.0.0.1]"} {
		url := "http://" + net.JoinHostPort(strings.Trim(host, "[]"), port) + "/"
		_, err := New(Policy{}).HTTPClient(0).Get(url)
		if !errors.Is(err, ErrBlockedAddress) {
			t.Errorf("GET %s with private nets disabled: err = %v, want ErrBlockedAddress", url, err)
		}
	}
	if hits != 0 {
		t.Fatalf("the server was reached %d times", hits)
	}
	resp, err := New(Policy{AllowPrivateNet: true}).HTTPClient(0).Get("http://" + net.JoinHostPort("localhost", port) + "/")
	if err != nil {
		t.Fatalf("private nets enabled: %v", err)
	}
	resp.Body.Close()
	if hits != 1 {
		t.Fatalf("hits = %d, want 1", hits)
	}
	if _, err := New(Policy{}).DialContext(context.Background(), "tcp", srv.Listener.Addr().String()); !errors.Is(err, ErrBlockedAddress) {
		t.Fatalf("DialContext: %v", err)
	}
}
