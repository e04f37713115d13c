package logsink

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
		name string
		msg  *api.SinkMessage
		want []string
	}{
		{"payload", &api.SinkMessage{Payload: []byte(`[{"a":1}]`), Rows: []map[string]any{{"a": 1}}}, []string{"level=INFO", `payload="[{\"a\":1}]"`, "rows=1", "resent=false"}},
		{"resent", &api.SinkMessage{Payload: []byte("x"), Resent: true}, []string{"payload=x", "resent=true"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			s, err := connectortest.Registry(t, Register).NewSink(Type, map[string]any{"sendSingle": true}, connector.Deps{Logger: slog.New(slog.NewTextHandler(&buf, nil))})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Write(context.Background(), tc.msg); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(buf.String(), w) {
					t.Errorf("log %q lacks %q", buf.String(), w)
				}
			}
		})
	}
	t.Run("needs a logger", func(t *testing.T) {
		if _, err := New(nil, connector.Deps{}); err == nil {
			t.Fatal("built without a logger")
		}
	})
}
