package builtin

import (
	"slices"
	"testing"

	"github.com/rekuiper/rekuiper/internal/connector"
)

func TestRegister(t *testing.T) {
	r := connector.NewRegistry()
	if err := Register(r); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		kind connector.Kind
		want []string
	}{
		{connector.KindSource, []string{"file", "httppull", "httppush", "kafka", "memory", "redisSub", "simulator", "sql", "websocket"}},
		{connector.KindSink, []string{"file", "kafka", "log", "memory", "nop", "redis", "redisPub", "rest", "sql", "websocket"}},
		{connector.KindLookup, []string{"httppull", "memory", "redis", "simulator", "sql"}},
	}
	for _, tc := range tests {
		t.Run(tc.kind.String(), func(t *testing.T) {
			if got := r.Names(tc.kind); !slices.Equal(got, tc.want) {
				t.Fatalf("names = %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("twice", func(t *testing.T) {
		if err := Register(r); err == nil {
			t.Fatal("second Register succeeded")
		}
	})
}
