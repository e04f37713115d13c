package guard

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// Non-public ranges that the netip predicates do not cover.
var extraBlocked = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),     // "this network"
	netip.MustParsePrefix("100.64.0.0/10"), // carrier-grade NAT; holds some clouds' metadata services
	netip.MustParsePrefix("192.0.0.0/24"),  // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"), // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),   // reserved, and broadcast
	netip.MustParsePrefix("64:ff9b::/96"),  // NAT64: would reach IPv4 addresses through a translator
	netip.MustParsePrefix("64:ff9b:1::/48"),
}

// PrivateAddr reports whether ip is an address the network guard refuses
// when private networks are not enabled: loopback, private (RFC 1918,
// fc00::/7), link-local (169.254.0.0/16, which holds cloud metadata
// services, and fe80::/10), unspecified, multicast, and the other
// non-public ranges listed in docs/security.md.
func PrivateAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() {
		return true
	}
	if ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() {
		return true
	}
	for _, p := range extraBlocked {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// control is a net.Dialer Control function: it runs after name resolution,
// on the address about to be connected, so a host name that resolves to a
// blocked address is refused as well as the address written out.
func control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("dial %s %s: %w: not an IP address", network, address, ErrBlockedAddress)
	}
	if PrivateAddr(ap.Addr()) {
		return fmt.Errorf("dial %s: %w: %s is not a public address (basic.enablePrivateNet is false)", address, ErrBlockedAddress, ap.Addr())
	}
	return nil
}

// Dialer returns a dialer for outbound connections made on a client's
// behalf; with private networks disabled it refuses blocked addresses at
// connect time.
func (g *Guard) Dialer() *net.Dialer {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	if g != nil && !g.p.AllowPrivateNet {
		d.Control = control
	}
	return d
}

// DialContext dials through Dialer.
func (g *Guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return g.Dialer().DialContext(ctx, network, addr)
}

// Transport returns a clone of http.DefaultTransport that dials through
// Dialer. Proxies from the environment are kept; the guard then checks the
// proxy's address, and the proxy decides what it forwards to.
func (g *Guard) Transport() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = g.DialContext
	return tr
}

// HTTPClient returns a client over Transport with the given overall
// timeout (0: none). Redirects are followed by the same transport, so a
// redirect to a blocked address is refused too.
func (g *Guard) HTTPClient(timeout time.Duration) *http.Client {
	return &http.Client{Transport: g.Transport(), Timeout: timeout}
}
