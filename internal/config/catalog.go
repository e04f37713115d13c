package config

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
)

// CatalogURL is `basic.catalog`: empty for the embedded SQLite file in the
// data folder, or the postgres:// (postgresql://) URL of a PostgreSQL
// database that several daemons share. The URL may carry a password, so
// every way of showing it (JSON, %v, slog) masks the password.
type CatalogURL string

// Postgres reports whether the URL selects PostgreSQL.
func (u CatalogURL) Postgres() bool {
	s := strings.ToLower(string(u))
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// validate refuses what the daemon could not open; its messages never
// quote the URL.
func (u CatalogURL) validate() error {
	if u == "" {
		return nil
	}
	if !u.Postgres() {
		scheme, _, ok := strings.Cut(string(u), "://")
		if !ok {
			return fmt.Errorf("basic.catalog: want empty (the SQLite file in the data folder) or a postgres:// URL")
		}
		return fmt.Errorf("basic.catalog: scheme %q is not supported: want empty (the SQLite file in the data folder) or a postgres:// URL", scheme)
	}
	p, err := url.Parse(string(u))
	if err != nil || p.Host == "" {
		return fmt.Errorf("basic.catalog: not a valid postgres:// URL (want postgres://user:password@host:port/database)")
	}
	return nil
}

// Masked is the URL with its password (in the user info or a password
// parameter) replaced by ******; a URL that does not parse shows only its
// scheme.
func (u CatalogURL) Masked() string {
	const mask = "******"
	if u == "" {
		return ""
	}
	p, err := url.Parse(string(u))
	if err != nil {
		scheme, _, _ := strings.Cut(string(u), "://")
		return scheme + "://" + mask
	}
	q := p.Query()
	if q.Has("password") {
		q.Set("password", "xxxxx")
		p.RawQuery = q.Encode()
	}
	// Redacted writes xxxxx for the user info's password.
	return strings.ReplaceAll(strings.Replace(p.Redacted(), ":xxxxx@", ":"+mask+"@", 1), "password=xxxxx", "password="+mask)
}

// String is Masked, so that %v and %s never print the password.
func (u CatalogURL) String() string { return u.Masked() }

// LogValue is Masked, for slog.
func (u CatalogURL) LogValue() slog.Value { return slog.StringValue(u.Masked()) }

// MarshalJSON writes the masked URL.
func (u CatalogURL) MarshalJSON() ([]byte, error) { return json.Marshal(u.Masked()) }
