package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rekuiper/rekuiper/internal/client"
	"github.com/rekuiper/rekuiper/internal/config"
)

// remoteArgs are the parsed arguments of a command that talks to kuiperd:
// positional words plus flags, which may appear anywhere.
type remoteArgs struct {
	pos   []string
	flags map[string]string
}

// valueFlags take a value; every other flag is a switch.
var valueFlags = map[string]bool{"host": true, "port": true, "f": true, "r": true, "p": true, "s": true, "token": true, "cacert": true}

// Environment variables read by every command that talks to kuiperd.
const (
	// TokenEnv holds the JWT sent when -token is not given.
	TokenEnv = "KUIPER_TOKEN"
	// CACertEnv names a PEM file of CA certificates trusted for HTTPS when
	// -cacert is not given.
	CACertEnv = "KUIPER_CACERT"
)

func parseRemote(args []string) (remoteArgs, error) {
	ra := remoteArgs{flags: map[string]string{}}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if len(a) < 2 || a[0] != '-' || a == "--" {
			ra.pos = append(ra.pos, a)
			continue
		}
		name := strings.TrimLeft(a, "-")
		if k, v, ok := strings.Cut(name, "="); ok {
			ra.flags[k] = v
			continue
		}
		if valueFlags[name] {
			if i+1 >= len(args) {
				return ra, fmt.Errorf("flag -%s needs a value", name)
			}
			ra.flags[name] = args[i+1]
			i++
			continue
		}
		ra.flags[name] = "true"
	}
	return ra, nil
}

func (ra remoteArgs) has(name string) bool {
	v, ok := ra.flags[name]
	if !ok {
		return false
	}
	b, err := strconv.ParseBool(v)
	return err != nil || b
}

// newClient resolves the daemon address: -host/-port flags over
// etc/client.yaml (found through $KuiperBaseKey) over 127.0.0.1:9081. It
// speaks HTTPS with -https or a CA file (-cacert or $KUIPER_CACERT) and
// sends the token of -token or $KUIPER_TOKEN.
func newClient(ra remoteArgs) (*client.Client, error) {
	environ := os.Environ()
	paths := config.ResolvePaths(config.LoadOptions{Environ: environ})
	cc, _, err := config.LoadClient(paths.ClientFile(), environ)
	if err != nil {
		return nil, err
	}
	host, port := cc.Basic.Host, cc.Basic.Port
	if h := ra.flags["host"]; h != "" {
		host = h
	}
	if p := ra.flags["port"]; p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 || n > 65535 {
			return nil, fmt.Errorf("invalid -port %q", p)
		}
		port = n
	}
	scheme, hc := "http", (*http.Client)(nil)
	cafile := ra.flags["cacert"]
	if cafile == "" {
		cafile = os.Getenv(CACertEnv)
	}
	if ra.has("https") || cafile != "" {
		scheme = "https"
		tc := &tls.Config{MinVersion: tls.VersionTLS12}
		if cafile != "" {
			pem, err := os.ReadFile(cafile)
			if err != nil {
				return nil, fmt.Errorf("read CA certificates: %w", err)
			}
			tc.RootCAs = x509.NewCertPool()
			if !tc.RootCAs.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("read CA certificates: no PEM certificate in %s", cafile)
			}
		}
		hc = &http.Client{Timeout: 5 * time.Minute, Transport: &http.Transport{TLSClientConfig: tc}}
	}
	c := client.New(fmt.Sprintf("%s://%s", scheme, net.JoinHostPort(host, strconv.Itoa(port))), hc)
	token := ra.flags["token"]
	if token == "" {
		token = os.Getenv(TokenEnv)
	}
	if token != "" {
		c = c.WithToken(strings.TrimSpace(token))
	}
	return c, nil
}

// remote runs fn with a client and prints its error; it returns the exit
// code: 0 success, 1 failure, 2 usage.
func remote(args []string, stdout, stderr io.Writer, usage string, fn func(ctx context.Context, c *client.Client, ra remoteArgs) error) int {
	ra, err := parseRemote(args)
	if err != nil {
		fmt.Fprintf(stderr, "kuiper: %v\nusage: %s\n", err, usage)
		return 2
	}
	c, err := newClient(ra)
	if err != nil {
		fmt.Fprintf(stderr, "kuiper: %v\n", err)
		return 1
	}
	if err := fn(context.Background(), c, ra); err != nil {
		if ue, ok := err.(usageError); ok {
			fmt.Fprintf(stderr, "kuiper: %s\nusage: %s\n", string(ue), usage)
			return 2
		}
		fmt.Fprintf(stderr, "kuiper: %v\n", err)
		return 1
	}
	return 0
}

type usageError string

func (e usageError) Error() string { return string(e) }

// printJSON writes b indented.
func printJSON(w io.Writer, b []byte) {
	var buf bytes.Buffer
	if json.Indent(&buf, b, "", "  ") != nil {
		w.Write(b) //nolint:errcheck // terminal output
		fmt.Fprintln(w)
		return
	}
	fmt.Fprintln(w, buf.String())
}

// definition returns the definition argument: the -f file's content or the
// positional argument at i.
func definition(ra remoteArgs, i int) ([]byte, error) {
	if f := ra.flags["f"]; f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("read definition: %w", err)
		}
		return b, nil
	}
	if len(ra.pos) <= i {
		return nil, usageError("missing definition (give it inline or with -f FILE)")
	}
	return []byte(strings.Join(ra.pos[i:], " ")), nil
}
