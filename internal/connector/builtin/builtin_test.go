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
		{connector.KindSource, []string{"file", "httppull", "httppush", "memory", "simulator"}},
		{connector.KindSink, []string{"file", "log", "memory", "nop", "rest"}},
		{connector.KindLookup, []string{"memory"}},
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
