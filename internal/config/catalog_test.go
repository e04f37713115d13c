package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func TestCatalogURLValidate(t *testing.T) {
	for _, tc := range []struct {
		url  CatalogURL
		want string // "" for valid
	}{
		{"", ""},
		{"postgres://u:pw@db:5432/kuiper", ""},
		{"postgresql://db/kuiper?sslmode=require", ""},
		{"mysql://u:pw@db/kuiper", `scheme "mysql" is not supported`},
		{"/var/lib/kuiper.db", "want empty"},
		{"postgres://u:pw@:bad/kuiper", "not a valid postgres:// URL"},
	} {
		err := tc.url.validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.url.Masked(), err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want %q", tc.url.Masked(), err, tc.want)
		case err != nil && strings.Contains(err.Error(), "pw"):
			t.Errorf("error shows the password: %v", err)
		}
	}
}

func TestCatalogURLMasksPassword(t *testing.T) {
	for _, u := range []CatalogURL{
		"postgres://kuiper:s3cret@db:5432/kuiper",
		"postgres://db/kuiper?user=k&password=s3cret",
		"postgres://kuiper:s3cret@db:bad port/kuiper",
	} {
		var log bytes.Buffer
		slog.New(slog.NewTextHandler(&log, nil)).Info("open", "catalog", u)
		b, err := json.Marshal(Basic{Catalog: u})
		if err != nil {
			t.Fatal(err)
		}
		for _, shown := range []string{u.Masked(), fmt.Sprint(u), fmt.Sprintf("%v", u), log.String(), string(b)} {
			if strings.Contains(shown, "s3cret") {
				t.Errorf("password shown: %s", shown)
			}
		}
		if !strings.Contains(u.Masked(), "******") {
			t.Errorf("masked %q has no mask", u.Masked())
		}
	}
	if got := CatalogURL("postgres://kuiper:s3cret@db:5432/kuiper").Masked(); got != "postgres://kuiper:******@db:5432/kuiper" {
		t.Errorf("masked %q", got)
	}
}

func TestCatalogURLRefusedAtLoad(t *testing.T) {
	_, err := Load(LoadOptions{EtcDir: shippedEtc, Environ: []string{"KUIPER__BASIC__CATALOG=redis://u:pw@h/0"}})
	if err == nil || !strings.Contains(err.Error(), "basic.catalog") || strings.Contains(err.Error(), "pw@") {
		t.Errorf("load with a redis catalog: %v", err)
	}
}
