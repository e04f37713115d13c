package kuiperd

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/rekuiper/rekuiper/internal/config"
)

// healthcheck asks the local daemon's GET /ping, at the REST address of the
// configuration the daemon would load (-etc, KUIPER__BASIC__RESTPORT, ...).
// It is the container image's HEALTHCHECK: the image has no shell or curl.
func healthcheck(etc string, environ []string) error {
	cfg, err := config.Load(config.LoadOptions{EtcDir: etc, Environ: environ})
	if err != nil {
		return err
	}
	host := cfg.Basic.RestIP
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	scheme := "http"
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if cfg.Basic.RestTLS.Certfile != "" {
		scheme = "https"
		// The probe checks liveness of its own host's daemon, whose
		// certificate need not name the loopback address.
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // loopback liveness probe
	}
	url := scheme + "://" + net.JoinHostPort(host, strconv.Itoa(cfg.Basic.RestPort)) + "/ping"
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	resp.Body.Close()
	// 401: authentication is on; the daemon answered, so it is alive.
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusUnauthorized {
		return fmt.Errorf("healthcheck: GET %s: %s", url, resp.Status)
	}
	return nil
}
