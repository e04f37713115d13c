// Package certstest writes throwaway TLS certificates for tests: a fresh
// self-signed certificate for 127.0.0.1, ::1 and localhost, and the pool
// that trusts it.
package certstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Pair is a written certificate and key.
type Pair struct {
	Certfile, Keyfile string
	// Cert is the parsed certificate; Pool trusts it.
	Cert *x509.Certificate
	Pool *x509.CertPool
}

// Write writes <dir>/<name>.crt and <dir>/<name>.key: a new self-signed
// certificate with common name cn, valid for the loopback addresses.
func Write(t testing.TB, dir, name, cn string) Pair {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	p := Pair{Certfile: filepath.Join(dir, name+".crt"), Keyfile: filepath.Join(dir, name+".key"), Cert: cert, Pool: x509.NewCertPool()}
	p.Pool.AddCert(cert)
	// The key first: a reader that sees the new certificate must not find
	// the old key.
	writeFile(t, p.Keyfile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}))
	writeFile(t, p.Certfile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	return p
}

// writeFile replaces path atomically, so a concurrent reader sees the old
// or the new content, never a part.
func writeFile(t testing.TB, path string, b []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}
