// Package mqtttest starts real MQTT brokers for integration tests:
// Mosquitto with plain, TLS, mTLS and wrong-name TLS listeners configured
// from certificates generated here, and nats-server's MQTT listener. Each
// broker runs on ephemeral loopback ports in a temporary directory and is
// stopped by t.Cleanup. Tests skip with a clear message when a binary is
// absent.
package mqtttest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
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

// Key formats of generated client keys.
const (
	KeyECSEC1      = "ec-sec1"       // "EC PRIVATE KEY"
	KeyRSAPKCS1    = "rsa-pkcs1"     // "RSA PRIVATE KEY"
	KeyRSAPKCS8    = "rsa-pkcs8"     // "PRIVATE KEY" holding RSA
	KeyECPKCS8     = "ec-pkcs8"      // "PRIVATE KEY" holding ECDSA
	KeyEd25519PKCS = "ed25519-pkcs8" // "PRIVATE KEY" holding Ed25519
)

// KeyFormats lists every generated client key format.
func KeyFormats() []string {
	return []string{KeyECSEC1, KeyRSAPKCS1, KeyRSAPKCS8, KeyECPKCS8, KeyEd25519PKCS}
}

// Pair is a certificate and its key, as PEM text and as files.
type Pair struct {
	CertPEM, KeyPEM   string
	CertFile, KeyFile string
}

// Certs is a generated PKI: a CA, a server certificate for 127.0.0.1 and
// localhost, a server certificate for another name only, client
// certificates with keys in every format, and an unrelated CA.
type Certs struct {
	Dir       string
	CAPEM     string
	CAFile    string
	OtherCA   string // PEM of a CA that signed nothing here
	Server    Pair
	WrongName Pair // server certificate for "wrong.example" only
	Clients   map[string]Pair
	// EncryptedKeyPEM is a legacy password-protected key PEM (for error tests).
	EncryptedKeyPEM string
}

// NewCerts generates the PKI into a temporary directory.
func NewCerts(t testing.TB) *Certs {
	t.Helper()
	dir := t.TempDir()
	c := &Certs{Dir: dir, Clients: map[string]Pair{}}
	caKey := must(t, func() (crypto.Signer, error) { return ecdsa.GenerateKey(elliptic.P256(), rand.Reader) })
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "rekuiper test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
	if err != nil {
		t.Fatalf("create CA: %v", err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	c.CAPEM = pemString("CERTIFICATE", caDER)
	c.CAFile = write(t, dir, "ca.pem", c.CAPEM)

	otherKey := must(t, func() (crypto.Signer, error) { return ecdsa.GenerateKey(elliptic.P256(), rand.Reader) })
	otherTmpl := *caTmpl
	otherTmpl.Subject.CommonName = "unrelated CA"
	otherDER, err := x509.CreateCertificate(rand.Reader, &otherTmpl, &otherTmpl, otherKey.Public(), otherKey)
	if err != nil {
		t.Fatalf("create other CA: %v", err)
	}
	c.OtherCA = pemString("CERTIFICATE", otherDER)

	serial := int64(10)
	issue := func(name string, key crypto.Signer, keyPEM string, server bool, dns []string, ips []net.IP) Pair {
		serial++
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: name},
			NotBefore:    time.Now().Add(-time.Hour),
			NotAfter:     time.Now().Add(24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
			DNSNames:     dns,
			IPAddresses:  ips,
		}
		if server {
			tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		} else {
			tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, key.Public(), caKey)
		if err != nil {
			t.Fatalf("create certificate %s: %v", name, err)
		}
		p := Pair{CertPEM: pemString("CERTIFICATE", der), KeyPEM: keyPEM}
		p.CertFile = write(t, dir, name+".crt", p.CertPEM)
		p.KeyFile = write(t, dir, name+".key", p.KeyPEM)
		return p
	}
	// Mosquitto reads server keys; use the most portable forms there.
	srvKey := must(t, func() (crypto.Signer, error) { return rsa.GenerateKey(rand.Reader, 2048) })
	c.Server = issue("server", srvKey, pkcs1(srvKey), true, []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")})
	c.WrongName = issue("wrongname", srvKey, pkcs1(srvKey), true, []string{"wrong.example"}, nil)

	for _, f := range KeyFormats() {
		var key crypto.Signer
		var keyPEM string
		switch f {
		case KeyECSEC1, KeyECPKCS8:
			k := must(t, func() (crypto.Signer, error) { return ecdsa.GenerateKey(elliptic.P256(), rand.Reader) })
			key = k
			if f == KeyECSEC1 {
				der, err := x509.MarshalECPrivateKey(k.(*ecdsa.PrivateKey))
				if err != nil {
					t.Fatal(err)
				}
				keyPEM = pemString("EC PRIVATE KEY", der)
			} else {
				keyPEM = pkcs8(t, k)
			}
		case KeyRSAPKCS1, KeyRSAPKCS8:
			k := must(t, func() (crypto.Signer, error) { return rsa.GenerateKey(rand.Reader, 2048) })
			key = k
			if f == KeyRSAPKCS1 {
				keyPEM = pkcs1(k)
			} else {
				keyPEM = pkcs8(t, k)
			}
		case KeyEd25519PKCS:
			_, k, err := ed25519.GenerateKey(rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			key = k
			keyPEM = pkcs8(t, k)
		}
		c.Clients[f] = issue("client-"+f, key, keyPEM, false, nil, nil)
	}
	c.EncryptedKeyPEM = "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00112233445566778899AABBCCDDEEFF\n\nAAAA\n-----END RSA PRIVATE KEY-----\n"
	return c
}

func must(t testing.TB, f func() (crypto.Signer, error)) crypto.Signer {
	t.Helper()
	k, err := f()
	if err != nil {
		t.Fatalf("generate key: %v", err)
	}
	return k
}

func pemString(typ string, der []byte) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}))
}

func pkcs1(k crypto.Signer) string {
	return pemString("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(k.(*rsa.PrivateKey)))
}

func pkcs8(t testing.TB, k crypto.Signer) string {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatalf("marshal PKCS#8: %v", err)
	}
	return pemString("PRIVATE KEY", der)
}

func write(t testing.TB, dir, name, content string) string {
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatalf("write %s: %v", name, err)
	}
	return p
}
