// Package auth verifies and signs the REST API's JSON Web Tokens, the way
// eKuiper does: RS256 tokens whose "iss" claim names a PEM public key file
// in the key folder (etc/mgmt), whose "aud" contains "eKuiper", and whose
// "exp" and "nbf", when present, hold at the time of the request.
//
// A Verifier is safe for concurrent use. It keeps the tokens it verified for
// at most CacheFor, so that a client sending the same token on every request
// pays for one RSA verification, not one per request; a removed or replaced
// key file takes effect within that time.
package auth

import (
	"context"
	"crypto/rsa"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Audience is the audience every token must name.
const Audience = "eKuiper"

// KeyDir is the folder of public keys inside the etc folder.
const KeyDir = "mgmt"

// CacheFor bounds how long a verified token is trusted without verifying
// its signature again.
const CacheFor = 10 * time.Second

// maxCached bounds the verified-token cache; when full it is emptied.
const maxCached = 1024

// ErrUnauthorized marks every verification failure.
var ErrUnauthorized = errors.New("unauthorized")

// Claims are the registered claims of a token.
type Claims = jwt.RegisteredClaims

// Verifier checks tokens against the public keys of one folder.
type Verifier struct {
	dir    string
	now    func() time.Time
	parser *jwt.Parser

	mu    sync.RWMutex
	cache map[string]cached
}

type cached struct {
	claims *Claims
	until  time.Time // min(verified + CacheFor, exp)
}

// NewVerifier verifies tokens with the *.pub keys in dir, at the times now
// reports (time.Now when nil).
func NewVerifier(dir string, now func() time.Time) *Verifier {
	if now == nil {
		now = time.Now
	}
	return &Verifier{
		dir: dir, now: now, cache: map[string]cached{},
		parser: jwt.NewParser(
			jwt.WithValidMethods([]string{jwt.SigningMethodRS256.Alg()}),
			jwt.WithAudience(Audience),
			jwt.WithTimeFunc(now),
		),
	}
}

// Verify checks the value of an Authorization header, "<jwt>" or
// "Bearer <jwt>", and returns the token's claims. Errors wrap
// ErrUnauthorized and say what is wrong.
func (v *Verifier) Verify(header string) (*Claims, error) {
	token := strings.TrimSpace(header)
	if len(token) >= 6 && strings.EqualFold(token[:6], "bearer") && (len(token) == 6 || token[6] == ' ') {
		token = strings.TrimSpace(token[6:])
	}
	if token == "" {
		return nil, fmt.Errorf("%w: missing token: send the header Authorization: <jwt>", ErrUnauthorized)
	}
	now := v.now()
	v.mu.RLock()
	c, ok := v.cache[token]
	v.mu.RUnlock()
	if ok && now.Before(c.until) {
		return c.claims, nil
	}
	claims := &Claims{}
	if _, err := v.parser.ParseWithClaims(token, claims, v.key); err != nil {
		return nil, fmt.Errorf("%w: invalid token: %v", ErrUnauthorized, err)
	}
	until := now.Add(CacheFor)
	if claims.ExpiresAt != nil && claims.ExpiresAt.Before(until) {
		until = claims.ExpiresAt.Time
	}
	v.mu.Lock()
	if len(v.cache) >= maxCached {
		clear(v.cache)
	}
	v.cache[token] = cached{claims: claims, until: until}
	v.mu.Unlock()
	return claims, nil
}

// key finds the public key the token's issuer names: a file of the key
// folder whose name equals iss, ignoring case (as eKuiper does).
func (v *Verifier) key(t *jwt.Token) (any, error) {
	iss, err := t.Claims.GetIssuer()
	if err != nil {
		return nil, err
	}
	if iss == "" {
		return nil, errors.New("the iss claim is missing; it must name a public key file in etc/" + KeyDir)
	}
	entries, err := os.ReadDir(v.dir)
	if err != nil {
		return nil, fmt.Errorf("read key folder etc/%s: %w", KeyDir, err)
	}
	for _, e := range entries {
		if e.Type().IsRegular() && strings.EqualFold(e.Name(), iss) {
			b, err := os.ReadFile(filepath.Join(v.dir, e.Name()))
			if err != nil {
				return nil, fmt.Errorf("read key %s: %w", e.Name(), err)
			}
			k, err := jwt.ParseRSAPublicKeyFromPEM(b)
			if err != nil {
				return nil, fmt.Errorf("key %s: %w", e.Name(), err)
			}
			return k, nil
		}
	}
	return nil, fmt.Errorf("issuer %q names no public key file in etc/%s", iss, KeyDir)
}

// Middleware returns a handler that lets requests to open paths ("/" and
// "/ping") and requests with a valid token through to next, with the
// token's subject in their context (see Subject), and answers the others
// with fail, which receives an error wrapping ErrUnauthorized.
func Middleware(v *Verifier, next http.Handler, fail func(http.ResponseWriter, *http.Request, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if IsOpenPath(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		claims, err := v.Verify(r.Header.Get("Authorization"))
		if err != nil {
			fail(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), subjectKey{}, claims.Subject)))
	})
}

// IsOpenPath reports whether path is served without a token: the node
// information, the ping and the web console's static assets (which hold
// no data; the console sends the token with every API call).
func IsOpenPath(path string) bool {
	return path == "/" || path == "/ping" || path == "/console" || strings.HasPrefix(path, "/console/")
}

type subjectKey struct{}

// Subject returns the subject of the token that authenticated the request
// of ctx, or "-" when there is none.
func Subject(ctx context.Context) string {
	if s, ok := ctx.Value(subjectKey{}).(string); ok && s != "" {
		return s
	}
	return "-"
}

// SignOptions are the claims of a new token.
type SignOptions struct {
	// Issuer is the public key file name in etc/mgmt, e.g. "admin.pub".
	Issuer string
	// Subject names who uses the token; it appears in the audit log.
	Subject string
	// Audience defaults to ["eKuiper"].
	Audience []string
	// Expires is the expiry time; zero means the token never expires.
	Expires time.Time
	// Now is the issued-at and not-before time; zero means time.Now().
	Now time.Time
}

// Sign makes an RS256 token with the PEM private key (PKCS #1 or #8).
func Sign(privateKeyPEM []byte, o SignOptions) (string, error) {
	key, err := jwt.ParseRSAPrivateKeyFromPEM(privateKeyPEM)
	if err != nil {
		return "", fmt.Errorf("parse private key: %w", err)
	}
	return SignWithKey(key, o)
}

// SignWithKey makes an RS256 token with key.
func SignWithKey(key *rsa.PrivateKey, o SignOptions) (string, error) {
	if o.Issuer == "" {
		return "", errors.New("sign token: the issuer (public key file name) is required")
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	if len(o.Audience) == 0 {
		o.Audience = []string{Audience}
	}
	c := Claims{
		Issuer:    o.Issuer,
		Subject:   o.Subject,
		Audience:  o.Audience,
		IssuedAt:  jwt.NewNumericDate(o.Now),
		NotBefore: jwt.NewNumericDate(o.Now),
	}
	if !o.Expires.IsZero() {
		c.ExpiresAt = jwt.NewNumericDate(o.Expires)
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodRS256, c).SignedString(key)
	if err != nil {
		return "", fmt.Errorf("sign token: %w", err)
	}
	return s, nil
}
