package mqtt

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/rekuiper/rekuiper/internal/connector"
)

// tlsSettings are the TLS properties as given.
type tlsSettings struct {
	certPath, keyPath, caPath string
	certRaw, keyRaw, caRaw    string
	certRawName               string // which spelling of the inline certificate was used
	insecure                  bool
	minVersion                string
	serverName                string
}

func tlsSettingsFrom(props map[string]any) tlsSettings {
	s := tlsSettings{
		certPath:   connector.Get[string](props, "certificationPath"),
		keyPath:    connector.Get[string](props, "privateKeyPath"),
		caPath:     connector.Get[string](props, "rootCaPath"),
		keyRaw:     connector.Get[string](props, "privateKeyRaw"),
		caRaw:      connector.Get[string](props, "rootCARaw"),
		insecure:   connector.Get[bool](props, "insecureSkipVerify"),
		minVersion: connector.Get[string](props, "tlsMinVersion"),
		serverName: connector.Get[string](props, "serverName"),
	}
	s.certRaw, s.certRawName = connector.Get[string](props, "certificationRaw"), "certificationRaw"
	if s.certRaw == "" {
		s.certRaw, s.certRawName = connector.Get[string](props, "certficationRaw"), "certficationRaw"
	}
	return s
}

func (s tlsSettings) clientCertGiven() bool {
	return s.certPath != "" || s.keyPath != "" || s.certRaw != "" || s.keyRaw != ""
}

func (s tlsSettings) rootCAGiven() bool { return s.caPath != "" || s.caRaw != "" }

// fingerprint hashes the TLS settings, so connections with different
// material are never shared.
func (s tlsSettings) fingerprint() string {
	h := sha256.New()
	for _, p := range []string{s.certPath, s.keyPath, s.caPath, s.certRaw, s.keyRaw, s.caRaw,
		fmt.Sprint(s.insecure), s.minVersion, s.serverName} {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// build returns the client TLS configuration. Errors name the property at
// fault and never include key material.
func (s tlsSettings) build(host string) (*tls.Config, error) {
	conf := &tls.Config{ServerName: host, InsecureSkipVerify: s.insecure} //nolint:gosec // opt-in by property
	if s.serverName != "" {
		conf.ServerName = s.serverName
	}
	switch s.minVersion {
	case "tls1.0":
		conf.MinVersion = tls.VersionTLS10
	case "tls1.1":
		conf.MinVersion = tls.VersionTLS11
	case "tls1.3":
		conf.MinVersion = tls.VersionTLS13
	default:
		conf.MinVersion = tls.VersionTLS12
	}
	if s.rootCAGiven() {
		pemData, prop, err := pick(s.caPath, "rootCaPath", s.caRaw, "rootCARaw")
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pemData) {
			return nil, fmt.Errorf("property %s: no PEM certificate found", prop)
		}
		conf.RootCAs = pool
	}
	if s.clientCertGiven() {
		cert, err := s.clientCert()
		if err != nil {
			return nil, err
		}
		conf.Certificates = []tls.Certificate{cert}
	}
	return conf, nil
}

// pick returns the content of the file at path, or raw when path is empty.
func pick(path, pathProp, raw, rawProp string) ([]byte, string, error) {
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, pathProp, fmt.Errorf("property %s: read %w", pathProp, err)
		}
		return b, pathProp, nil
	}
	return []byte(raw), rawProp, nil
}

// clientCert loads the client certificate chain and its key and checks that
// they belong together.
func (s tlsSettings) clientCert() (tls.Certificate, error) {
	var cert tls.Certificate
	certPEM, certProp, err := pick(s.certPath, "certificationPath", s.certRaw, s.certRawName)
	if err != nil {
		return cert, err
	}
	keyPEM, keyProp, err := pick(s.keyPath, "privateKeyPath", s.keyRaw, "privateKeyRaw")
	if err != nil {
		return cert, err
	}
	if len(certPEM) == 0 {
		return cert, fmt.Errorf("property certificationPath or certificationRaw: a client key is set but no client certificate")
	}
	if len(keyPEM) == 0 {
		return cert, fmt.Errorf("property privateKeyPath or privateKeyRaw: a client certificate is set but no private key")
	}
	for rest := certPEM; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type == "CERTIFICATE" {
			cert.Certificate = append(cert.Certificate, b.Bytes)
		}
	}
	if len(cert.Certificate) == 0 {
		return cert, fmt.Errorf("property %s: no PEM certificate found", certProp)
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return cert, fmt.Errorf("property %s: parse certificate: %w", certProp, err)
	}
	cert.Leaf = leaf
	key, err := parseKey(keyPEM)
	if err != nil {
		return cert, fmt.Errorf("property %s: %w", keyProp, err)
	}
	if !publicKeysEqual(leaf.PublicKey, key.Public()) {
		return cert, fmt.Errorf("property %s: private key does not match the certificate in %s", keyProp, certProp)
	}
	cert.PrivateKey = key
	return cert, nil
}

// errEncryptedKey is returned for password-protected keys, which are not
// supported.
var errEncryptedKey = errors.New("private key is encrypted; provide an unencrypted key")

// parseKey reads the first private key PEM block: "EC PRIVATE KEY" (SEC1),
// "RSA PRIVATE KEY" (PKCS#1) or "PRIVATE KEY" (PKCS#8 RSA, EC or Ed25519).
func parseKey(data []byte) (crypto.Signer, error) {
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return nil, errors.New("no PEM private key found")
		}
		if b.Type == "ENCRYPTED PRIVATE KEY" || strings.Contains(b.Headers["Proc-Type"], "ENCRYPTED") {
			return nil, errEncryptedKey
		}
		switch b.Type {
		case "EC PRIVATE KEY":
			k, err := x509.ParseECPrivateKey(b.Bytes)
			if err != nil {
				return nil, fmt.Errorf("parse SEC1 EC key: %w", err)
			}
			return k, nil
		case "RSA PRIVATE KEY":
			k, err := x509.ParsePKCS1PrivateKey(b.Bytes)
			if err != nil {
				return nil, fmt.Errorf("parse PKCS#1 RSA key: %w", err)
			}
			return k, nil
		case "PRIVATE KEY":
			k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
			if err != nil {
				return nil, fmt.Errorf("parse PKCS#8 key: %w", err)
			}
			s, ok := k.(crypto.Signer)
			if !ok {
				return nil, fmt.Errorf("unsupported PKCS#8 key type %T", k)
			}
			return s, nil
		}
	}
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	switch x := a.(type) {
	case *rsa.PublicKey:
		return x.Equal(b)
	case *ecdsa.PublicKey:
		return x.Equal(b)
	case ed25519.PublicKey:
		return x.Equal(b)
	}
	return false
}
