package auth

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/rekuiper/rekuiper/internal/auth/authtest"
)

// fakeNow is a settable clock.
type fakeNow struct {
	mu sync.Mutex
	t  time.Time
}

func (f *fakeNow) Now() time.Time      { f.mu.Lock(); defer f.mu.Unlock(); return f.t }
func (f *fakeNow) Add(d time.Duration) { f.mu.Lock(); f.t = f.t.Add(d); f.mu.Unlock() }

func sign(t *testing.T, k *rsa.PrivateKey, c jwt.Claims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(jwt.SigningMethodRS256, c).SignedString(k)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestVerify(t *testing.T) {
	dir := t.TempDir()
	key, other := authtest.NewKey(t), authtest.NewKey(t)
	authtest.WritePublic(t, dir, "admin.pub", key)
	clk := &fakeNow{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	v := NewVerifier(dir, clk.Now)
	now := clk.Now()
	at := func(d time.Duration) *jwt.NumericDate { return jwt.NewNumericDate(now.Add(d)) }
	valid := sign(t, key, jwt.RegisteredClaims{Issuer: "admin.pub", Subject: "ops", Audience: jwt.ClaimStrings{"eKuiper"}, ExpiresAt: at(time.Hour)})
	hmac, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.RegisteredClaims{Issuer: "admin.pub", Audience: jwt.ClaimStrings{"eKuiper"}}).SignedString([]byte("secret"))
	if err != nil {
		t.Fatal(err)
	}
	none, err := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.RegisteredClaims{Issuer: "admin.pub", Audience: jwt.ClaimStrings{"eKuiper"}}).SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, header string
		wantErr      string // substring; "" means accepted
	}{
		{"valid", valid, ""},
		{"bearer", "Bearer " + valid, ""},
		{"bearer lower case", "bearer " + valid, ""},
		{"no expiry", sign(t, key, jwt.RegisteredClaims{Issuer: "admin.pub", Audience: jwt.ClaimStrings{"other", "eKuiper"}}), ""},
		{"issuer case", sign(t, key, jwt.RegisteredClaims{Issuer: "ADMIN.PUB", Audience: jwt.ClaimStrings{"eKuiper"}}), ""},
		{"missing", "", "missing token"},
		{"bearer only", "Bearer ", "missing token"},
		{"garbage", "not.a.jwt", "invalid token"},
		{"expired", sign(t, key, jwt.RegisteredClaims{Issuer: "admin.pub", Audience: jwt.ClaimStrings{"eKuiper"}, ExpiresAt: at(-time.Second)}), "expired"},
		{"not yet valid", sign(t, key, jwt.RegisteredClaims{Issuer: "admin.pub", Audience: jwt.ClaimStrings{"eKuiper"}, NotBefore: at(time.Minute)}), "not valid yet"},
		{"wrong audience", sign(t, key, jwt.RegisteredClaims{Issuer: "admin.pub", Audience: jwt.ClaimStrings{"ekuiper"}}), "audience"},
		{"no audience", sign(t, key, jwt.RegisteredClaims{Issuer: "admin.pub"}), "aud claim is required"},
		{"no issuer", sign(t, key, jwt.RegisteredClaims{Audience: jwt.ClaimStrings{"eKuiper"}}), "iss claim is missing"},
		{"unknown key file", sign(t, key, jwt.RegisteredClaims{Issuer: "nobody.pub", Audience: jwt.ClaimStrings{"eKuiper"}}), `"nobody.pub" names no public key`},
		{"path in issuer", sign(t, key, jwt.RegisteredClaims{Issuer: "../mgmt/admin.pub", Audience: jwt.ClaimStrings{"eKuiper"}}), "names no public key"},
		{"signed by another key", sign(t, other, jwt.RegisteredClaims{Issuer: "admin.pub", Audience: jwt.ClaimStrings{"eKuiper"}}), "verification error"},
		{"hmac", hmac, "signing method HS256 is invalid"},
		{"alg none", none, "signing method none is invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := v.Verify(tt.header)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if c.Issuer == "" {
					t.Errorf("claims %+v", c)
				}
				return
			}
			if !errors.Is(err, ErrUnauthorized) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %v, want ErrUnauthorized naming %q", err, tt.wantErr)
			}
		})
	}
}

func TestVerifyCacheBounds(t *testing.T) {
	dir := t.TempDir()
	key := authtest.NewKey(t)
	authtest.WritePublic(t, dir, "k.pub", key)
	clk := &fakeNow{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	v := NewVerifier(dir, clk.Now)
	short := sign(t, key, jwt.RegisteredClaims{Issuer: "k.pub", Audience: jwt.ClaimStrings{"eKuiper"}, ExpiresAt: jwt.NewNumericDate(clk.Now().Add(3 * time.Second))})
	long := sign(t, key, jwt.RegisteredClaims{Issuer: "k.pub", Audience: jwt.ClaimStrings{"eKuiper"}})
	for _, tok := range []string{short, long} {
		if _, err := v.Verify(tok); err != nil {
			t.Fatal(err)
		}
	}
	clk.Add(4 * time.Second)
	if _, err := v.Verify(short); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("a cached token outlived its exp: %v", err)
	}
	if err := os.Remove(filepath.Join(dir, "k.pub")); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(long); err != nil {
		t.Errorf("cached token refused within CacheFor: %v", err)
	}
	clk.Add(CacheFor)
	if _, err := v.Verify(long); err == nil || !strings.Contains(err.Error(), "names no public key") {
		t.Errorf("token still accepted %s after its key was removed: %v", CacheFor+4*time.Second, err)
	}
}

func TestSignAndMiddleware(t *testing.T) {
	dir := t.TempDir()
	key := authtest.NewKey(t)
	authtest.WritePublic(t, dir, "cli.pub", key)
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	now := time.Now()
	tok, err := Sign(pemKey, SignOptions{Issuer: "cli.pub", Subject: "alice", Expires: now.Add(time.Minute), Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Sign(pemKey, SignOptions{Subject: "x"}); err == nil {
		t.Error("signed without an issuer")
	}
	if _, err := Sign([]byte("not pem"), SignOptions{Issuer: "cli.pub"}); err == nil || !strings.Contains(err.Error(), "private key") {
		t.Errorf("bad key: %v", err)
	}
	var seen string
	h := Middleware(NewVerifier(dir, nil), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = Subject(r.Context())
	}), func(w http.ResponseWriter, r *http.Request, err error) {
		if !errors.Is(err, ErrUnauthorized) {
			t.Errorf("fail got %v", err)
		}
		w.WriteHeader(http.StatusUnauthorized)
	})
	for _, tt := range []struct {
		path, token string
		want        int
		subject     string
	}{
		{"/rules", tok, 200, "alice"},
		{"/rules", "", 401, ""},
		{"/", "", 200, "-"},
		{"/ping", "", 200, "-"},
		{"/ping/", "", 401, ""},
	} {
		seen = ""
		req := httptest.NewRequest("GET", tt.path, nil)
		if tt.token != "" {
			req.Header.Set("Authorization", tt.token)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tt.want || seen != tt.subject {
			t.Errorf("GET %s token %v: status %d subject %q, want %d %q", tt.path, tt.token != "", rec.Code, seen, tt.want, tt.subject)
		}
	}
}

// benchToken writes a new key's public half to a fresh folder as k.pub,
// and returns the folder and a token the key signs, valid for an hour.
func benchToken(b *testing.B) (dir, tok string) {
	b.Helper()
	dir = b.TempDir()
	key := authtest.NewKey(b)
	authtest.WritePublic(b, dir, "k.pub", key)
	tok, err := SignWithKey(key, SignOptions{Issuer: "k.pub", Expires: time.Now().Add(time.Hour)})
	if err != nil {
		b.Fatal(err)
	}
	return dir, tok
}

// BenchmarkVerifyCached is what authentication adds to a request whose
// token was verified before: the header parsed and a cache lookup.
func BenchmarkVerifyCached(b *testing.B) {
	dir, tok := benchToken(b)
	v := NewVerifier(dir, nil)
	if _, err := v.Verify(tok); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := v.Verify(tok); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyUncached is the first request with a token: the key file
// read and parsed, and the RS256 signature checked.
func BenchmarkVerifyUncached(b *testing.B) {
	dir, tok := benchToken(b)
	b.ReportAllocs()
	for range b.N {
		if _, err := NewVerifier(dir, nil).Verify(tok); err != nil {
			b.Fatal(err)
		}
	}
}
