package sinkcache

import (
	"strings"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/config"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string // substring of the error; "" means valid
	}{
		{"zero", Config{}, ""},
		{"enabled", Config{EnableCache: true, Dir: "x"}, ""},
		{"no dir", Config{EnableCache: true}, "dir"},
		{"negative interval", Config{ResendInterval: -time.Second}, "resendInterval"},
		{"priority", Config{ResendPriority: 2}, "resendPriority"},
		{"threshold", Config{MemoryCacheThreshold: -1}, "memoryCacheThreshold"},
		{"max", Config{MaxDiskCache: -1}, "maxDiskCache"},
		{"alias conflict", Config{MaxDiskCache: 10, MaxCacheSize: 20}, "maxCacheSize"},
		{"page", Config{BufferPageSize: -1}, "bufferPageSize"},
		{"drop policy", Config{DropPolicy: "dropNewest"}, "dropPolicy"},
		{"sync", Config{Sync: "sometimes"}, "cacheSync"},
		{"threshold bound", Config{MemoryCacheThreshold: MaxMemoryCacheThreshold}, ""},
		{"threshold huge", Config{MemoryCacheThreshold: 1000000000000}, "memoryCacheThreshold 1000000000000: must be at most 1048576"},
		{"page huge", Config{BufferPageSize: MaxBufferPageSize + 1}, "bufferPageSize 65537: must be at most 65536"},
		{"max huge", Config{MaxDiskCache: MaxMaxDiskCache + 1}, "maxDiskCache 2147483648: must be at most 2147483647"},
		{"alias huge", Config{MaxCacheSize: MaxMaxDiskCache + 1}, "maxCacheSize 2147483648"},
		{"resend interval", Config{ResendInterval: 2 * time.Hour}, "resendInterval 2h0m0s: must be at most 1h0m0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one naming %s", err, tc.want)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	c := Config{MaxCacheSize: 50}.withDefaults()
	if c.MemoryCacheThreshold != 1024 || c.MaxDiskCache != 50 || c.BufferPageSize != 256 ||
		c.DropPolicy != DropOldest || c.Sync != SyncPeriodic || c.ResendInterval != 0 {
		t.Errorf("defaults: %+v", c)
	}
	if d := (Config{}).retryDelay(); d != RetryFloor {
		t.Errorf("retry delay at interval 0 = %v", d)
	}
}

func TestWithProps(t *testing.T) {
	base := FromDefaults(config.SinkDefaults{MemoryCacheThreshold: 1024, MaxDiskCache: 1024000, BufferPageSize: 256,
		ResendInterval: config.Duration(time.Second)})
	base.Dir = "d"
	t.Run("json values", func(t *testing.T) {
		got, err := base.WithProps(map[string]any{
			"enableCache": true, "resendInterval": "250ms", "memoryCacheThreshold": float64(10),
			"resendPriority": float64(-1), "dropPolicy": "dropCurrent", "resendIndicatorField": "resent",
			"ResendDestination": "retry", "cacheSync": "always", "topic": "ignored",
		})
		if err != nil {
			t.Fatal(err)
		}
		if !got.EnableCache || got.ResendInterval != 250*time.Millisecond || got.MemoryCacheThreshold != 10 ||
			got.ResendPriority != -1 || got.DropPolicy != DropCurrent || got.ResendIndicatorField != "resent" ||
			got.ResendDestination != "retry" || got.Sync != SyncAlways || got.BufferPageSize != 256 {
			t.Errorf("config: %+v", got)
		}
	})
	t.Run("milliseconds", func(t *testing.T) {
		got, err := base.WithProps(map[string]any{"resendInterval": float64(500)})
		if err != nil || got.ResendInterval != 500*time.Millisecond {
			t.Errorf("got %v, %v", got.ResendInterval, err)
		}
	})
	for _, tc := range []struct {
		props map[string]any
		want  string
	}{
		{map[string]any{"enableCache": "yes"}, "enableCache"},
		{map[string]any{"bufferPageSize": 1.5}, "bufferPageSize"},
		{map[string]any{"resendInterval": "soon"}, "resendInterval"},
		{map[string]any{"resendInterval": "-1s"}, "resendInterval"},
		{map[string]any{"resendPriority": float64(3)}, "resendPriority"},
		{map[string]any{"memoryCacheThreshold": float64(1e12)}, "memoryCacheThreshold 1000000000000: must be at most 1048576"},
		{map[string]any{"maxDiskCache": int64(1e12)}, "maxDiskCache 1000000000000: must be at most"},
		{map[string]any{"resendInterval": float64(1e15)}, "resendInterval"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			if _, err := base.WithProps(tc.props); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("WithProps(%v) = %v, want an error naming %s", tc.props, err, tc.want)
			}
		})
	}
}
