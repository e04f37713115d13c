package nop

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/connector/connectortest"
)

func TestWrite(t *testing.T) {
	tests := []struct {
		name    string
		props   map[string]any
		wantLog bool
	}{
		{"silent by default", map[string]any{}, false},
		{"log=true", map[string]any{"log": true}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			s, err := connectortest.Registry(t, Register).NewSink(Type, tc.props, connector.Deps{Logger: slog.New(slog.NewTextHandler(&buf, nil))})
			if err != nil {
				t.Fatal(err)
			}
			for range 3 {
				if err := s.Write(context.Background(), &api.SinkMessage{Payload: []byte("hello")}); err != nil {
					t.Fatal(err)
				}
			}
			if got := s.(*Sink).Count(); got != 3 {
				t.Errorf("count = %d", got)
			}
			if got := strings.Contains(buf.String(), "hello"); got != tc.wantLog {
				t.Errorf("logged = %v, want %v (%q)", got, tc.wantLog, buf.String())
			}
		})
	}
}
