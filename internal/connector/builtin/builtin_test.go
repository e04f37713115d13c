package builtin

import (
	"slices"
	"testing"

	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/connector/connectortest"
)

func TestRegister(t *testing.T) {
	r := connectortest.Registry(t, Register)
	tests := []struct {
		kind connector.Kind
		want []string
	}{
		{connector.KindSource, []string{"file", "httppull", "httppush", "kafka", "memory", "mqtt", "redisSub", "simulator", "sql", "websocket"}},
		{connector.KindSink, []string{"file", "kafka", "log", "memory", "mqtt", "nop", "redis", "redisPub", "rest", "sql", "websocket"}},
		{connector.KindLookup, []string{"httppull", "memory", "redis", "simulator", "sql"}},
	}
	for _, tc := range tests {
		t.Run(tc.kind.String(), func(t *testing.T) {
			if got := r.Names(tc.kind); !slices.Equal(got, tc.want) {
				t.Fatalf("names = %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("connection keys", func(t *testing.T) {
		for _, typ := range []string{"mqtt", "kafka", "redis", "redisPub", "redisSub", "sql"} {
			if _, ok := r.ConnectionKey(typ); !ok {
				t.Errorf("no connection key function for %s", typ)
			}
		}
		if _, ok := r.ConnectionKey("memory"); ok {
			t.Error("memory keeps no named connections but has a connection key function")
		}
	})
	t.Run("twice", func(t *testing.T) {
		if err := Register(r); err == nil {
			t.Fatal("second Register succeeded")
		}
	})
}
