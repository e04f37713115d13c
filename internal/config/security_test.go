package config

import (
	"strings"
	"testing"
)

func TestSecuritySettings(t *testing.T) {
	tests := []struct {
		name    string
		environ []string
		wantErr []string // substrings of the load error; nil: loads
	}{
		{"tls pair from env", []string{"KUIPER__BASIC__RESTTLS__CERTFILE=/c.pem", "KUIPER__BASIC__RESTTLS__KEYFILE=/k.pem"}, nil},
		{"rest certfile alone", []string{"KUIPER__BASIC__RESTTLS__CERTFILE=/c.pem"}, []string{"basic.restTls", "together"}},
		{"push keyfile alone", []string{"KUIPER__SOURCE__HTTPSERVERTLS__KEYFILE=/k.pem"}, []string{"source.httpServerTls", "together"}},
		{"cors origins", []string{"KUIPER__BASIC__CORS=https://a.example,http://b.example:8080"}, nil},
		{"cors with path", []string{"KUIPER__BASIC__CORS=https://a.example/x"}, []string{"basic.cors", "https://a.example/x"}},
		{"cors wildcard", []string{"KUIPER__BASIC__CORS=*"}, []string{"basic.cors", `"*"`}},
		{"cors without scheme", []string{"KUIPER__BASIC__CORS=a.example"}, []string{"basic.cors", "a.example"}},
		{"pprof on loopback", []string{"KUIPER__BASIC__PPROF=true", "KUIPER__BASIC__PPROFIP=::1"}, nil},
		{"pprof on every interface", []string{"KUIPER__BASIC__PPROF=true", "KUIPER__BASIC__PPROFIP=0.0.0.0"}, []string{"basic.pprofIp", "0.0.0.0", "loopback"}},
		{"pprof off, any address", []string{"KUIPER__BASIC__PPROF=false", "KUIPER__BASIC__PPROFIP=0.0.0.0"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(LoadOptions{EtcDir: shippedEtc, Environ: tt.environ})
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted, want an error with %q", tt.wantErr)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}

func TestExposureWarnings(t *testing.T) {
	shipped, err := Load(LoadOptions{EtcDir: shippedEtc})
	if err != nil {
		t.Fatal(err)
	}
	if w := shipped.ExposureWarnings(); len(w) != 0 {
		t.Errorf("shipped configuration warns: %q", w)
	}
	tests := []struct {
		name    string
		environ []string
		want    []string // one substring per expected warning, in order
	}{
		{"rest on every interface", []string{"KUIPER__BASIC__RESTIP=0.0.0.0"}, []string{"0.0.0.0:9081"}},
		{"rest on every interface with auth", []string{"KUIPER__BASIC__RESTIP=0.0.0.0", "KUIPER__BASIC__AUTHENTICATION=true"}, []string{"without basic.restTls"}},
		{"rest on every interface with auth and tls", []string{"KUIPER__BASIC__RESTIP=0.0.0.0", "KUIPER__BASIC__AUTHENTICATION=true", "KUIPER__BASIC__RESTTLS__CERTFILE=/c", "KUIPER__BASIC__RESTTLS__KEYFILE=/k"}, nil},
		{"localhost", []string{"KUIPER__BASIC__RESTIP=localhost"}, nil},
		{"metrics port", []string{"KUIPER__BASIC__RESTIP=10.1.2.3", "KUIPER__BASIC__AUTHENTICATION=true", "KUIPER__BASIC__RESTTLS__CERTFILE=/c", "KUIPER__BASIC__RESTTLS__KEYFILE=/k", "KUIPER__BASIC__PROMETHEUS=true"}, []string{"10.1.2.3:20499"}},
		{"metrics on the rest port", []string{"KUIPER__BASIC__RESTIP=10.1.2.3", "KUIPER__BASIC__AUTHENTICATION=true", "KUIPER__BASIC__RESTTLS__CERTFILE=/c", "KUIPER__BASIC__RESTTLS__KEYFILE=/k", "KUIPER__BASIC__PROMETHEUS=true", "KUIPER__BASIC__PROMETHEUSPORT=9081"}, nil},
		{"push endpoints", []string{"KUIPER__SOURCE__HTTPSERVERIP=::"}, []string{"[::]:10081"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Load(LoadOptions{EtcDir: shippedEtc, Environ: tt.environ})
			if err != nil {
				t.Fatal(err)
			}
			got := cfg.ExposureWarnings()
			if len(got) != len(tt.want) {
				t.Fatalf("warnings %q, want %d", got, len(tt.want))
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("warning %q does not name %q", got[i], w)
				}
			}
		})
	}
}
