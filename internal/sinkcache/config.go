package sinkcache

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/rekuiper/rekuiper/internal/config"
)

// DropPolicy decides what happens when the cache holds its bound of records
// and one more must be accepted.
type DropPolicy string

const (
	// DropOldest discards the oldest cached record to make room (default).
	DropOldest DropPolicy = "dropOldest"
	// DropCurrent refuses the new record; older records are kept.
	DropCurrent DropPolicy = "dropCurrent"
)

// SyncPolicy decides when appended segment data is fsynced. Every policy
// hands each record to the kernel (one write(2)) before Write returns, so an
// accepted record survives kill -9 of the process; the policy only decides
// what survives a power loss or kernel crash.
type SyncPolicy string

const (
	// SyncNone never fsyncs except on Flush and Close.
	SyncNone SyncPolicy = "none"
	// SyncPeriodic fsyncs dirty segments every SyncInterval (default policy).
	SyncPeriodic SyncPolicy = "periodic"
	// SyncAlways fsyncs after every appended record.
	SyncAlways SyncPolicy = "always"
)

// Defaults of the eKuiper `sink:` cache options and of rekuiper's additions.
const (
	DefaultMemoryCacheThreshold = 1024
	DefaultMaxDiskCache         = 1024000
	DefaultBufferPageSize       = 256
	DefaultSyncInterval         = time.Second
	DefaultDiskRetryInterval    = time.Second
	// RetryFloor is the wait between two replay attempts against a failing
	// sink when ResendInterval is 0 ("as fast as possible"): delivering as
	// fast as possible must not turn into a busy loop against a dead broker.
	RetryFloor = 100 * time.Millisecond
)

// Config holds the cache options of one sink action. The names in the
// comments are the eKuiper property names (see WithProps). Zero values of
// MemoryCacheThreshold, MaxDiskCache, BufferPageSize, DropPolicy, Sync,
// SyncInterval and DiskRetryInterval mean "use the default"; negative values
// are errors.
type Config struct {
	// EnableCache (enableCache) turns the cache on. When off, the Cache is
	// a plain pass-through: Write returns the inner sink's error unchanged.
	EnableCache bool `json:"enableCache"`
	// MemoryCacheThreshold (memoryCacheThreshold) is how many cached records
	// are also kept decoded in memory; the rest are read back from disk.
	MemoryCacheThreshold int `json:"memoryCacheThreshold"`
	// MaxDiskCache (maxDiskCache) bounds the number of records the cache
	// keeps; DropPolicy applies beyond it.
	MaxDiskCache int `json:"maxDiskCache"`
	// MaxCacheSize (maxCacheSize) is an alias of MaxDiskCache; setting both
	// to different values is an error.
	MaxCacheSize int `json:"maxCacheSize"`
	// BufferPageSize (bufferPageSize) is the number of records per segment
	// file and per read from disk.
	BufferPageSize int `json:"bufferPageSize"`
	// ResendInterval (resendInterval) is the pause between two replayed
	// records and between two attempts against a failing sink. 0 replays
	// back to back and retries a failing sink every RetryFloor.
	ResendInterval time.Duration `json:"resendInterval"`
	// CleanCacheAtStop (cleanCacheAtStop) deletes the cache files on Close.
	CleanCacheAtStop bool `json:"cleanCacheAtStop"`
	// ResendAlterQueue (resendAlterQueue) sends replays to Deps.Alternate
	// (when set) and lets live records bypass the backlog.
	ResendAlterQueue bool `json:"resendAlterQueue"`
	// ResendPriority (resendPriority): 0 cached and live records alternate,
	// 1 every cached record goes before any live one, -1 live records go
	// first and the backlog is replayed in the background.
	ResendPriority int `json:"resendPriority"`
	// ResendIndicatorField (resendIndicatorField), when set, is added with
	// the value true to every row of a replayed record.
	ResendIndicatorField string `json:"resendIndicatorField"`
	// ResendDestination (resendDestination) names where replays go (topic,
	// URL or table). The engine applies it when building Deps.Alternate; the
	// cache only reports it in Stats.
	ResendDestination string `json:"resendDestination"`
	// DropPolicy (dropPolicy) applies when MaxDiskCache records are cached.
	DropPolicy DropPolicy `json:"dropPolicy"`
	// Dir holds the segment files, conventionally data/cache/<rule>/<sink>/.
	// The cache owns the directory. Required when EnableCache is set.
	Dir string `json:"-"`
	// Sync (cacheSync) is the fsync policy of segment appends.
	Sync SyncPolicy `json:"cacheSync"`
	// SyncInterval is the fsync period of SyncPeriodic.
	SyncInterval time.Duration `json:"-"`
	// DiskRetryInterval is how often a cache whose disk failed tries the
	// disk again.
	DiskRetryInterval time.Duration `json:"-"`
}

// FromDefaults returns the Config given by the `sink:` section of
// kuiper.yaml, before any per-action property.
func FromDefaults(d config.SinkDefaults) Config {
	return Config{
		EnableCache:          d.EnableCache,
		MemoryCacheThreshold: d.MemoryCacheThreshold,
		MaxDiskCache:         d.MaxDiskCache,
		BufferPageSize:       d.BufferPageSize,
		ResendInterval:       d.ResendInterval.Std(),
		CleanCacheAtStop:     d.CleanCacheAtStop,
		ResendAlterQueue:     d.ResendAlterQueue,
		ResendPriority:       d.ResendPriority,
		ResendIndicatorField: d.ResendIndicatorField,
		ResendDestination:    d.ResendDestination,
	}
}

// WithProps returns c overridden by the cache properties of a sink action
// (eKuiper names, matched case-insensitively; other keys are ignored).
// Numbers may be int, int64 or integral float64 (JSON); durations are
// integer milliseconds or Go duration strings. The result is validated.
func (c Config) WithProps(props map[string]any) (Config, error) {
	var errs []error
	for k, v := range props {
		if err := c.set(k, v); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return c, err
	}
	return c, c.Validate()
}

func (c *Config) set(key string, v any) error {
	var err error
	switch strings.ToLower(key) {
	case "enablecache":
		c.EnableCache, err = propBool(v)
	case "memorycachethreshold":
		c.MemoryCacheThreshold, err = propInt(v)
	case "maxdiskcache":
		c.MaxDiskCache, err = propInt(v)
	case "maxcachesize":
		c.MaxCacheSize, err = propInt(v)
	case "bufferpagesize":
		c.BufferPageSize, err = propInt(v)
	case "resendinterval":
		c.ResendInterval, err = propDuration(v)
	case "cleancacheatstop":
		c.CleanCacheAtStop, err = propBool(v)
	case "resendalterqueue":
		c.ResendAlterQueue, err = propBool(v)
	case "resendpriority":
		c.ResendPriority, err = propInt(v)
	case "resendindicatorfield":
		c.ResendIndicatorField, err = propString(v)
	case "resenddestination":
		c.ResendDestination, err = propString(v)
	case "droppolicy":
		var s string
		s, err = propString(v)
		c.DropPolicy = DropPolicy(s)
	case "cachesync":
		var s string
		s, err = propString(v)
		c.Sync = SyncPolicy(s)
	default:
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	return nil
}

func propBool(v any) (bool, error) {
	switch x := v.(type) {
	case bool:
		return x, nil
	case string:
		switch strings.ToLower(x) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
	}
	return false, fmt.Errorf("want a bool, got %v", v)
}

// propInt reads an integer; Validate checks its range, so the error for a
// large value names the bound.
func propInt(v any) (int, error) {
	const maxExact = 1 << 53 // floats are exact integers up to here
	switch x := v.(type) {
	case int:
		return x, nil
	case int64:
		if x >= max(-maxExact, math.MinInt) && x <= min(maxExact, math.MaxInt) {
			return int(x), nil
		}
		return 0, fmt.Errorf("%d out of range", x)
	case float64:
		if x == math.Trunc(x) && x >= max(-maxExact, math.MinInt) && x <= min(maxExact, math.MaxInt) {
			return int(x), nil
		}
	}
	return 0, fmt.Errorf("want an integer, got %v", v)
}

func propString(v any) (string, error) {
	if s, ok := v.(string); ok {
		return s, nil
	}
	return "", fmt.Errorf("want a string, got %v", v)
}

func propDuration(v any) (time.Duration, error) {
	switch x := v.(type) {
	case string:
		d, err := config.ParseDuration(x)
		return d.Std(), err
	case time.Duration:
		return x, nil
	}
	ms, err := propInt(v)
	if err != nil {
		return 0, fmt.Errorf("want milliseconds or a duration string, got %v", v)
	}
	if int64(ms) > math.MaxInt64/int64(time.Millisecond) || int64(ms) < math.MinInt64/int64(time.Millisecond) {
		return 0, fmt.Errorf("%d ms out of range", ms)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// Upper bounds of the options that size memory, disk or time
// (docs/limits.md lists them).
const (
	// MaxMemoryCacheThreshold bounds memoryCacheThreshold (records held
	// decoded in memory).
	MaxMemoryCacheThreshold = 1 << 20
	// MaxBufferPageSize bounds bufferPageSize (records per segment file,
	// read into memory at once).
	MaxBufferPageSize = 1 << 16
	// MaxMaxDiskCache bounds maxDiskCache and maxCacheSize (records); the
	// largest int on 32-bit targets too.
	MaxMaxDiskCache = math.MaxInt32
	// MaxResendInterval bounds resendInterval.
	MaxResendInterval = time.Hour
)

// Validate reports every invalid option, each error naming it.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.MemoryCacheThreshold < 0 {
		bad("memoryCacheThreshold %d: must not be negative", c.MemoryCacheThreshold)
	}
	if c.MaxDiskCache < 0 {
		bad("maxDiskCache %d: must not be negative", c.MaxDiskCache)
	}
	if c.MaxCacheSize < 0 {
		bad("maxCacheSize %d: must not be negative", c.MaxCacheSize)
	}
	if c.MemoryCacheThreshold > MaxMemoryCacheThreshold {
		bad("memoryCacheThreshold %d: must be at most %d", c.MemoryCacheThreshold, MaxMemoryCacheThreshold)
	}
	if c.MaxDiskCache > MaxMaxDiskCache {
		bad("maxDiskCache %d: must be at most %d", c.MaxDiskCache, MaxMaxDiskCache)
	}
	if c.MaxCacheSize > MaxMaxDiskCache {
		bad("maxCacheSize %d: must be at most %d", c.MaxCacheSize, MaxMaxDiskCache)
	}
	if c.BufferPageSize > MaxBufferPageSize {
		bad("bufferPageSize %d: must be at most %d", c.BufferPageSize, MaxBufferPageSize)
	}
	if c.ResendInterval > MaxResendInterval {
		bad("resendInterval %s: must be at most %s", c.ResendInterval, MaxResendInterval)
	}
	if c.MaxDiskCache > 0 && c.MaxCacheSize > 0 && c.MaxDiskCache != c.MaxCacheSize {
		bad("maxCacheSize %d: conflicts with maxDiskCache %d (they are aliases)", c.MaxCacheSize, c.MaxDiskCache)
	}
	if c.BufferPageSize < 0 {
		bad("bufferPageSize %d: must not be negative", c.BufferPageSize)
	}
	if c.ResendInterval < 0 {
		bad("resendInterval %s: must not be negative", c.ResendInterval)
	}
	if c.ResendPriority < -1 || c.ResendPriority > 1 {
		bad("resendPriority %d: want -1, 0 or 1", c.ResendPriority)
	}
	switch c.DropPolicy {
	case "", DropOldest, DropCurrent:
	default:
		bad("dropPolicy %q: want %q or %q", c.DropPolicy, DropOldest, DropCurrent)
	}
	switch c.Sync {
	case "", SyncNone, SyncPeriodic, SyncAlways:
	default:
		bad("cacheSync %q: want %q, %q or %q", c.Sync, SyncNone, SyncPeriodic, SyncAlways)
	}
	if c.SyncInterval < 0 {
		bad("syncInterval %s: must not be negative", c.SyncInterval)
	}
	if c.DiskRetryInterval < 0 {
		bad("diskRetryInterval %s: must not be negative", c.DiskRetryInterval)
	}
	if c.EnableCache && c.Dir == "" {
		bad("dir: required when enableCache is on")
	}
	return errors.Join(errs...)
}

// withDefaults fills the zero values that mean "default".
func (c Config) withDefaults() Config {
	if c.MemoryCacheThreshold == 0 {
		c.MemoryCacheThreshold = DefaultMemoryCacheThreshold
	}
	if c.MaxDiskCache == 0 {
		c.MaxDiskCache = c.MaxCacheSize
	}
	if c.MaxDiskCache == 0 {
		c.MaxDiskCache = DefaultMaxDiskCache
	}
	c.MaxCacheSize = c.MaxDiskCache
	if c.BufferPageSize == 0 {
		c.BufferPageSize = DefaultBufferPageSize
	}
	if c.DropPolicy == "" {
		c.DropPolicy = DropOldest
	}
	if c.Sync == "" {
		c.Sync = SyncPeriodic
	}
	if c.SyncInterval == 0 {
		c.SyncInterval = DefaultSyncInterval
	}
	if c.DiskRetryInterval == 0 {
		c.DiskRetryInterval = DefaultDiskRetryInterval
	}
	return c
}

// retryDelay is the wait after a failed attempt.
func (c Config) retryDelay() time.Duration {
	if c.ResendInterval > 0 {
		return c.ResendInterval
	}
	return RetryFloor
}
